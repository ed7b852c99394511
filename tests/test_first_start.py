"""The window's first start without gpt2 (issue 19): the shipped demo model opens at once
with a banner that says it is the demo and why, with *Download gpt2* (only when the hub
answers) and *Open folder…*; gpt2 opens as before when it is cached; an explicit model
that fails keeps the error banner. Also: NAME@REVISION in *Open hub model…*, the resolved
commit in the status bar and title, Esc cancelling a slow load."""

from __future__ import annotations

import http.server
import threading
import time

import pytest
from conftest import close_jobs, closed_port, wait_idle
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox

from detokgui.core.model.sources.hub import HUB_EXAMPLE, hub_request
from detokgui.gui import models
from detokgui.gui.banner import ERROR, NOTICE
from detokgui.gui.main_window import MainWindow
from detokgui.gui.options import flush_settings

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def answering_hub():
    """A trivial HTTP server on 127.0.0.1: the hub endpoint answers (serves nothing)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             http.server.BaseHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def new_window(qtbot) -> MainWindow:
    flush_settings()
    QSettings().clear()
    win = MainWindow(device="cpu")
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    return win


def first_start(qtbot) -> MainWindow:
    """A window started as `detokgui` without --model, after everything it started ended.
    `win.demo_after` is how long it took to ask for the demo (None when it was not)."""
    win = new_window(qtbot)
    started = time.perf_counter()
    win.open_default_model()
    win.demo_after = None

    def demo_asked():
        if win.loading_name == "demo" and win.demo_after is None:
            win.demo_after = time.perf_counter() - started
        return win.demo_after is not None or (win.state.layer is not None
                                              and not win.jobs.busy)

    qtbot.waitUntil(demo_asked, timeout=60000)
    qtbot.waitUntil(lambda: win.state.layer is not None and not win.jobs.busy, timeout=60000)
    wait_idle(qtbot, win)
    return win


def assert_demo_notice(win, *why: str) -> None:
    assert win.state.layer.name.startswith("demo model")
    assert win.windowTitle().startswith("detokgui — demo model")
    assert win.banner.isVisible() and win.banner.kind == NOTICE
    text = win.banner.text()
    assert "demo model" in text and "not GPT-2" in text and "trained for detokgui" in text
    for part in why:
        assert part in text, (part, text)
    assert "Checking" not in text  # the probe's answer is in
    assert win.load_error is None


def test_offline_first_start_opens_the_demo_with_open_folder(
        qtbot, monkeypatch, empty_hf_cache, tiny_ckpt):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    win = first_start(qtbot)
    try:
        assert win.demo_after < 5  # at once: no network, no minute of retries
        assert_demo_notice(win, "gpt2 is not in the local Hugging Face cache",
                           "HF_HUB_OFFLINE is set")
        buttons = win.banner.buttons()
        assert list(buttons) == ["Open folder…"]  # no Download: the hub is not asked
        assert buttons["Open folder…"].toolTip()
        asked = []
        monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(
            lambda *a, **k: asked.append(a) or str(tiny_ckpt)))
        qtbot.mouseClick(buttons["Open folder…"], Qt.LeftButton)
        qtbot.waitUntil(lambda: win.state.layer.name == str(tiny_ckpt), timeout=60000)
        assert len(asked) == 1
        assert not win.banner.isVisible()
        assert win.recent_models()[:2] == [str(tiny_ckpt), "demo"]
    finally:
        close_jobs(win)


def test_unreachable_hub_first_start_opens_the_demo(qtbot, monkeypatch, empty_hf_cache):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    endpoint = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    win = first_start(qtbot)
    try:
        assert win.demo_after < 5
        assert_demo_notice(win, "gpt2 is not in the local Hugging Face cache",
                           f"the hub ({endpoint}) cannot be reached")
        assert list(win.banner.buttons()) == ["Open folder…"]
    finally:
        close_jobs(win)


def test_reachable_hub_offers_download_gpt2(qtbot, monkeypatch, empty_hf_cache, answering_hub,
                                            tiny_ckpt):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", answering_hub)
    real = models.load_layer
    asked = []

    def load(name, device, report):  # "gpt2" from the tiny checkpoint: no real hub here
        asked.append(name)
        return real(str(tiny_ckpt) if name == "gpt2" else name, device, report)

    monkeypatch.setattr(models, "load_layer", load)
    probed_on = []
    real_probe = models.probe_hub
    monkeypatch.setattr(models, "probe_hub",
                        lambda: probed_on.append(threading.current_thread()) or real_probe())
    win = first_start(qtbot)
    try:
        assert probed_on and threading.main_thread() not in probed_on  # never on the GUI
        assert asked == ["demo"]  # gpt2 was not tried: it is not cached
        assert_demo_notice(win, "gpt2 has not been downloaded yet")
        buttons = win.banner.buttons()
        assert list(buttons) == ["Download gpt2", "Open folder…"]
        assert "hub" in buttons["Download gpt2"].toolTip()
        qtbot.mouseClick(buttons["Download gpt2"], Qt.LeftButton)
        qtbot.waitUntil(lambda: win.state.layer.name == str(tiny_ckpt), timeout=60000)
        assert asked == ["demo", "gpt2"]
        assert win.recent_models()[0] == "gpt2"
        assert not win.banner.isVisible()
    finally:
        close_jobs(win)


def cache_as_hub_model(cache, repo: str, folder, files=None) -> None:
    """Put a checkpoint folder into the Hugging Face cache layout as hub model `repo`."""
    root = cache / f"models--{repo.replace('/', '--')}"
    snap = root / "snapshots" / SHA
    snap.mkdir(parents=True)
    for f in folder.iterdir():
        if files is None or f.name in files:
            (snap / f.name).write_bytes(f.read_bytes())
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(SHA)


def test_cached_gpt2_opens_as_before(qtbot, monkeypatch, empty_hf_cache, tiny_ckpt):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache_as_hub_model(empty_hf_cache, "gpt2", tiny_ckpt)
    win = first_start(qtbot)
    try:
        assert win.state.layer.name == "gpt2" and win.demo_after is None
        assert win.state.layer.n_heads == 4  # the tiny checkpoint under gpt2's name
        assert not win.banner.isVisible()
        assert win.recent_models() == ["gpt2"]
    finally:
        close_jobs(win)


def test_cached_gpt2_that_cannot_load_falls_back_to_the_demo(qtbot, monkeypatch,
                                                             empty_hf_cache, tiny_ckpt):
    """The cache holds gpt2's config but not its weights, and the hub is off: the demo,
    with the loader's reason."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache_as_hub_model(empty_hf_cache, "gpt2", tiny_ckpt, files={"config.json"})
    win = first_start(qtbot)
    try:
        assert_demo_notice(win, "gpt2 could not be loaded:", "not its weights")
        assert list(win.banner.buttons()) == ["Open folder…"]
    finally:
        close_jobs(win)


