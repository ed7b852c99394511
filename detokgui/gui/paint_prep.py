"""Plots that are painted once per change: pyqtgraph's deferred updates done before the
window paints, not during it."""

from __future__ import annotations

import weakref

import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt
from shiboken6 import isValid

_UPDATE_REQUEST = QEvent.Type.UpdateRequest
_META_CALL = QEvent.Type.MetaCall


class PaintPreparer(QObject):
    """Before its window paints, lets the shown pyqtgraph views do what pyqtgraph defers
    to their paint, and hands the resulting scene changes in.

    A pyqtgraph view computes its auto-range and view matrix at the start of its own paint
    (`prepareForPaint`). That moves items, and the scene reports the change later, as a
    queued call, so every plot was painted twice per change: once, and once more for the
    change its first paint made. Run on the window's update request, before anything is
    painted, the change is part of the one paint."""

    def __init__(self, window):
        super().__init__(window)
        self.views: weakref.WeakSet[pg.GraphicsView] = weakref.WeakSet()
        window.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:
        if event.type() == _UPDATE_REQUEST:
            for view in list(self.views):
                if isValid(view) and view.isVisible() and view.scene() is not None:
                    scene = view.scene()
                    scene.prepareForPaint()
                    QCoreApplication.sendPostedEvents(scene, _META_CALL)
        return False


def prepare_before_paint(view: pg.GraphicsView) -> None:
    """Prepare `view` before each paint of the window it is shown in (call it when it is
    shown: a view moved to another window is then prepared there)."""
    window = view.window()
    preparer = window.findChild(PaintPreparer, "", Qt.FindChildOption.FindDirectChildrenOnly)
    if preparer is None:
        preparer = PaintPreparer(window)
    preparer.views.add(view)
