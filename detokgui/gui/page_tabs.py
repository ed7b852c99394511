"""The window's tab widgets of panels."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QEvent, Qt, Slot
from PySide6.QtWidgets import (
    QStackedWidget,
    QStyle,
    QStyleOptionTabWidgetFrame,
    QTabWidget,
    QWidget,
)

_LAYOUT_REQUEST = QEvent.Type.LayoutRequest
_UPDATE_LATER = QEvent.Type.UpdateLater


class PageTabs(QTabWidget):
    """A QTabWidget that paints a page it brings to the front once, repaints only what
    changed when a page relayouts, and whose height does not depend on its width.

    - Every widget Qt shows posts itself an UpdateLater event, and a page's layout
      requests are posted too; Qt delivered them after it had painted the new page, which
      it then painted again, in two or three rounds (a third of a tab switch's time).
      A PageTabs delivers them as soon as it has switched pages, so the first paint is the
      only one.
    - A QTabWidget answers every LayoutRequest, which any relayout inside its current page
      sends up (a label whose text changes width), by placing its tab bar and pages again
      and repainting *all of itself*: with two nested tab widgets, a new query token
      repainted the whole window two extra times. A PageTabs passes the request on to its
      parent and does that only when its tab bar, pages or corner widgets would move.
    - Qt asks a QTabWidget's stacked pages for heightForWidth as soon as one of them has a
      word-wrapped label, and its stacked layout asks every page, shown or not: each tab
      switch and each relayout of the window laid out the wrapped text of all ~30 panels
      (a fifth of the GUI thread's time on a tab switch). The pages fill the window's
      height anyway, so the tab widget reports no height-for-width."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.currentChanged.connect(self._settle_page)

    @Slot(int)
    def _settle_page(self, _index: int) -> None:
        QCoreApplication.sendPostedEvents(None, _LAYOUT_REQUEST)
        QCoreApplication.sendPostedEvents(None, _UPDATE_LATER)

    def hasHeightForWidth(self) -> bool:
        return False

    def event(self, ev: QEvent) -> bool:
        if ev.type() == _LAYOUT_REQUEST and self.isVisible() and self._placed():
            self.updateGeometry()  # the page's size hints may have changed: tell the parent
            return QWidget.event(self, ev)
        return super().event(ev)

    def _stack(self) -> QStackedWidget | None:
        return self.findChild(QStackedWidget, "qt_tabwidget_stackedwidget",
                              Qt.FindChildOption.FindDirectChildrenOnly)

    def _placed(self) -> bool:
        """Whether the tab bar, the pages and the corner widgets already have the
        geometry the style gives them."""
        opt = QStyleOptionTabWidgetFrame()
        self.initStyleOption(opt)
        style = self.style()
        se, corner = QStyle.SubElement, Qt.Corner
        parts = ((se.SE_TabWidgetTabBar, self.tabBar()),
                 (se.SE_TabWidgetTabContents, self._stack()),
                 (se.SE_TabWidgetLeftCorner, self.cornerWidget(corner.TopLeftCorner)),
                 (se.SE_TabWidgetRightCorner, self.cornerWidget(corner.TopRightCorner)))
        return all(widget is None or style.subElementRect(element, opt, self) == widget.geometry()
                   for element, widget in parts)
