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


def test_results_arriving_together_are_handed_over_one_pass_each(qtbot, runner):
    """Two results that reach the GUI thread together are drawn in two passes of the event
    loop, with the window's other work (a posted event here; a paint, input) between them,
    and each job counts as running until its result was handed over (issue 16)."""
    from PySide6.QtCore import QTimer

    r, _rec = runner
    order = []

    def done(name):
        def on_done(_result):
            order.append(name)
            QTimer.singleShot(0, lambda: order.append(f"after {name}"))
        return on_done

    r.submit("a", lambda: 1, done("a"))
    r.submit("b", lambda: 2, done("b"))
    assert r.wait(5000)  # both results are waiting for the GUI thread
    time.sleep(0.05)
    assert r.busy
    qtbot.waitUntil(lambda: len(order) == 4, timeout=5000)
    assert order.index("after a") < order.index("b") or order.index("after b") < order.index("a")
    assert not r.busy


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


def test_dismantle_frees_a_model_it_alone_holds_and_leaves_a_shared_one_whole(tiny_ckpt):
    """The previous model is freed piece by piece off the GUI thread (issue 16, item 4):
    all of it when the job holds its last reference; nothing taken from it otherwise."""
    import weakref

    from detokgui.core import Layer0
    from detokgui.gui.jobs import dismantle

    layer = Layer0.from_pretrained(str(tiny_ckpt), device="cpu")
    sigma = layer.sigma_stats()  # a cached result, held by the test as a panel would
    E = layer.E
    gone = weakref.ref(layer)
    box = [layer]
    del layer
    dismantle(box)
    assert box == [] and gone() is None
    assert E.shape[0] > 0 and vars(sigma)  # what others hold is untouched

    shared = Layer0.from_pretrained(str(tiny_ckpt), device="cpu")
    before = dict(vars(shared))
    dismantle([shared])
    assert vars(shared) == before and shared.E is before["E"]


FROZEN_BASELINE = """
import gc, weakref
from detokgui.gui.jobs import release_memory

class Thing:
    pass

def cycle():
    t = Thing()
    t.me = t
    return t

held = cycle()
held.model = Thing()
old = weakref.ref(held.model)
keep = [held]
del held
release_memory()                      # the first call freezes all that is alive
frozen = gc.get_freeze_count()
assert frozen > 1000, frozen
fresh = weakref.ref(cycle())          # garbage made after the freeze
release_memory()
assert fresh() is None and gc.get_freeze_count() == frozen, "collected, nothing unfrozen"
keep.clear()                          # a frozen cycle now holds the old model
release_memory()
assert old() is not None and gc.get_freeze_count() == frozen, "frozen garbage stays"
release_memory(old)                   # ... unless it holds the model let go of
assert old() is None
print("ok")
"""


def test_release_memory_freezes_once_and_collects_the_rest(tmp_path):
    """Switches after the first collect only what is not frozen (the modules' ~260,000
    objects are not traversed again), and a model that a frozen cycle keeps alive is
    still freed (issue 16, item 4). In a subprocess: freezing is process-wide."""
    import subprocess
    import sys

    from conftest import SUBPROCESS_ENV

    out = subprocess.run([sys.executable, "-c", FROZEN_BASELINE], capture_output=True,
                         text=True, timeout=120, env=SUBPROCESS_ENV, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


HELD_BY_A_JOB = """
import gc, weakref
from PySide6.QtCore import QCoreApplication, QTimer
from detokgui.gui import jobs

app = QCoreApplication([])
jobs.RELEASE_RETRY_MS = 50
unfrozen = []
real_unfreeze = gc.unfreeze
gc.unfreeze = lambda: (unfrozen.append(1), real_unfreeze())

class Thing:
    pass

ring = Thing()
ring.me = ring
ring.model = Thing()                  # frozen below inside a cycle
held = weakref.ref(ring.model)
jobs.release_memory()                 # the first call freezes all that is alive
del ring                              # a frozen cycle now holds `held`'s model

model = Thing()
old = weakref.ref(model)
job = [model]                         # a running job's reference to the old model
del model
jobs.release_memory(old)
assert old() is not None and not unfrozen, "no full collection while a job holds it"
QTimer.singleShot(20, job.clear)      # the job ends
QTimer.singleShot(400, app.quit)
app.exec()
assert old() is None and not unfrozen, "freed by the job's end, without a full collection"

jobs.release_memory(held)             # only a full collection frees it: after the retries
assert held() is not None and not unfrozen
QTimer.singleShot(1000, app.quit)
app.exec()
assert held() is None and unfrozen == [1]
print("ok")
"""


def test_release_memory_waits_for_a_job_to_let_go_of_the_old_model():
    """A model switch while a job of the old model runs: the full collection (0.4 s of
    GUI-thread CPU) is put off while cheap ones are retried, and is not needed once the
    job lets go; a model only a frozen cycle holds is still freed, after the retries
    (issue 16, item 4). In a subprocess: freezing is process-wide."""
    import subprocess
    import sys

    from conftest import SUBPROCESS_ENV

    out = subprocess.run([sys.executable, "-c", HELD_BY_A_JOB], capture_output=True,
                         text=True, timeout=120, env=SUBPROCESS_ENV, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
