"""Sessions in the window (issue 45, point 2): File > Save session…, the window closed, the
session opened in a new window restores the same state (the models, the A/B pair, the
selection, the corpus, the view, every panel's options) and draws the same view; what
cannot be restored is named in the banner and the rest restored; a damaged file changes
nothing; a stored version-1 file opens."""

import html
from pathlib import Path

import numpy as np
import pytest
from conftest import SAMPLE_CORPUS, close_jobs, wait_idle
from PySide6.QtCore import QSettings
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QFileDialog, QMessageBox

from detokgui.core.base.provenance import read_provenance
from detokgui.core.base.session import read_session
from detokgui.core.model.conventions import SigmaChoice
from detokgui.gui.session import open_session, session_of

pytestmark = pytest.mark.gui

STORED_V1 = Path(__file__).parent / "data" / "session-v1.json"


def new_window(qtbot):
    from detokgui.gui.main_window import MainWindow
    from detokgui.gui.options import flush_settings

    flush_settings()
    QSettings().clear()
    win = MainWindow(model=None, device="cpu")
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    return win


def restore(qtbot, win, path, timeout=120000):
    done = []
    restorer = open_session(win, path)
    assert restorer is not None
    restorer.finished.connect(done.append)
    qtbot.waitUntil(lambda: bool(done), timeout=timeout)
    wait_idle(qtbot, win, timeout=timeout)
    return restorer.problems


def shot(qtbot, win, view, path):
    """The view's panel as drawn, saved as PNG (for a person to look at) and returned."""
    win.show_view(view)
    panel = win.panel(view)
    qtbot.waitUntil(panel.settled, timeout=60000)
    wait_idle(qtbot, win)
    qtbot.wait(200)
    image = panel.grab().toImage()
    path.parent.mkdir(parents=True, exist_ok=True)
    assert image.save(str(path))
    return image


def pixels(image: QImage) -> np.ndarray:
    image = image.convertToFormat(QImage.Format_RGBA8888)
    return np.frombuffer(image.constBits(), np.uint8).reshape(
        image.height(), image.bytesPerLine())[:, : image.width() * 4].astype(int)


def test_save_close_open_restores_the_same_state(qtbot, tiny_ckpt, tmp_path, monkeypatch):
    win = new_window(qtbot)
    win.load_model(str(tiny_ckpt))
    qtbot.waitUntil(lambda: win.state.layer is not None, timeout=60000)
    win.compare_with(str(tiny_ckpt))
    qtbot.waitUntil(lambda: win.state.matching is not None, timeout=120000)
    win.corpus.open([str(SAMPLE_CORPUS)])
    qtbot.waitUntil(lambda: bool(win.state.corpus), timeout=60000)
    s = win.state
    s.set_head_pair(2, 1)
    s.set_query_token(4731)
    s.set_key_token(2688)
    s.set_query_position(40)
    win.panel("tokens").set_text("the cat sat")
    qtbot.waitUntil(lambda: s.token_set == [1169, 3797, 3332], timeout=30000)
    s.set_sigma(SigmaChoice("at", (3, 4)))
    win.panel("topk").options.set(k=7, direction="queries")
    win.panel("bias").options.set(raw=True, window=True, window_size=24, show_tpp=False)
    win.show_view("bias")
    before = shot(qtbot, win, "bias", tmp_path / "before.png")
    path = tmp_path / "work.detokgui.json"
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a, **k: (str(path), "")))
    save = next(a for a in win.findChildren(type(win.menuBar().actions()[0]))
                if a.text() == "Save session…")
    assert save.shortcut().toString() == "Ctrl+S"
    save.trigger()
    assert path.exists() and s.session_path == str(path)
    saved = session_of(win)
    assert read_session(path)["selection"] == saved["selection"]
    assert saved["models"]["a"]["name"] == str(tiny_ckpt)
    assert saved["models"]["b"]["name"] == str(tiny_ckpt)
    assert saved["selection"]["head_b"] == 1 and saved["view"] == "bias"
    assert saved["corpus"]["paths"] == ["sample"]  # the same on another installation
    win.close()
    close_jobs(win)

    win2 = new_window(qtbot)
    problems = restore(qtbot, win2, path)
    assert problems == []
    qtbot.waitUntil(lambda: win2.state.matching is not None, timeout=120000)
    wait_idle(qtbot, win2)
    again = session_of(win2)
    assert again["selection"] == saved["selection"]
    assert again == saved
    s2 = win2.state
    assert (s2.head, s2.head_b, s2.query_token, s2.key_token, s2.query_position,
            s2.token_set, s2.sigma) == (2, 1, 4731, 2688, 40, [1169, 3797, 3332],
                                        SigmaChoice("at", (3, 4)))
    assert list(s2.corpus) == [str(SAMPLE_CORPUS)]
    assert win2.current_panel().view_name == "bias"
    assert s2.session_path == str(path)
    after = shot(qtbot, win2, "bias", tmp_path / "after.png")
    assert before.size() == after.size()
    diff = np.abs(pixels(before) - pixels(after))
    assert (diff > 16).mean() < 0.001, "the restored view draws differently"
    # exports made in the restored session name it
    frame = win2.panel("bias").plot_frames()[0]
    frame.export(tmp_path / "bias.csv")
    assert read_provenance(tmp_path / "bias.csv")["session"] == str(path)
    close_jobs(win2)


