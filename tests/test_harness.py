"""The test harness itself: modal dialogs never block, settings are isolated."""

from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget


def test_modal_dialogs_are_recorded_not_shown(qtbot, modal_dialogs):
    w = QWidget()
    qtbot.addWidget(w)
    assert QMessageBox.warning(w, "t", "x") == QMessageBox.StandardButton.Cancel
    assert QFileDialog.getSaveFileName(w, "t") == ("", "")
    assert QMessageBox(QMessageBox.Warning, "t", "x").exec() == 0
    assert [n for n, _ in modal_dialogs] == [
        "QMessageBox.warning", "QFileDialog.getSaveFileName", "QMessageBox.exec"]
    modal_dialogs.clear()  # expected here; any left over fails the test at teardown


def test_export_without_data_says_so_without_a_dialog(qtbot):
    from PySide6.QtWidgets import QMainWindow

    from detokgui.gui.plots import PlotFrame

    win = QMainWindow()
    qtbot.addWidget(win)
    frame = PlotFrame("Empty plot", lambda: None)
    win.setCentralWidget(frame)
    frame.export_dialog("png")
    assert "nothing to export" in win.statusBar().currentMessage()
