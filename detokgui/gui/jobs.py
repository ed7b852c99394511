"""Background work: one runner for every computation the GUI starts.

A job is a function that either returns its result or is a generator yielding
`core.base.progress.Progress` and returning the result. It runs on a pool thread inside
`torch.inference_mode()`. Jobs have a *key* ("topk", "heatmap", ...): starting a job
with a key cancels the previous job with that key (a queued one never starts, a running
one stops at its next yield) and its result, if it still arrives, is dropped. Newest
wins; a stale result is never drawn.

With `coalesce=True` a new job does not cancel a running one with its key: it waits,
replacing any job already waiting, and starts when the running one ends (whose result is
then stale and dropped). At most one such job runs at a time and none ever queue up,
which is what a dragged slider needs.

A finished job holds nothing: its function, callbacks, task and signal objects are
released when it ends, so a result's model can be freed once nothing shown needs it.

Callbacks run on the GUI thread: worker signals are connected to @Slot methods of a
GUI-thread QObject (a plain function or lambda would run in the worker thread).
"""

from __future__ import annotations

import gc
import inspect
import itertools
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable
from functools import partial
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QThreadPool, QTimer, Signal, Slot

from detokgui.core.base.errors import Cancelled, DetokError
from detokgui.core.base.progress import Progress
from detokgui.gui.allocator import fix_mmap_threshold, trim_in_background
from detokgui.gui.later_pass import in_a_later_pass
from detokgui.gui.scheduling import lower_worker_priority, shorten_time_slice

PROGRESS_INTERVAL_S = 0.1


class _Signals(QObject):
    progress = Signal(float, str)
    done = Signal(object)
    failed = Signal(object, str)  # exception, formatted traceback
    cancelled = Signal()


class _Task:
    """Runs one job function on a pool thread and reports through `signals`.

    The pool is given the bound method `run` (a plain callable, which Qt's pool lets go
    of once it has run; a QRunnable subclass would stay referenced by PySide's pool
    wrapper for good). The GUI side ends the task with `take` (not started yet: it never
    will) or `abandon` (the job ended): either drops the function and the signals under a
    lock that every report also takes, so nothing is reported about an ended job."""

    def __init__(self, fn: Callable, signals: _Signals, cancel: threading.Event):
        self.fn: Callable | None = fn
        self.signals: _Signals | None = signals
        self.cancel = cancel
        self.lock = threading.Lock()
        self.running = False

    def take(self) -> bool:
        """GUI thread: abandon the task if it has not started; True if it had not."""
        with self.lock:
            if self.running:
                return False
            self.fn = self.signals = None
            return True

    def abandon(self) -> None:
        """GUI thread: the job has ended; drop everything, report nothing more."""
        with self.lock:
            self.fn = self.signals = None

    def _emit(self, name: str, *args) -> None:
        with self.lock:
            if self.signals is not None:
                getattr(self.signals, name).emit(*args)

    def report(self, fraction: float, message: str = "") -> None:
        """Progress callback for callback-style jobs; raises Cancelled when cancelled."""
        if self.cancel.is_set():
            raise Cancelled("cancelled")
        self._emit("progress", float(fraction), message)

    def run(self) -> None:
        import torch

        lower_worker_priority()
        with self.lock:
            fn, self.fn = self.fn, None
            self.running = fn is not None
        if fn is None:
            return  # taken back before it started
        try:
            if self.cancel.is_set():
                raise Cancelled("cancelled")
            with torch.inference_mode():
                params = inspect.signature(fn).parameters
                out = fn(self.report) if "report" in params else fn()
                del fn
                if inspect.isgenerator(out):
                    out = self._drain(out)
            if self.cancel.is_set():
                raise Cancelled("cancelled")
        except Cancelled:
            self._emit("cancelled")
        except BaseException as exc:  # noqa: BLE001 - every failure must reach the GUI
            text = traceback.format_exc()
            _drop_frames(exc)
            self._emit("failed", exc, text)
        else:
            self._emit("done", out)

    def _drain(self, gen):
        try:
            while True:
                if self.cancel.is_set():
                    raise Cancelled("cancelled")
                try:
                    p = next(gen)
                except StopIteration as stop:
                    return stop.value
                if isinstance(p, Progress):
                    self._emit("progress", p.fraction, p.message)
        finally:
            gen.close()


