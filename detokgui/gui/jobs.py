"""Background work: one runner for every computation the GUI starts.

A job is a function that either returns its result or is a generator yielding
`core.progress.Progress` and returning the result. It runs on a pool thread inside
`torch.inference_mode()`. Jobs have a *key* ("topk", "heatmap", ...): starting a job
with a key cancels the previous job with that key (a queued one never starts, a running
one stops at its next yield) and its result, if it still arrives, is dropped. Newest
wins; a stale result is never drawn.

Callbacks run on the GUI thread: worker signals are connected to @Slot methods of a
GUI-thread QObject (a plain function or lambda would run in the worker thread).
"""

from __future__ import annotations

import gc
import inspect
import itertools
import threading
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QRunnable, QThreadPool, QTimer, Signal, Slot

from detokgui.core.errors import Cancelled, DetokError
from detokgui.core.progress import Progress


class _Signals(QObject):
    progress = Signal(float, str)
    done = Signal(object)
    failed = Signal(object, str)  # exception, formatted traceback
    cancelled = Signal()


class _Task(QRunnable):
    def __init__(self, fn: Callable, signals: _Signals, cancel: threading.Event):
        super().__init__()
        self.setAutoDelete(False)
        self.fn = fn
        self.signals = signals
        self.cancel = cancel

    def report(self, fraction: float, message: str = "") -> None:
        """Progress callback for callback-style jobs; raises Cancelled when cancelled."""
        if self.cancel.is_set():
            raise Cancelled("cancelled")
        self.signals.progress.emit(float(fraction), message)

    def run(self) -> None:
        import torch

        try:
            if self.cancel.is_set():
                raise Cancelled("cancelled")
            with torch.inference_mode():
                params = inspect.signature(self.fn).parameters
                out = self.fn(self.report) if "report" in params else self.fn()
                if inspect.isgenerator(out):
                    out = self._drain(out)
            if self.cancel.is_set():
                raise Cancelled("cancelled")
            self.signals.done.emit(out)
        except Cancelled:
            self.signals.cancelled.emit()
        except BaseException as exc:  # noqa: BLE001 - every failure must reach the GUI
            self.signals.failed.emit(exc, traceback.format_exc())

    def _drain(self, gen):
        while True:
            if self.cancel.is_set():
                gen.close()
                raise Cancelled("cancelled")
            try:
                p = next(gen)
            except StopIteration as stop:
                return stop.value
            if isinstance(p, Progress):
                self.signals.progress.emit(p.fraction, p.message)


class Job(QObject):
    """Handle of one submitted job; lives on the GUI thread."""

    def __init__(self, runner: JobRunner, key: str, label: str, on_done, on_error, task_fn):
        super().__init__(runner)
        self.runner = runner
        self.key = key
        self.label = label
        self.on_done = on_done
        self.on_error = on_error
        self.cancel_event = threading.Event()
        self.finished = False
        self.signals = _Signals()
        self.signals.progress.connect(self._progress)
        self.signals.done.connect(self._done)
        self.signals.failed.connect(self._failed)
        self.signals.cancelled.connect(self._cancelled)
        self.task = _Task(task_fn, self.signals, self.cancel_event)

    @property
    def stale(self) -> bool:
        return self.runner._latest.get(self.key) is not self

    def cancel(self) -> None:
        self.cancel_event.set()
        if self.runner.pool.tryTake(self.task):
            self._cancelled()

    @Slot(float, str)
    def _progress(self, fraction: float, message: str) -> None:
        if not self.stale and not self.finished:
            self.runner.progress.emit(self.key, fraction, message or self.label)

    @Slot(object)
    def _done(self, result: Any) -> None:
        self._finish()
        if self.stale:
            return
        if self.cancel_event.is_set():  # finished just before the cancel: report the cancel
            self.runner.finished.emit(self.key)
            self.runner.cancelled.emit(self.key)
            return
        self.runner.finished.emit(self.key)
        if self.on_done is not None:
            self.on_done(result)

    @Slot(object, str)
    def _failed(self, exc: BaseException, tb: str) -> None:
        self._finish()
        if self.stale or self.cancel_event.is_set():
            return
        self.runner.finished.emit(self.key)
        if isinstance(exc, DetokError):
            message = str(exc)
        else:
            import sys

            print(tb, file=sys.stderr)
            message = f"{self.label} failed: {type(exc).__name__}: {exc}"
        if self.on_error is not None:
            self.on_error(exc)
        self.runner.failed.emit(self.key, message, exc)

    @Slot()
    def _cancelled(self) -> None:
        if self._finish() and not self.stale:
            self.runner.finished.emit(self.key)
            self.runner.cancelled.emit(self.key)

    def _finish(self) -> bool:
        first = not self.finished
        self.finished = True
        if first:
            self.runner._active.discard(self)
            self.runner.busyChanged.emit(self.runner.busy)
            self.deleteLater()
        return first


_gc_timer: QTimer | None = None


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


def _collect_due_generation() -> None:
    counts, thresholds = gc.get_count(), gc.get_threshold()
    for gen in (2, 1, 0):
        if counts[gen] > thresholds[gen]:
            gc.collect(gen)
            return


class JobRunner(QObject):
    """Submit jobs by key; emits progress/finished/failed for the status bar."""

    progress = Signal(str, float, str)  # key, fraction, message
    finished = Signal(str)
    failed = Signal(str, str, object)  # key, message, exception
    cancelled = Signal(str)
    busyChanged = Signal(bool)

    def __init__(self, parent=None, max_threads: int = 2):
        super().__init__(parent)
        collect_garbage_on_gui_thread()
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(max_threads)
        self._latest: dict[str, Job] = {}
        self._active: set[Job] = set()
        self._ids = itertools.count()

    def submit(
        self,
        key: str,
        fn: Callable,
        on_done: Callable[[Any], None] | None = None,
        *,
        label: str = "",
        on_error: Callable[[BaseException], None] | None = None,
    ) -> Job:
        """Run `fn` (plain, generator, or taking `report`) off the GUI thread.

        `on_done(result)` runs on the GUI thread unless the job was superseded or
        cancelled meanwhile."""
        old = self._latest.get(key)
        job = Job(self, key, label or key, on_done, on_error, fn)
        self._latest[key] = job
        if old is not None and not old.finished:
            old.cancel()
        self._active.add(job)
        self.busyChanged.emit(True)
        self.pool.start(job.task)
        return job

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
