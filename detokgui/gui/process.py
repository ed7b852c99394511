"""The interpreter and process settings of the desktop application, in one place.

`configure_process(app)` is called by the launcher (`gui.launch`) before it builds the
window, and by nothing else in detokgui: a JobRunner, panel or MainWindow built in a test
or a notebook changes no process setting. An application that embeds the window should
call it too (`collect_garbage_on_gui_thread` says why). Each setting was measured with the
soak benchmark (benchmarks/bench_soak.py; figures in docs/performance.md):

- **garbage is collected on the GUI thread only** (`collect_garbage_on_gui_thread`):
  collected on a worker thread, Qt objects deadlock or crash the process.
- **full collections skip the objects alive when the event loop starts**
  (`GuiThreadCollector.freeze_alive`: the modules of torch, Qt, pyqtgraph and detokgui and
  the window's own objects, alive as long as the process): a full collection of
  everything stalled the window noticeably, one of what was made since does not. Cyclic
  garbage among the frozen objects is never collected: at most the objects alive at start.
- **glibc's mmap threshold is fixed** at MMAP_THRESHOLD (4 MiB), so that every larger
  block (tables, score vectors, images) is a mapping of its own, handed back when freed.
  By default glibc raises the threshold to each such block freed (up to 32 MiB) and then
  carves those temporaries from its heap between longer-lived small objects: the resident
  size kept hundreds of MB of freed memory and grew with each model switch. The trim
  threshold is set with it (twice, as glibc pairs them), else glibc would hand back and
  fault in again every freed block at the top of its heap.

- **numpy's and scipy's BLAS compute on the calling thread** (`single_threaded_blas`):
  OpenBLAS hands each product to a pool of its own threads, which then spin waiting for
  the next one, at the priority the process started with (the workers' lower one does
  not reach them): each small product of a job (a least-squares slope, a dgemv) kept a
  core busy for a while, and on a 2-core machine the GUI thread waited for a core
  (docs/performance.md). detokgui's large products are torch's, which has its own
  threads.

Workers' lower CPU priority is each worker thread's, set when a job starts (`gui.jobs`).
The GIL's switch interval is Python's own: 0.2 ms instead of 5 ms measured no different.
"""

from __future__ import annotations

import ctypes
import gc
import os
import platform
import sys

from PySide6.QtCore import QCoreApplication, QObject, QTimer, Slot
from threadpoolctl import threadpool_limits

MMAP_THRESHOLD = 4 * 2**20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)
GC_INTERVAL_MS = 500  # how often the GUI thread looks for a generation due for collection

_collector: GuiThreadCollector | None = None


def configure_process(app: QCoreApplication) -> None:
    """Apply the application's interpreter and process settings (the module docstring
    lists them and says why); once per process, when `app` exists and before any job
    runs."""
    collector = collect_garbage_on_gui_thread(app)
    QTimer.singleShot(0, collector, collector.freeze_alive)  # once the window is built
    fix_mmap_threshold(MMAP_THRESHOLD)
    single_threaded_blas()


def single_threaded_blas() -> None:
    """Have numpy's and scipy's BLAS compute on the calling thread only, for good: no pool
    of BLAS threads spinning between products (the module docstring says why). The
    libraries loaded already are limited through threadpoolctl; OpenBLAS loaded later (scipy
    loads its own with scipy.linalg) reads OPENBLAS_NUM_THREADS, which processes started
    from this one inherit too."""
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    threadpool_limits(limits=1, user_api="blas")


def fix_mmap_threshold(nbytes: int) -> bool:
    """glibc: serve every allocation of at least `nbytes` from a mapping of its own, and
    keep up to twice that free at the top of its heap; True if glibc took both. Elsewhere
    (another C library or system) nothing, False."""
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL("libc.so.6")
    return (libc.mallopt(_M_MMAP_THRESHOLD, int(nbytes)) == 1
            and libc.mallopt(_M_TRIM_THRESHOLD, 2 * int(nbytes)) == 1)


def collect_garbage_on_gui_thread(app: QCoreApplication) -> GuiThreadCollector:
    """Run Python's cyclic garbage collector only on the GUI thread, for good (once per
    process; the collector, whose parent is `app`).

    The automatic collector runs in whichever thread allocates when a threshold is
    crossed. When that is a job's worker thread and the garbage holds GUI-thread Qt
    objects (a closed window's pyqtgraph items), their destructors run there and deadlock
    against the GUI thread or crash PySide (tests/test_gui_tokens.py hung in 2 of 4 runs
    before this). So automatic collection is off, and a GUI-thread timer collects what
    the automatic collector would have (`GuiThreadCollector`). The test suite calls this
    for its Qt tests for the same reason."""
    global _collector
    if _collector is None:
        _collector = GuiThreadCollector(app)
    return _collector


class GuiThreadCollector(QObject):
    """Collects, every GC_INTERVAL_MS on the GUI thread, the oldest generation whose count
    has passed its threshold (gc.get_threshold), as CPython's automatic collector does:
    the youngest two whenever due, the oldest (a full collection: every object alive,
    hundreds of thousands once torch, transformers and Qt are loaded) only when at least
    a quarter as many objects as it held after its last collection have been moved into
    it since (CPython's rule, which keeps full collections rare in a long-running
    program).
    Automatic collection stays off while it exists."""

    def __init__(self, parent: QObject, interval_ms: int = GC_INTERVAL_MS):
        super().__init__(parent)
        gc.disable()
        self.long_lived = len(gc.get_objects())  # all alive now and not frozen
        self.pending = 0  # moved into the oldest generation since its last collection
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.collect_due)
        self.timer.start(interval_ms)

    @Slot()
    def freeze_alive(self) -> None:
        """Leave every object alive now out of all later collections (gc.freeze); the
        oldest generation's size is counted afresh."""
        gc.freeze()
        self.long_lived, self.pending = len(gc.get_objects()), 0

    @Slot()
    def collect_due(self) -> int:
        """Collect the generation due, if any; the generation collected, or -1."""
        counts, thresholds = gc.get_count(), gc.get_threshold()
        if counts[2] > thresholds[2] and self.pending > self.long_lived // 4:
            gc.collect(2)
            self.long_lived, self.pending = len(gc.get_objects(2)), 0
            return 2
        if counts[1] > thresholds[1]:
            young = len(gc.get_objects(0)) + len(gc.get_objects(1))
            self.pending += young - gc.collect(1)  # the survivors move to the oldest
            return 1
        if counts[0] > thresholds[0]:
            gc.collect(0)
            return 0
        return -1
