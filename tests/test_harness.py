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


def test_subprocesses_get_an_isolated_home(isolated_env, tiny_ckpt, tmp_path):
    """`detokgui` run by the tests writes its settings (Model > Recent) under the isolated
    HOME/XDG folders, never the user's."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    for var in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "DETOKGUI_CACHE_DIR"):
        assert Path(isolated_env[var]).is_relative_to(tmp_path.parent.parent), var
        assert isolated_env[var] != os.environ.get(var)
    r = subprocess.run([sys.executable, "-m", "detokgui", "--model", str(tiny_ckpt), "--view",
                        "topk", "--screenshot", str(tmp_path / "s.png")], check=False,
                       capture_output=True, text=True, timeout=300, env=isolated_env)
    assert r.returncode == 0, r.stderr
    written = [p for p in Path(isolated_env["XDG_CONFIG_HOME"]).rglob("*") if p.is_file()]
    assert any(str(tiny_ckpt) in p.read_text(errors="replace") for p in written), written


def test_help_and_readme_list_every_view(qtbot):
    from pathlib import Path

    from detokgui.gui.launch import build_parser
    from detokgui.gui.main_window import MainWindow

    win = MainWindow(model=None)
    qtbot.addWidget(win)
    names = win.view_names()
    assert "tokens" in names
    text = " ".join(build_parser().format_help().split())
    app_page = (Path(__file__).parent.parent / "docs" / "app.md").read_text(encoding="utf-8")
    view_sentence = app_page[app_page.index("draws one view"):][:400]
    for name in names:
        assert name in text, name
        assert f"`{name}`" in view_sentence, name
