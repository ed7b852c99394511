"""File > Export report…: the dialog (driven through its real widgets), the report written
on the job runner with a progress dialog, the status-bar line and the offer to open it;
Cancel writes nothing."""

import json
import re
import threading

import pytest
from conftest import close_jobs, open_window, wait_idle
from PySide6.QtCore import Qt
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QMessageBox, QPushButton

from detokgui.gui import export_report as er
from detokgui.gui.export_report import ExportReportDialog


@pytest.fixture
def win(qtbot, small_vocab_ckpt):
    w = open_window(qtbot, small_vocab_ckpt)
    yield w
    close_jobs(w)


def fill_dialog(monkeypatch, qtbot, path, figures=False):
    """Replace the dialog's exec() by filling its widgets and clicking Export."""
    seen = {}

    def exec_(self):
        seen["corpus_enabled"] = self.use_corpus.isEnabled()
        seen["b_enabled"] = self.use_b.isEnabled()
        self.file.setText(str(path))
        self.figures.setChecked(figures)
        seen["ok_enabled"] = self.ok_button.isEnabled()
        qtbot.mouseClick(self.ok_button, Qt.LeftButton)
        return self.result()

    monkeypatch.setattr(ExportReportDialog, "exec", exec_)
    return seen


def test_export_report_from_the_file_menu(win, qtbot, tmp_path, monkeypatch):
    out = tmp_path / "report.html"
    seen = fill_dialog(monkeypatch, qtbot, out)
    asked, opened, threads = [], [], []
    monkeypatch.setattr(QMessageBox, "question",
                        staticmethod(lambda *a, **k: asked.append(a) or QMessageBox.Open))
    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(opened.append))
    real_job = er.report_job

    def job(*args):
        threads.append(threading.current_thread())
        return (yield from real_job(*args))

    monkeypatch.setattr(er, "report_job", job)
    win.state.session_path = str(tmp_path / "work.detokgui-session")
    menu_titles = [a.text() for a in win.menuBar().actions()]
    file_menu = win.menuBar().actions()[menu_titles.index("&File")].menu()
    assert win.export_report_action in file_menu.actions()
    win.export_report_action.trigger()
    assert seen == {"corpus_enabled": False, "b_enabled": False, "ok_enabled": True}
    exporter = win.report_exporter
    assert exporter.running and exporter.progress.isVisible()
    qtbot.waitUntil(lambda: bool(opened), timeout=120000)
    assert threads and threads[0] is not threading.main_thread()
    assert exporter.progress is None and not exporter.running
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and 'id="dg-search"' in text
    assert "Figures left out" in text
    head = text[: text.index("</head>")]
    record = json.loads(re.search(r'id="dg-provenance">(.*?)</script>', head)[1])
    assert record["session"] == win.state.session_path
    assert record["model"]["name"] == str(win.state.layer.name)
    assert win.statusBar().currentMessage().startswith(f"Wrote the report {out}")
    assert len(asked) == 1 and "Open it in the browser?" in asked[0][2]
    assert opened[0].toLocalFile() == str(out)
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_cancel_writes_nothing(win, qtbot, tmp_path, monkeypatch, modal_dialogs):
    out = tmp_path / "report.html"
    fill_dialog(monkeypatch, qtbot, out, figures=True)
    win.export_report_action.trigger()
    exporter = win.report_exporter
    dlg = exporter.progress
    qtbot.waitUntil(lambda: "figure" in dlg.labelText(), timeout=120000)
    cancel = [b for b in dlg.findChildren(QPushButton) if b.text() == "Cancel"]
    qtbot.mouseClick(cancel[0], Qt.LeftButton)
    qtbot.waitUntil(lambda: not exporter.running, timeout=60000)
    wait_idle(qtbot, win)
    assert list(tmp_path.iterdir()) == []
    assert exporter.progress is None
    assert "nothing was written" in win.statusBar().currentMessage()
    assert not modal_dialogs  # no "open it?" question after a cancel


def test_dialog_offers_corpus_and_b_only_when_open(win, qtbot):
    dlg = ExportReportDialog(win, (), "", None)
    qtbot.addWidget(dlg)
    assert not dlg.use_corpus.isEnabled() and not dlg.use_b.isEnabled()
    dlg.file.setText("")
    assert not dlg.ok_button.isEnabled()
    dlg.file.setText("/tmp/r.html")
    req = dlg.request()
    assert req.file == "/tmp/r.html" and req.corpus == () and not req.compare
    dlg = ExportReportDialog(win, ("c.txt",), "c.txt", "demo")
    qtbot.addWidget(dlg)
    assert dlg.use_corpus.isChecked() and dlg.use_b.isChecked()
    req = dlg.request()
    assert req.corpus == ("c.txt",) and req.compare
