"""The window's tab widgets of panels."""

from __future__ import annotations

from PySide6.QtWidgets import QTabWidget


class PageTabs(QTabWidget):
    """A QTabWidget whose height does not depend on its width.

    Qt asks a QTabWidget's stacked pages for heightForWidth as soon as one of them has a
    word-wrapped label, and its stacked layout asks every page, shown or not: each tab
    switch and each relayout of the window laid out the wrapped text of all ~30 panels
    (a fifth of the GUI thread's time on a tab switch). The pages fill the window's
    height anyway, so the tab widget reports no height-for-width."""

    def hasHeightForWidth(self) -> bool:
        return False
