"""The panel framework through the real window: hidden panels compute nothing, every
computation of every panel leaves "computing…" when cancelled or failed, a model switch
frees the old model, options are remembered by one helper (never while computing)."""

import gc
import threading
import weakref

import pytest
from conftest import wait_idle
from PySide6.QtCore import QCoreApplication, QEvent, QObject, QSettings, Slot

from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import Progress
from detokgui.core.model.sources.demo import write_random_checkpoint
from detokgui.gui.panels.base import BUSY_TEXT

KOREA, NORTH = 4969, 2258

#: (view, channel) of every computation of every panel
CHANNELS = [
    ("tokens", "vocab"), ("tokens", "text"), ("tokens", "search"),
    ("topk", ""), ("heatmap", ""), ("bias", ""), ("pattern", ""), ("pattern", "classes"),
    ("slopes", ""), ("slopes", "curve"), ("position-stats", ""), ("neurons", ""),
    ("neurons", "overlap"), ("sentence", ""), ("empirical", ""), ("kl", ""), ("sinks", ""),
    ("contextual", ""), ("contextual", "tokens"), ("contextual", "validation"), ("ov", ""),
    ("layer1", ""),
    ("headstats", ""), ("headstats", "matrix"), ("auroc", ""), ("auroc", "roc"),
    ("frequency", ""), ("neighbours", ""), ("neighbours", "analogy"),
    ("compare-topk", ""), ("compare-topk", "grid"), ("compare-pattern", ""), ("compare-classes", ""), ("compare-stats", ""),
]
#: views that compare A with a model B: `show` opens B (the same checkpoint) first; the
#: head matching's view computes nothing of its own (the window matches the heads)
COMPARE_VIEWS = {"compare-topk", "compare-pattern", "compare-classes", "compare-stats"}
#: views without channels: their work needs no main model and starts from a button (the
#: training series; its Compute/Cancel cycle is tested in test_series)
BUTTON_VIEWS = {"series"}
#: views that read the corpus: `show` opens the sample corpus and keeps their work tiny
CORPUS_VIEWS = {"empirical", "kl", "contextual", "auroc", "frequency"}
#: whole-vocabulary views: checked on the 400-token model (`vocab_window`), where a pass
#: over all V x V scores takes milliseconds, not a minute
VOCAB_VIEWS = {"headstats", "auroc", "frequency", "neighbours"}


class Submitted(QObject):
    """The keys of the jobs the runner is given."""

    def __init__(self, jobs):
        super().__init__()
        self.keys: list[str] = []
        jobs.submitted.connect(self.add)

    @Slot(str)
    def add(self, key):
        self.keys.append(key)


def test_every_panel_is_listed(window):
    listed = {v for v, _ in CHANNELS}
    assert listed | {"matching"} | BUTTON_VIEWS == set(window.view_names())
    assert not window.panel("matching").channels
    for view in listed | BUTTON_VIEWS:
        assert set(window.panel(view).channels) == {c for v, c in CHANNELS if v == view}


def test_hidden_panels_compute_nothing_until_shown(window, qtbot):
    win = window
    topk = win.panel("topk")
    assert topk.isVisible() and "Head 0" in topk.detail_label.text()
    win.show_view("neurons")
    wait_idle(qtbot, win)
    seen = Submitted(win.jobs)
    win.state.set_query_token(NORTH)
    win.state.set_key_token(KOREA)
    win.state.set_head(2)
    win.state.set_query_position(77)
    wait_idle(qtbot, win)
    assert seen.keys == []  # PE neurons depends on none of these; the others are hidden
    for view in ("topk", "heatmap", "pattern", "slopes", "bias", "position-stats"):
        assert not win.panel(view).settled()  # out of date, waiting to be shown
    assert "Head 0" in topk.detail_label.text()  # not even redrawn for the new head
    win.show_view("topk")
    qtbot.waitUntil(lambda: seen.keys == ["topk"])
    wait_idle(qtbot, win)
    assert topk.result.anchor == NORTH and topk.settled()
    assert "Head 2" in topk.detail_label.text()
    win.show_view("pattern")
    wait_idle(qtbot, win)
    pattern = win.panel("pattern")
    assert (pattern.result.token, pattern.result.n) == (NORTH, 77)
    assert "topk" not in seen.keys[1:]  # hiding it again computes nothing more


class PaintsAndJobs(QObject):
    """In order: "paint" when `widget` is first painted, and the key of every job given
    to `jobs`."""

    def __init__(self, widget, jobs):
        super().__init__()
        self.order: list[str] = []
        widget.installEventFilter(self)
        jobs.submitted.connect(self.submitted)

    def eventFilter(self, obj, event):
        if event.type() == QEvent.Paint and "paint" not in self.order:
            self.order.append("paint")
        return False

    @Slot(str)
    def submitted(self, key):
        self.order.append(key)


def test_a_shown_panel_computes_after_its_first_paint(window, qtbot):
    """A page brought to the front is painted first and computes after: a worker started
    in the show would hold the GIL and a core during that paint."""
    win = window
    win.show_view("neurons")
    wait_idle(qtbot, win)
    token = NORTH if win.state.query_token != NORTH else KOREA
    win.state.set_query_token(token)  # the top-k view is out of date, and hidden
    topk = win.panel("topk")
    seen = PaintsAndJobs(topk.detail_label, win.jobs)
    win.show_view("topk")
    assert seen.order == []  # nothing computed in the show itself
    qtbot.waitUntil(lambda: "topk" in seen.order)
    assert seen.order.index("paint") < seen.order.index("topk")
    wait_idle(qtbot, win)
    assert topk.settled() and topk.result.anchor == token