def _alive(obj: QObject) -> bool:
    """The Qt object behind `obj` has not been deleted."""
    from shiboken6 import isValid

    return isValid(obj)


def _drop_frames(exc: BaseException) -> None:
    """Detach the tracebacks of an exception and of those it was raised from: their
    frames hold the job's locals (a model, big tensors); the formatted text is kept."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc.__traceback__ = None
        exc = exc.__cause__ or exc.__context__


class Job(QObject):
    """Handle of one submitted job; lives on the GUI thread until it ends.

    Its Qt parent is the application, not the runner: an ended job deletes itself later
    (deleteLater), and a runner destroyed before that happened (a window closed with
    jobs just ended) took such children with it, after which the pending deletion
    crashed the process. The job's reference to its runner keeps the runner alive until
    then."""

    def __init__(self, runner: JobRunner, key: str, serial: int, label: str, task_fn,
                 on_done, on_error, on_cancel):
        super().__init__(QCoreApplication.instance())
        self.runner = runner
        self.key = key
        self.serial = serial
        self.label = label
        self.on_done = on_done
        self.on_error = on_error
        self.on_cancel = on_cancel
        self.cancel_event = threading.Event()
        self.started = False
        self.finished = False
        self.shown_at = 0.0  # perf_counter() of the last progress passed on
        self.signals = _Signals(self)
        self.signals.progress.connect(self._progress)
        self.signals.done.connect(self._arrived)
        self.signals.failed.connect(self._failed)
        self.signals.cancelled.connect(self._cancelled)
        self.task: _Task | None = _Task(task_fn, self.signals, self.cancel_event)

    @property
    def stale(self) -> bool:
        """A newer job with this key was submitted."""
        return self.runner._latest.get(self.key) != self.serial

    def start(self) -> None:
        self.started = True
        self.runner.pool.start(self.task.run)

    def cancel(self) -> None:
        if self.finished:
            return
        self.cancel_event.set()
        if not self.started or self.task.take():
            self._cancelled()  # never ran: report it here

    @Slot(float, str)
    def _progress(self, fraction: float, message: str) -> None:
        # At most ~10 updates a second reach the status bar: each one relays it out.
        now = time.perf_counter()
        due = now - self.shown_at >= PROGRESS_INTERVAL_S or fraction >= 1.0
        if due and _alive(self.runner) and not self.stale and not self.finished:
            self.shown_at = now
            self.runner.progress.emit(self.key, fraction, message or self.label)

    @Slot(object)
    def _arrived(self, result: Any) -> None:
        # Handed over in a pass of its own: results that reach the GUI thread together
        # used to be drawn one after the other before the window could paint or handle
        # input. The job runs until then (a Cancel in between is reported as before).
        in_a_later_pass(partial(self._done, result))

    def _done(self, result: Any) -> None:
        on_done, on_cancel = self.on_done, self.on_cancel
        if not self._finish() or self.stale:
            return
        self.runner.finished.emit(self.key)
        if self.cancel_event.is_set():  # finished just before the cancel: report the cancel
            self.runner.cancelled.emit(self.key)
            if on_cancel is not None:
                on_cancel()
        elif on_done is not None:
            on_done(result)

    @Slot(object, str)
    def _failed(self, exc: BaseException, tb: str) -> None:
        on_error, on_cancel = self.on_error, self.on_cancel
        if not self._finish() or self.stale:
            return
        self.runner.finished.emit(self.key)
        if self.cancel_event.is_set():
            self.runner.cancelled.emit(self.key)
            if on_cancel is not None:
                on_cancel()
            return
        if isinstance(exc, DetokError):
            message = str(exc)
        else:
            print(tb, file=sys.stderr)
            message = f"{self.label} failed: {type(exc).__name__}: {exc}"
        if on_error is not None:
            on_error(exc, message)
        self.runner.failed.emit(self.key, message, exc)

    @Slot()
    def _cancelled(self) -> None:
        on_cancel = self.on_cancel
        if self._finish() and not self.stale:
            self.runner.finished.emit(self.key)
            self.runner.cancelled.emit(self.key)
            if on_cancel is not None:
                on_cancel()

    def _finish(self) -> bool:
        """Mark the job ended and let go of everything it held; False if it already was."""
        if self.finished:
            return False
        self.finished = True
        self.on_done = self.on_error = self.on_cancel = None
        self.task.abandon()
        self.task = None
        alive = _alive(self.runner)  # not when its window was closed meanwhile
        if alive:
            self.runner._ended(self)
        self.signals.deleteLater()
        self.deleteLater()
        return alive


_gc_timer: QTimer | None = None

#: The GIL's switch interval in the application. A worker thread running Python keeps the
#: GIL for up to this long each time the GUI thread asks for it back, and a repaint asks
#: hundreds of times (each Python paint method, signal and callback): with 1 ms, the GUI
#: thread spent 60-150 ms of a model switch's longest stalls waiting for the GIL (its
#: scheduler statistics, bench_soak), with 0.2 ms 40-60 ms (Python's default is 5 ms).
GIL_SWITCH_INTERVAL_S = 0.0002


def collect_garbage_on_gui_thread(interval_ms: int = 500) -> None:
    """Run Python's cyclic garbage collector only on the GUI thread (once per process).

    The automatic collector runs in whichever thread allocates when a threshold is
    crossed. When that is a job's worker thread and the garbage holds GUI-thread Qt objects
    (a closed window's pyqtgraph items), their destructors run there and deadlock against
    the GUI thread or crash PySide. So: automatic collection off, and a GUI-thread timer
    that collects a generation whenever its count has passed its threshold."""
    global _gc_timer
    app = QCoreApplication.instance()
    if _gc_timer is not None or app is None:
        return
    gc.disable()
    _gc_timer = QTimer(app)
    _gc_timer.timeout.connect(_collect_due_generation)
    _gc_timer.start(interval_ms)


_baseline_frozen = False
RELEASE_RETRY_MS = 1500  # release_memory: how long to wait for a job to let go of the old model
RELEASE_TRIES = 4


def release_memory(old: weakref.ref | None = None, tries: int = RELEASE_TRIES) -> None:
    """Collect garbage and hand the freed heap back to the system (glibc's malloc_trim, on
    a short-lived thread; nothing elsewhere). After a model switch the old model's hundreds
    of MB are free but mostly stay in the allocator's arenas, fragmented by small
    allocations made meanwhile, and the process's resident size would keep them.

    A collection never traverses frozen objects (gc.freeze). The first call freezes
    everything then alive, without collecting: the 300,000-500,000 objects of torch's,
    transformers', Qt's and pyqtgraph's modules, the first model and its views, over which
    a full collection costs 0.4-0.45 s of GUI-thread CPU (measured; it would find ~30
    unreachable objects). Later calls collect only what was created since, the later
    models and views: 5-11 ms of CPU after switching a GPT-2-small-sized model. Garbage
    among frozen objects is not collected, with one exception: when `old` (a weak
    reference to the model just let go of) is still alive after that collection, a frozen
    cycle may hold it, so everything is unfrozen, collected and frozen again (the full
    cost, only then). Within an application that full collection waits: a job of the old
    model still running (or just cancelled) holds it until it ends, and freeing it then
    needs no collection at all; so the cheap collection is tried again every
    RELEASE_RETRY_MS, `tries` times, before the full one (0.4 s of GUI-thread CPU that a
    switch would otherwise often pay at once)."""
    global _baseline_frozen
    if not _baseline_frozen:
        gc.freeze()
        _baseline_frozen = True
    else:
        gc.collect()
    if old is not None and old() is not None:
        app = QCoreApplication.instance()
        if tries > 0 and app is not None:
            QTimer.singleShot(RELEASE_RETRY_MS, app, lambda: release_memory(old, tries - 1))
            return  # the heap is trimmed once the model is gone
        gc.unfreeze()
        gc.collect()
        gc.freeze()
    trim_in_background()


def dismantle(box: list) -> None:
    """Job body: free the one object in `box` (its only reference) piece by piece, the
    GIL handed back between pieces, so that freeing a model's hundreds of MB (~70 ms for
    GPT-2 small: its cache 31, E 23, tokenizer 15, measured) never holds the GUI thread
    at once. An object is taken apart only while nothing else refers to it (a plain dict
    or list, or an instance of one of detokgui's classes); anything still shared (a job
    of the old model still running, a reference cycle) is only let go of, and freed by
    its last holder or by the garbage collector."""
    todo = [box.pop()]
    while todo:
        obj = todo.pop()
        if sys.getrefcount(obj) == 2:  # `obj` and the call's argument: ours alone
            if type(obj) in (dict, list):
                parts = list(obj.values() if type(obj) is dict else obj)
                obj.clear()
                todo.extend(parts)
                del parts
            elif type(obj).__module__.startswith("detokgui.") and \
                    type(getattr(obj, "__dict__", None)) is dict:
                todo.append(dict(obj.__dict__))
                obj.__dict__.clear()
        del obj
        time.sleep(0.0005)  # the GIL to the GUI thread between pieces


def _collect_due_generation() -> None:
    counts, thresholds = gc.get_count(), gc.get_threshold()
    for gen in (2, 1, 0):
        if counts[gen] > thresholds[gen]:
            gc.collect(gen)
            return


class JobRunner(QObject):
    """Submit jobs by key; emits progress/finished/failed for the status bar."""

    submitted = Signal(str)  # key: a job was submitted (it may wait when coalesced)
    progress = Signal(str, float, str)  # key, fraction, message
    finished = Signal(str)
    failed = Signal(str, str, object)  # key, message, exception
    cancelled = Signal(str)
    busyChanged = Signal(bool)

    def __init__(self, parent=None, max_threads: int = 2):
        super().__init__(parent)
        collect_garbage_on_gui_thread()
        sys.setswitchinterval(min(sys.getswitchinterval(), GIL_SWITCH_INTERVAL_S))
        shorten_time_slice()  # the GUI thread's: see gui/scheduling.py
        fix_mmap_threshold()  # see gui/allocator.py
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(max_threads)
        self._latest: dict[str, int] = {}  # key -> serial of the newest job (not the job)
        self._active: set[Job] = set()  # started or waiting, not ended
        self._waiting: dict[str, Job] = {}  # coalesced jobs waiting for their key's runner
        self._serials = itertools.count(1)

    def submit(
        self,
        key: str,
        fn: Callable,
        on_done: Callable[[Any], None] | None = None,
        *,
        label: str = "",
        on_error: Callable[[BaseException, str], None] | None = None,
        on_cancel: Callable[[], None] | None = None,
        coalesce: bool = False,
    ) -> Job:
        """Run `fn` (plain, generator, or taking `report`) off the GUI thread.

        `on_done(result)` runs on the GUI thread unless the job was superseded or
        cancelled meanwhile; `on_error(exception, message)` when it failed and
        `on_cancel()` when it was cancelled (neither for a superseded job). With
        `coalesce`, a running job with this key is not cancelled: this one waits for it
        (see the module docstring)."""
        job = Job(self, key, next(self._serials), label or key, fn, on_done, on_error,
                  on_cancel)
        self._latest[key] = job.serial
        running = [j for j in self._active if j.key == key]
        self._active.add(job)
        self.busyChanged.emit(True)
        self.submitted.emit(key)
        if coalesce and any(j.started for j in running):
            replaced = self._waiting.pop(key, None)
            if replaced is not None:
                replaced.cancel()  # stale: ends silently
            self._waiting[key] = job
            return job
        for old in running:
            old.cancel()
        job.start()
        return job

    def _ended(self, job: Job) -> None:
        self._active.discard(job)
        if self._waiting.get(job.key) is job:
            del self._waiting[job.key]
        elif job.started and job.key in self._waiting:
            nxt = self._waiting.pop(job.key)
            if not any(j.started for j in self._active if j.key == job.key):
                nxt.start()
            else:
                self._waiting[job.key] = nxt
        self.busyChanged.emit(self.busy)

    def discard(self, key: str) -> None:
        """Stop the jobs with `key` without reporting them: their results are no longer
        wanted (no callback, no `cancelled` signal)."""
        self._latest[key] = next(self._serials)
        self.cancel(key)

    def cancel(self, key: str | None = None) -> None:
        """Cancel the job with `key`, or every running job."""
        for job in list(self._active):
            if key is None or job.key == key:
                job.cancel()

    @property
    def busy(self) -> bool:
        return bool(self._active)

    def running_keys(self) -> list[str]:
        return sorted({j.key for j in self._active})

    def wait(self, msecs: int = 30000) -> bool:
        return self.pool.waitForDone(msecs)
