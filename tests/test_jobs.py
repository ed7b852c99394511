"""The job runner: progress, cancel, stale results dropped, errors reported."""

import time

import pytest
from PySide6.QtCore import QObject, Slot

from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import Progress
from detokgui.gui.jobs import JobRunner


class Recorder(QObject):
    def __init__(self):
        super().__init__()
        self.events = []

    @Slot(str, float, str)
    def progress(self, key, fraction, message):
        self.events.append(("progress", key, round(fraction, 3)))

    @Slot(str, str, object)
    def failed(self, key, message, exc):
        self.events.append(("failed", key, message))

    @Slot(str)
    def cancelled(self, key):
        self.events.append(("cancelled", key))


@pytest.fixture
def runner(qtbot):
    r = JobRunner()
    rec = Recorder()
    r.progress.connect(rec.progress)
    r.failed.connect(rec.failed)
    r.cancelled.connect(rec.cancelled)
    yield r, rec
    r.cancel()
    r.wait(5000)


def slow_job(steps, delay=0.02):
    for i in range(steps):
        time.sleep(delay)
        yield Progress((i + 1) / steps, f"step {i + 1}")
    return "finished"


def test_result_and_progress_arrive_on_gui_thread(qtbot, runner):
    r, rec = runner
    results = []
    import threading

    main = threading.get_ident()
    r.submit("a", lambda: slow_job(5), lambda res: results.append((res, threading.get_ident())))
    qtbot.waitUntil(lambda: bool(results), timeout=5000)
    assert results == [("finished", main)]
    assert [e for e in rec.events if e[0] == "progress"][-1] == ("progress", "a", 1.0)


def test_cancel_stops_a_running_generator(qtbot, runner):
    r, rec = runner
    results = []
    steps_done = []

    def job():
        for i in range(1000):
            steps_done.append(i)
            time.sleep(0.01)
            yield Progress(i / 1000)
        return "never"

    r.submit("long", job, results.append)
    qtbot.waitUntil(lambda: len(steps_done) > 3, timeout=5000)
    r.cancel("long")
    qtbot.waitUntil(lambda: ("cancelled", "long") in rec.events, timeout=5000)
    n = len(steps_done)
    qtbot.wait(100)
    assert len(steps_done) <= n + 1 and results == [] and not r.busy


def test_callback_style_job_is_cancelled_through_report(qtbot, runner):
    r, rec = runner
    calls = []

    def job(report):
        for i in range(1000):
            calls.append(i)
            time.sleep(0.01)
            report(i / 1000, "working")
        return "never"

    r.submit("cb", job)
    qtbot.waitUntil(lambda: len(calls) > 3, timeout=5000)
    r.cancel()
    qtbot.waitUntil(lambda: ("cancelled", "cb") in rec.events, timeout=5000)


def test_newer_job_with_same_key_wins(qtbot, runner):
    r, _ = runner
    results = []
    r.submit("k", lambda: slow_job(10, 0.02) and "old", results.append)
    r.submit("k", lambda: (time.sleep(0.05), "new")[1], results.append)
    qtbot.waitUntil(lambda: not r.busy, timeout=5000)
    qtbot.wait(50)
    assert results == ["new"]


def test_stale_result_that_already_finished_is_dropped(qtbot, runner):
    r, _ = runner
    results = []
    r.submit("k", lambda: (time.sleep(0.1), "first")[1], results.append)
    time.sleep(0.02)  # first is now running; it cannot be taken back from the pool
    r.submit("k", lambda: (time.sleep(0.3), "second")[1], results.append)
    qtbot.waitUntil(lambda: bool(results), timeout=5000)
    assert results == ["second"]


def test_errors_reach_the_status_line(qtbot, runner):
    r, rec = runner

    def bad():
        raise InputError("Position 5000 is outside 0..1023.")

    def crash():
        return 1 / 0

    r.submit("a", bad)
    r.submit("b", crash)
    qtbot.waitUntil(lambda: len([e for e in rec.events if e[0] == "failed"]) == 2, timeout=5000)
    messages = {e[1]: e[2] for e in rec.events if e[0] == "failed"}
    assert messages["a"] == "Position 5000 is outside 0..1023."
    assert "ZeroDivisionError" in messages["b"]


def test_window_cancel_button(window, qtbot):
    win = window

    def job():
        for i in range(1000):
            time.sleep(0.01)
            yield Progress(i / 1000, "long computation")

    win.jobs.submit("test", job)
    qtbot.waitUntil(lambda: win.cancel_button.isVisible(), timeout=3000)
    qtbot.waitUntil(lambda: win.progress.value() > 0, timeout=3000)
    win.cancel_button.click()
    qtbot.waitUntil(lambda: not win.jobs.busy, timeout=5000)
    assert not win.cancel_button.isVisible()
    assert "Cancelled" in win.statusBar().currentMessage()


def _live(cls) -> int:
    import gc

    return sum(type(o) is cls for o in gc.get_objects())


def _collect(qtbot) -> None:
    """Run deferred deletions (what the event loop does) and the garbage collector."""
    import gc

    from PySide6.QtCore import QCoreApplication, QEvent

    QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)
    gc.collect()