def test_explicit_model_that_fails_keeps_the_error(qtbot, monkeypatch, empty_hf_cache):
    from detokgui.gui.launch import build_parser, open_models

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    win = new_window(qtbot)
    try:
        open_models(win, build_parser().parse_args(["--model", "gpt2"]))  # no substitution
        qtbot.waitUntil(lambda: win.load_error is not None, timeout=30000)
        wait_idle(qtbot, win)
        assert win.state.layer is None
        assert win.banner.isVisible() and win.banner.kind == ERROR
        assert "could not be loaded" in win.banner.text()
        assert "not in the local Hugging Face cache" in win.banner.text()
        assert not win.banner.buttons()
    finally:
        close_jobs(win)


# --------------------------------------------------------------------------- hub dialog


@pytest.mark.parametrize("typed, name", [
    ("gpt2", "gpt2"),
    ("  gpt2-xl ", "gpt2-xl"),
    ("gpt2@step1000", "gpt2@step1000"),
    (" someone/model @ checkpoint-300000 ", "someone/model@checkpoint-300000"),
    ("gpt2@" + SHA, "gpt2@" + SHA),
])
def test_hub_request_reads_name_and_revision(typed, name):
    assert hub_request(typed) == (name, None)


@pytest.mark.parametrize("typed", ["gpt2@", "@main", "gpt 2", "gpt2@my branch"])
def test_hub_request_refuses_malformed_names(typed):
    assert hub_request(typed)[1]


def fake_hub_layer(tiny_ckpt):
    """A `load_layer` that loads the tiny checkpoint as the hub would: named as typed,
    with the resolved commit as `revision`."""
    real = models.load_layer

    def load(name, device, report):
        layer = real(str(tiny_ckpt), device, report)
        layer.name = name
        layer.revision = SHA
        return layer

    return load