def test_what_cannot_be_restored_is_named_and_the_rest_restored(qtbot, window, tmp_path):
    import json

    data = json.loads(STORED_V1.read_text())
    data["models"]["a"] = {"name": str(tmp_path / "no-such-model"), "revision": None}
    data["corpus"] = {"paths": [str(tmp_path / "moved.txt")], "text_column": "text"}
    data["panels"]["topk"] = {"k": 9, "colour": "mauve", "direction": "sideways"}
    data["panels"]["a-view-of-the-future"] = {"x": 1}
    data["view"] = "another-view-of-the-future"
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    layer = window.state.layer
    problems = restore(qtbot, window, path)
    text = html.unescape(window.banner.text())
    assert window.banner.isVisible() and "restored, except" in text
    assert len(problems) == 5, problems  # the two of Top-k in one line
    for part in ("no-such-model", "moved.txt moved or was deleted", "colour (unknown)",
                 "direction = 'sideways' (not a value it takes)", "a-view-of-the-future",
                 "another-view-of-the-future"):
        assert part in text, part
    assert window.panel("topk").options.value.k == 9  # the rest is restored
    assert window.state.layer is layer  # the model shown stays


def test_a_model_b_that_does_not_open_is_named_in_the_banner(qtbot, window, tiny_ckpt,
                                                             tmp_path):
    import json

    data = json.loads(STORED_V1.read_text())
    data["models"] = {"a": {"name": str(tiny_ckpt), "revision": None},
                      "b": {"name": str(tmp_path / "gone-b"), "revision": None}}
    data["selection"]["head"] = 1
    path = tmp_path / "b.json"
    path.write_text(json.dumps(data))
    problems = restore(qtbot, window, path)
    assert len(problems) == 1 and problems[0].startswith(f"model B, {tmp_path / 'gone-b'}")
    assert "restored, except" in window.banner.text() and "gone-b" in window.banner.text()
    assert window.state.head == 1 and window.state.layer_b is None


def test_a_damaged_session_file_changes_nothing(qtbot, window, tmp_path, monkeypatch):
    path = tmp_path / "damaged.json"
    path.write_text(STORED_V1.read_text()[:200])
    warned = []
    monkeypatch.setattr(QMessageBox, "warning",
                        staticmethod(lambda parent, title, text: warned.append(text)))
    before = session_of(window)
    assert open_session(window, path) is None
    assert len(warned) == 1 and "damaged JSON" in warned[0] and "Nothing was changed" in warned[0]
    assert session_of(window) == before and window.state.session_path is None


def test_stored_version_1_session_opens(qtbot):
    win = new_window(qtbot)
    problems = restore(qtbot, win, STORED_V1)
    assert problems == []
    s = win.state
    assert s.layer.n_heads == 8 and win.models.opened_a == "demo"
    assert (s.head, s.query_token, s.key_token, s.query_position) == (7, 4731, 2688, 60)
    assert s.sigma == SigmaChoice("at", (3, 5))
    qtbot.waitUntil(lambda: s.token_set == [464, 3797, 3332], timeout=30000)  # its text
    assert win.panel("tokens").current_text == "The cat sat"
    assert win.panel("topk").options.value.k == 7
    assert win.current_panel().view_name == "bias"
    close_jobs(win)


def test_session_menu_shortcuts_are_free(window):
    from PySide6.QtGui import QAction

    keys = [a.shortcut().toString() for a in window.findChildren(QAction)
            if not a.shortcut().isEmpty()]
    assert "Ctrl+S" in keys and "Ctrl+Shift+R" in keys  # Ctrl+O opens a model folder
    assert len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)