def show(win, qtbot, view):
    if view in CORPUS_VIEWS:
        from conftest import SAMPLE_CORPUS

        win.state.set_corpus([str(SAMPLE_CORPUS)])
        if hasattr(win.panel(view).options.value, "max_texts"):
            win.panel(view).options.set(max_texts=2)
    if view == "neighbours":  # an analogy of single tokens of the 400-token vocabulary
        win.panel(view).options.set(a=" the", b=" and", c=" of")
    if view != "tokens":
        win.show_view(view)
    wait_idle(qtbot, win)
    panel = win.panel(view)
    if view == "tokens":
        panel.search.setText("Korea")
        qtbot.waitUntil(lambda: panel.settled(), timeout=10000)
    return panel


@pytest.mark.parametrize("view,name", CHANNELS)
def test_cancel_and_failure_never_leave_computing(request, qtbot, view, name):
    win = request.getfixturevalue("vocab_window" if view in VOCAB_VIEWS else "window")
    if view in COMPARE_VIEWS:
        win.compare_with(str(request.getfixturevalue("tiny_ckpt")))
        qtbot.waitUntil(lambda: win.state.matching is not None, timeout=120000)
    panel = show(win, qtbot, view)
    ch = panel.channel(name)
    real = ch.compute
    gate = threading.Event()

    def slow(layer, request):
        while not gate.wait(0.005):
            yield Progress(0.5, "injected slow computation")

    ch.compute = slow
    try:
        ch.status.linkActivated.emit(f"retry:{name}")  # what "compute again" does
        qtbot.waitUntil(lambda: win.cancel_button.isVisible(), timeout=5000)
        assert ch.status.text() == BUSY_TEXT
        win.cancel_button.click()
        wait_idle(qtbot, win)
        assert BUSY_TEXT not in ch.status.text() and "cancelled" in ch.status.text()
        assert f"href='retry:{name}'" in ch.status.text()  # a "compute again" link
        assert ch.pending is None

        def boom(layer, request):
            raise InputError("injected failure")

        ch.compute = boom
        ch.status.linkActivated.emit(f"retry:{name}")
        wait_idle(qtbot, win)
        assert BUSY_TEXT not in ch.status.text() and "injected failure" in ch.status.text()
        assert "injected failure" in win.statusBar().currentMessage()
    finally:
        gate.set()
        ch.compute = real
    ch.status.linkActivated.emit(f"retry:{name}")  # computes again, with the real function
    wait_idle(qtbot, win)
    assert ch.pending is None and ch.shown == ch.request() and ch.result is not None
    assert BUSY_TEXT not in ch.status.text() and "cancelled" not in ch.status.text()


def test_model_switch_frees_the_old_model(window, qtbot, tmp_path):
    """(The vocabulary views: test_gui_vocab, on models with a small vocabulary.)"""
    win = window
    for view in win.view_names():
        if view != "tokens" and view not in VOCAB_VIEWS:
            win.show_view(view)
            wait_idle(qtbot, win)
    old = weakref.ref(win.state.layer)
    other = write_random_checkpoint(tmp_path / "other", seed=5)
    win.load_model(str(other))
    qtbot.waitUntil(lambda: win.state.layer is not old(), timeout=60000)
    wait_idle(qtbot, win)
    for view in win.view_names():
        if view != "tokens" and view not in VOCAB_VIEWS:
            win.show_view(view)
            wait_idle(qtbot, win)
    QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)
    gc.collect()
    assert old() is None


def test_options_remembered_by_one_helper_and_not_while_computing(window, qtbot, monkeypatch):
    from detokgui.gui import options
    from detokgui.gui.main_window import MainWindow

    win = window
    topk = win.panel("topk")
    win.show_view("topk")
    topk.options.widget("k").setValue(7)
    direction = topk.options.widget("direction")
    direction.setCurrentIndex(direction.findData("queries"))
    options.flush_settings()  # written a few seconds after the change, or now
    assert QSettings().value("topk/k", type=int) == 7
    assert topk.options.value.k == 7 and topk.options.value.direction == "queries"
    writes = []
    monkeypatch.setattr(options, "remember", lambda key, value: writes.append(key))
    for token in (NORTH, KOREA, NORTH + 1):  # computations only
        win.state.set_key_token(token)
        wait_idle(qtbot, win)
    for view in ("heatmap", "bias", "neurons"):
        win.show_view(view)
        wait_idle(qtbot, win)
    assert writes == []
    monkeypatch.undo()
    again = MainWindow(model=None, device="cpu")
    qtbot.addWidget(again)
    t2 = again.panel("topk")
    assert t2.options.widget("k").value() == 7
    assert t2.options.widget("direction").currentData() == "queries"
    assert t2.options.value == topk.options.value


def test_the_bias_panel_leaves_the_query_position_alone(qtbot, tiny_layer):
    from detokgui.gui.jobs import JobRunner
    from detokgui.gui.panels.positional_bias import PositionalBiasPanel
    from detokgui.gui.state import AppState

    state, jobs = AppState(), JobRunner()
    panel = PositionalBiasPanel(state, jobs)
    qtbot.addWidget(panel)
    panel.show()
    state.set_model(tiny_layer)
    qtbot.waitUntil(lambda: panel.settled() and panel.result is not None, timeout=10000)
    assert state.query_position == 0 and panel.result.i == 0
    jobs.cancel()
    jobs.wait(5000)
