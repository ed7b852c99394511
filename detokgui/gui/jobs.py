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
`JobRunner.release` lets go of a replaced model on a pool thread.

Callbacks run on the GUI thread: worker signals are connected to @Slot methods of a
GUI-thread QObject (a plain function or lambda would run in the worker thread), so Qt
queues each report as an event for the GUI thread's event loop.

A runner changes no interpreter or process setting; the application's are made by
`gui.process.configure_process`, which only the launcher calls.
"""

from __future__ import annotations

import inspect
import itertools
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QThreadPool, Signal, Slot
from shiboken6 import isValid

from detokgui.core.base.errors import Cancelled, DetokError
from detokgui.core.base.progress import Progress

PROGRESS_INTERVAL_S = 0.1
#: A worker thread's niceness (Linux): a tenth of a normal thread's weight, so that on a
#: machine with few cores the GUI thread gets a core to draw the workers' results while
#: they compute (measured in the soak benchmark: docs/performance.md). It is a property of
#: the runner's own pool threads, not of the process.
WORKER_NICENESS = 10

_worker = threading.local()


def lower_worker_priority() -> None:
    """Run the calling thread (a runner's pool thread, and threads it starts) at
    WORKER_NICENESS or nicer, once per thread; Linux only, elsewhere nothing."""
    if getattr(_worker, "niced", False) or not sys.platform.startswith("linux"):
        return
    _worker.niced = True
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid,
                       max(os.getpriority(os.PRIO_PROCESS, tid), WORKER_NICENESS))
    except OSError:
        pass  # not allowed here: the default priority


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
        self.signals.done.connect(self._done)
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
        if due and isValid(self.runner) and not self.stale and not self.finished:
            self.shown_at = now
            self.runner.progress.emit(self.key, fraction, message or self.label)

    @Slot(object)
    def _done(self, result: Any) -> None:
        on_done = self.on_done
        if self._end() and on_done is not None:
            on_done(result)

    @Slot(object, str)
    def _failed(self, exc: BaseException, tb: str) -> None:
        on_error = self.on_error
        if not self._end():
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
        self._end(cancelled=True)

    def _end(self, cancelled: bool = False) -> bool:
        """End the job and, unless it is stale, emit `finished`, then `cancelled` and
        on_cancel() when it was cancelled (also when it ended just after the cancel); True
        when its own outcome (result or failure) is to be reported."""
        on_cancel = self.on_cancel
        if not self._finish() or self.stale:
            return False
        self.runner.finished.emit(self.key)
        if cancelled or self.cancel_event.is_set():
            self.runner.cancelled.emit(self.key)
            if on_cancel is not None:
                on_cancel()
            return False
        return True

    def _finish(self) -> bool:
        """Mark the job ended and let go of everything it held; False if it already was."""
        if self.finished:
            return False
        self.finished = True
        self.on_done = self.on_error = self.on_cancel = None
        self.task.abandon()
        self.task = None
        alive = isValid(self.runner)  # not when its window was closed meanwhile
        if alive:
            self.runner._ended(self)
        self.signals.deleteLater()
        self.deleteLater()
        return alive


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
        elif job.started and job.key in self._waiting and not any(
                j.started for j in self._active if j.key == job.key):
            self._waiting.pop(job.key).start()
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

    def release(self, holder: list) -> None:
        """Empty `holder` on a pool thread, so that what only it still holds (a replaced
        model with its tensors, tables and tokens) is freed there and not on the GUI
        thread, which meanwhile draws the new one. The caller passes a list it keeps no
        other reference into. (A job of the old model still running, or its result on the
        way, holds the model longer; the last of them frees it.)"""
        self.pool.start(holder.clear)

    @property
    def busy(self) -> bool:
        return bool(self._active)

    def running_keys(self) -> list[str]:
        return sorted({j.key for j in self._active})

    def wait(self, msecs: int = 30000) -> bool:
        return self.pool.waitForDone(msecs)