def test_hub_dialog_loads_name_at_revision(qtbot, monkeypatch, tiny_ckpt):
    monkeypatch.setattr(models, "load_layer", fake_hub_layer(tiny_ckpt))
    win = new_window(qtbot)
    answers = [("gpt2@", True), (" gpt2 @ step1000 ", True)]
    prompts, warnings = [], []
    monkeypatch.setattr(QInputDialog, "getText", staticmethod(
        lambda parent, title, label, **kw: prompts.append((label, kw)) or answers.pop(0)))
    monkeypatch.setattr(QMessageBox, "warning", staticmethod(
        lambda parent, title, text: warnings.append(text)))
    try:
        win.ask_hub_model()
        assert "@" in prompts[0][0] and HUB_EXAMPLE in prompts[0][0]
        assert prompts[1][1]["text"] == "gpt2@"  # asked again with what was typed
        assert len(warnings) == 1 and "revision" in warnings[0]
        qtbot.waitUntil(lambda: win.state.layer is not None, timeout=60000)
        wait_idle(qtbot, win)
        layer = win.state.layer
        assert layer.name == "gpt2@step1000"
        assert win.recent_models() == ["gpt2@step1000"]
        assert win.recent_menu.actions()[0].text().startswith("gpt2@step1000")
        assert "gpt2@step1000 (commit 0123456789)" in win.model_label.text()
        assert SHA[:11] not in win.model_label.text()
        assert SHA in win.model_label.toolTip()
        assert win.windowTitle().endswith("commit 0123456789")
        answers.append(("other", False))
        win.ask_hub_model()
        assert prompts[-1][1]["text"] == "gpt2@step1000"  # remembered with its revision
    finally:
        close_jobs(win)


# --------------------------------------------------------------------------- cancel


def test_esc_cancels_a_slow_load_and_keeps_the_model(window, qtbot, monkeypatch):
    shown = window.state.layer
    reports = []

    def slow(name, device, report):  # a download that only ends when cancelled
        done = 0
        while True:
            done += 1
            report(0.01 * (done % 100), f"Downloading {name}: {done} MB of 6,400 MB")
            reports.append(done)
            time.sleep(0.02)

    monkeypatch.setattr(models, "load_layer", slow)
    window.load_model("gpt2-xl")
    qtbot.waitUntil(lambda: len(reports) > 5 and window.cancel_button.isVisible(), timeout=10000)
    assert "Downloading gpt2-xl" in window.statusBar().currentMessage()
    assert window.model_label.text() == "loading gpt2-xl…"  # room for the progress message
    assert f"Showing {shown.name} until" in window.model_label.toolTip()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    pressed = time.perf_counter()
    qtbot.keyClick(window, Qt.Key_Escape)
    qtbot.waitUntil(lambda: not window.jobs.busy, timeout=5000)
    assert time.perf_counter() - pressed < 1.0
    assert window.state.layer is shown
    assert window.loading_name is None and window.load_error is None
    assert window.banner.isVisible() and window.banner.kind == NOTICE
    assert "gpt2-xl</b> was cancelled" in window.banner.text()
    assert shown.name in window.banner.text() and "still open" in window.banner.text()
    assert "loading" not in window.model_label.text()
    n = len(reports)
    qtbot.wait(100)
    assert len(reports) == n  # the job stopped
    assert list(window.banner.buttons()) == ["Try again"]
    window.state.set_head(2)  # the model shown still computes
    wait_idle(qtbot, window)
    assert window.state.head == 2 and not window.jobs.busy


def test_cancelled_first_load_offers_the_demo(qtbot, monkeypatch):
    real = models.load_layer

    def slow(name, device, report):
        while name != "demo":
            report(0.1, f"Downloading {name}")
            time.sleep(0.02)
        return real(name, device, report)

    monkeypatch.setattr(models, "load_layer", slow)
    win = new_window(qtbot)
    try:
        win.load_model("gpt2-xl")
        qtbot.waitUntil(win.cancel_button.isVisible, timeout=10000)
        qtbot.mouseClick(win.cancel_button, Qt.LeftButton)
        qtbot.waitUntil(lambda: not win.jobs.busy, timeout=5000)
        assert win.state.layer is None
        assert "no model is open" in win.banner.text()
        buttons = win.banner.buttons()
        assert list(buttons) == ["Try again", "Open the demo model", "Open folder…"]
        qtbot.mouseClick(buttons["Open the demo model"], Qt.LeftButton)
        qtbot.waitUntil(lambda: win.state.layer is not None, timeout=60000)
        assert win.state.layer.name.startswith("demo model")
        assert not win.banner.isVisible()
    finally:
        close_jobs(win)

