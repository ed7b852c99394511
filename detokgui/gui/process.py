"""The interpreter and process settings of the desktop application, in one place.

`configure_process(app)` is called by the app launcher (`gui.launch`) before it builds
the window, and by nothing else in detokgui: constructing a JobRunner, a panel or a MainWindow
in a test or a notebook changes no interpreter or process setting. An application that
embeds the window should call it too, for the reason given by
`collect_garbage_on_gui_thread`. It sets, each for a reason measured with the soak
benchmark (benchmarks/bench_soak.py; the figures are in docs/performance.md):

- **where garbage is collected**: on the GUI thread only (`collect_garbage_on_gui_thread`:
  automatic collection off, a GUI-thread timer collects by CPython's own rules). Required:
  collected on a worker thread, Qt objects deadlock or crash the process.
- **what a full collection traverses**: not the objects alive when the event loop starts
  (`GuiThreadCollector.freeze_alive`: the modules of torch, Qt, pyqtgraph and detokgui and
  the window's own objects, which live as long as the process). A full collection of
  everything would stall the window for a noticeable time; one of what was made since
  does not (freezing once the window is built, not before, leaves the window's objects
  out too). Cyclic garbage among the frozen objects is never collected (reference
  counting still frees the rest): a bounded cost, at most the objects alive at start.
- **glibc's mmap threshold** (Linux with glibc): fixed at MMAP_THRESHOLD, so that every
  block of at least 4 MiB (a computation's tables, score vectors, images) gets a mapping
  of its own, handed back to the system when freed. By default glibc raises the
  threshold to the size of each such block freed, up to 32 MiB, and afterwards carves
  those temporaries from its heap between small objects that outlive them: the
  process's resident size then kept hundreds of MB of freed memory and grew from one
  model switch to the next with no more memory alive. The trim threshold is
  set with it (twice, as glibc pairs them), else glibc would hand back and fault in
  again every freed block at the top of its heap.

Workers' lower CPU priority is not set here: it is a property of each worker thread,
set when a job starts (`gui.jobs`). The GIL's switch interval is Python's own: 0.2 ms
instead of 5 ms made no difference the soak benchmark could measure.
"""

from __future__ import annotations

import ctypes
import gc
import platform
import sys

from PySide6.QtCore import QCoreApplication, QObject, QTimer, Slot

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