def test_finished_jobs_hold_nothing(qtbot, runner):
    """1000 submits (superseded, cancelled, failed, done): afterwards no job, task or
    signal object is left, and nothing a job's function or callback captured is alive."""
    import weakref

    from PySide6.QtWidgets import QApplication

    from detokgui.gui.jobs import Job, _Signals, _Task

    r, _ = runner
    _collect(qtbot)
    before = [_live(c) for c in (Job, _Task, _Signals)]

    class Payload:  # stands for a model captured by a closure
        pass

    refs, results = [], []
    for i in range(1000):
        payload = Payload()
        refs.append(weakref.ref(payload))
        if i % 10 == 3:
            def fn(p=payload):
                raise RuntimeError("boom")
        elif i % 10 == 7:
            def fn(p=payload):
                yield Progress(0.5)
                return p
        else:
            def fn(p=payload):
                return id(p)
        r.submit(f"k{i % 7}", fn, lambda res, p=payload: results.append(id(p)),
                 on_error=lambda exc, msg, p=payload: None)
        if i % 50 == 25:
            r.cancel()
        if i % 10 == 9:
            QApplication.processEvents()
        del payload, fn
    qtbot.waitUntil(lambda: not r.busy, timeout=30000)
    r.wait(10000)
    _collect(qtbot)
    assert results  # some jobs ran to the end
    assert [_live(c) for c in (Job, _Task, _Signals)] == before
    assert sum(ref() is not None for ref in refs) == 0
    assert not r._active and not r._waiting


def test_coalesced_jobs_never_queue(qtbot, runner):
    """With coalesce, a running job is not cancelled; the newest waits, replacing any
    waiting one; at most one runs; only the newest result is delivered."""
    import threading

    r, rec = runner
    started, results, gate = [], [], threading.Event()

    def job(n):
        def fn():
            started.append(n)
            if n == 0:
                gate.wait(5)
            return n
        return fn

    for n in range(6):
        r.submit("drag", job(n), results.append, coalesce=True)
    qtbot.waitUntil(lambda: started == [0], timeout=5000)
    assert len(r._active) == 2  # the running one and one waiting
    gate.set()
    qtbot.waitUntil(lambda: not r.busy, timeout=5000)
    assert started == [0, 5] and results == [5]
    assert ("cancelled", "drag") not in rec.events  # superseded jobs end silently


def test_discard_reports_nothing_and_cancel_reports_once(qtbot, runner):
    import threading

    r, rec = runner
    gate, calls = threading.Event(), []

    def blocker():
        gate.wait(5)
        yield Progress(1.0)
        return "late"

    r.submit("a", blocker, calls.append, on_cancel=lambda: calls.append("cancel a"))
    r.submit("b", blocker, calls.append, on_cancel=lambda: calls.append("cancel b"))
    r.submit("c", lambda: "queued", calls.append, on_cancel=lambda: calls.append("cancel c"))
    r.discard("a")
    r.cancel("c")  # still queued behind a and b: reported at once
    assert calls == ["cancel c"]
    r.cancel("b")
    gate.set()
    qtbot.waitUntil(lambda: not r.busy, timeout=5000)
    assert sorted(calls) == ["cancel b", "cancel c"]
    assert ("cancelled", "a") not in rec.events


RUNNER_GOES_FIRST = r"""
import gc, threading, time
from PySide6.QtCore import QCoreApplication, QEvent
from PySide6.QtWidgets import QApplication
from detokgui.core.base.progress import Progress
from detokgui.gui.jobs import JobRunner

app = QApplication([])
for _ in range(3):
    r = JobRunner()
    gate = threading.Event()

    def blocker():
        gate.wait(5)
        yield Progress(1.0)

    r.submit("a", blocker)
    r.submit("b", blocker)
    r.cancel()
    gate.set()
    while r.busy:  # both end; their deletion is pending
        app.processEvents()
        time.sleep(0.005)
    r.wait(5000)
    del r  # the runner goes before its ended jobs are deleted
    QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)
    gc.collect()
print("survived")
"""


def test_runner_deleted_before_its_ended_jobs():
    """A runner destroyed while jobs that just ended wait for their deferred deletion (a
    closed window; a test's runner) must not crash the process when those deletions run
    (it did when jobs were the runner's Qt children: a segfault in ~QObject). In a
    subprocess, so that a regression fails this test rather than the whole run."""
    import subprocess
    import sys

    from conftest import SUBPROCESS_ENV

    out = subprocess.run([sys.executable, "-c", RUNNER_GOES_FIRST], capture_output=True,
                         text=True, timeout=120, env=SUBPROCESS_ENV, check=False)
    assert out.returncode == 0 and "survived" in out.stdout, out.stderr[-2000:]


def test_a_switched_model_is_freed(window, qtbot, tmp_path):
    """After a model switch, and after closing a comparison, nothing holds the model let
    go of (weak references tell; no collection needed), and its last reference went on a
    pool thread (`JobRunner.release`), not on the GUI thread."""
    import threading
    import weakref

    from conftest import wait_idle

    from detokgui.core.model.sources.demo import write_random_checkpoint

    freed_on = []

    def watch(layer):
        weakref.finalize(layer, lambda: freed_on.append(threading.current_thread()))
        return weakref.ref(layer)

    other = write_random_checkpoint(tmp_path / "other", seed=5)
    old = watch(window.state.layer)
    window.load_model(str(other))
    qtbot.waitUntil(lambda: window.state.layer is not old(), timeout=60000)
    wait_idle(qtbot, window)
    _collect_deferred()
    window.jobs.wait()
    assert old() is None

    window.compare_with(str(window.state.layer.name))
    qtbot.waitUntil(lambda: window.state.layer_b is not None, timeout=60000)
    wait_idle(qtbot, window)
    b = watch(window.state.layer_b)
    window.close_comparison()
    wait_idle(qtbot, window)
    _collect_deferred()
    window.jobs.wait()
    assert b() is None and window.state.layer is not None
    assert len(freed_on) == 2 and threading.main_thread() not in freed_on


def _collect_deferred() -> None:
    """Run the deferred deletions the event loop would run (the ended jobs' objects)."""
    from PySide6.QtCore import QCoreApplication, QEvent

    QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)
