"""The Qt application. Panels talk only through `state.AppState`."""

from detokgui.gui.pyside_fixes import make_singletons_immortal

make_singletons_immortal()  # before any Qt call: PySide6 6.12 leaks references to them
