"""Where independent tasks run: a local pool of worker processes or an existing Dask
cluster, behind one small interface, so that a training series (`core.compare.series`) and
a corpus count (`core.corpus.counts`) use the same seam.

- `LocalPool(workers)`: a `concurrent.futures.ProcessPoolExecutor` with the spawn start
  method (a fresh interpreter per worker: no copy of the caller's threads or locks), the
  default; nothing to install.
- `DaskPool(scheduler)`: tasks on a Dask distributed cluster, `scheduler` being its
  address ("tcp://host:port") or a `distributed.Client` the caller made (the optional
  extra `detokgui[cluster]`).

Both have `capacity` (how many tasks run at once), `submit(fn, *args)` returning a future
(`done()`, `result()`, `cancel()`), `reports()` and `close(cancel)`. A task that wants to
stop early or to say how far it got takes the pool's `control` (a `TaskControl`, picklable)
as an argument: `control.cancelled()` turns true soon after the caller cancels, and
`control.report(item)` hands a small picklable item to the caller's `reports()`.

The local pool's workers ignore Ctrl+C (SIGINT reaches the whole process group in a
terminal; the caller handles it and cancels them through `control`), and their fast
tokenizers run on one thread each (TOKENIZERS_PARALLELISM=false), as one core is theirs.
"""

from __future__ import annotations

import os
import queue
import time
import uuid

from detokgui.core.base.errors import InputError

#: How often (seconds) a Dask task asks the scheduler whether the run was cancelled, and
#: sends its report: each is a round trip to the scheduler.
DASK_POLL_SECONDS = 0.5

_CANCEL = None  # in a local worker: the pool's cancel Event
_REPORTS = None  # in a local worker: the pool's report Queue


def default_workers() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def task_threads(workers: int) -> int:
    """Torch threads per task: the cores shared out among the local workers (at least 1).
    Dask tasks use 1 (a Dask worker runs one task per thread)."""
    return max(1, default_workers() // max(1, workers))


def _init_local_worker(cancel, reports) -> None:
    """Initializer of a local worker process (a process of our own: the settings below are
    this process's, not the caller's)."""
    import signal

    global _CANCEL, _REPORTS
    _CANCEL, _REPORTS = cancel, reports
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class TaskControl:
    """What a task is handed to see a cancel and to report progress; picklable. `kind` is
    "local" (the pool's Event and Queue, set up in each worker when it starts), "dask"
    (a distributed Event and Queue named `name`) or "none" (never cancelled, reports
    dropped)."""

    def __init__(self, kind: str = "none", name: str = ""):
        self.kind, self.name = kind, name
        self._last_poll = 0.0
        self._cancelled = False
        self._handles = None

    def __getstate__(self):
        return {"kind": self.kind, "name": self.name}

    def __setstate__(self, state):
        self.__init__(state["kind"], state["name"])

    def _dask(self):
        if self._handles is None:
            from distributed import Event, Queue

            self._handles = Event(f"{self.name}-cancel"), Queue(f"{self.name}-reports")
        return self._handles

    def cancelled(self) -> bool:
        if self.kind == "local":
            return _CANCEL is not None and _CANCEL.is_set()
        if self.kind == "dask" and not self._cancelled:
            now = time.monotonic()
            if now - self._last_poll >= DASK_POLL_SECONDS:
                self._last_poll = now
                self._cancelled = self._dask()[0].is_set()
        return self._cancelled

    def report(self, item) -> None:
        if self.kind == "local" and _REPORTS is not None:
            try:
                _REPORTS.put_nowait(item)
            except queue.Full:
                pass
        elif self.kind == "dask":
            self._dask()[1].put(item)


class LocalPool:
    """A spawn-context process pool of `workers` processes."""

    def __init__(self, workers: int):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ctx = multiprocessing.get_context("spawn")
        self.cancel_event = ctx.Event()
        self.report_queue = ctx.Queue()
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                        initializer=_init_local_worker,
                                        initargs=(self.cancel_event, self.report_queue))
        self.capacity = workers
        self.control = TaskControl("local")

    def submit(self, fn, *args):
        return self.pool.submit(fn, *args)

    def reports(self) -> list:
        """The items reported by the tasks since the last call."""
        out = []
        while True:
            try:
                out.append(self.report_queue.get_nowait())
            except (queue.Empty, OSError, ValueError):
                return out

    def close(self, cancel: bool) -> None:
        """Shut the pool down; with `cancel`, drop the tasks not started and tell the
        running ones (through `control`) to stop, without waiting for them."""
        if cancel:
            self.cancel_event.set()
        self.pool.shutdown(wait=not cancel, cancel_futures=cancel)
        self.report_queue.cancel_join_thread()


class DaskPool:
    """Tasks on an existing Dask distributed cluster."""

    def __init__(self, address):
        try:
            from distributed import Client, Event, Queue
        except ImportError:
            raise InputError("Running on a Dask cluster needs dask.distributed: "
                             "pip install detokgui[cluster]") from None
        if not isinstance(address, str):
            self.client, self.own = address, False  # a Client made by the caller
        else:
            try:
                self.client, self.own = Client(address, timeout="10s"), True
            except (OSError, TimeoutError, ValueError) as exc:
                raise InputError(f"Cannot reach the Dask scheduler at {address}: "
                                 f"{' '.join(str(exc).split()) or type(exc).__name__}") from None
        threads = sum(w.get("nthreads", 1) for w in
                      self.client.scheduler_info().get("workers", {}).values())
        self.capacity = max(1, threads)
        name = f"detokgui-{uuid.uuid4().hex}"
        self.control = TaskControl("dask", name)
        self.cancel_event = Event(f"{name}-cancel", client=self.client)
        self.report_queue = Queue(f"{name}-reports", client=self.client)
        self.futures: list = []

    def submit(self, fn, *args):
        fut = self.client.submit(fn, *args, pure=False)
        self.futures.append(fut)
        return fut

    def reports(self) -> list:
        try:
            n = self.report_queue.qsize()
            return self.report_queue.get(batch=n) if n else []
        except (OSError, TimeoutError):
            return []

    def close(self, cancel: bool) -> None:
        try:
            if cancel:
                self.cancel_event.set()
                self.client.cancel([f for f in self.futures if not f.done()])
        finally:
            self.futures = []
            if self.own:
                self.client.close()


def make_pool(workers: int | None, scheduler=None) -> LocalPool | DaskPool:
    """A Dask pool when `scheduler` is given, else a local pool of `workers` processes."""
    if scheduler is not None:
        return DaskPool(scheduler)
    return LocalPool(max(1, int(workers or default_workers())))

