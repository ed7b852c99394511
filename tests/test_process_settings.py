"""No hidden process-wide changes (issue 41, point 4): a JobRunner, the panels and a
MainWindow made outside the app launcher (a test, a notebook) leave the interpreter's and
the process's settings as they were; `gui.process.configure_process`, which the launcher
calls, sets what its docstring says. Each case in a fresh interpreter: these settings are
process-wide, and this test process has its own (conftest)."""

import os
import subprocess
import sys

from conftest import SUBPROCESS_ENV

# The settings a library must not change behind its user's back, as one line of text:
# automatic garbage collection and its thresholds, the GIL's switch interval, the main
# thread's niceness, pyqtgraph's defaults for every plot in the process (background,
# foreground, antialiasing, image axis order, ...), the threads of the BLAS libraries
# loaded (numpy's; scipy's once scipy.linalg is imported). (The C allocator's settings
# cannot be read back; that nothing sets them is checked in the source, below.)
SETTINGS = r"""
import gc, os, sys
import pyqtgraph
from threadpoolctl import threadpool_info

def settings():
    blas = sorted(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
    plots = sorted((k, repr(pyqtgraph.getConfigOption(k))) for k in pyqtgraph.CONFIG_OPTIONS)
    return (f"gc {gc.isenabled()} {gc.get_threshold()} switch {sys.getswitchinterval()} "
            f"nice {os.getpriority(os.PRIO_PROCESS, 0)} pyqtgraph {plots} blas {blas}")
"""

UNCHANGED = SETTINGS + r"""
import threading, time
import numpy
before = settings()
from PySide6.QtWidgets import QApplication
from detokgui.core.base.progress import Progress
from detokgui.gui.jobs import JobRunner
from detokgui.gui.main_window import MainWindow
from detokgui.gui.panels import PANEL_CLASSES
from detokgui.gui.state import AppState

app = QApplication([])

def wait(done):
    while not done():
        app.processEvents()
        time.sleep(0.005)

runner = JobRunner()
results = []
def work():
    yield Progress(0.5)
    return [bytearray(100) for _ in range(100000)]  # enough to reach a gc threshold
runner.submit("a", work, results.append)
wait(lambda: results)
state = AppState()
panels = [cls(state, runner) for cls in PANEL_CLASSES]
win = MainWindow(model=sys.argv[1], device="cpu")
win.show()
wait(lambda: win.state.layer is not None and not win.jobs.busy)
win.load_model(sys.argv[1])  # a model switch
wait(lambda: win.loading_name is None and not win.jobs.busy)
after = settings()
print(before)
print(after)
"""

# glibc's mmap threshold, as behaviour in a fresh process: a 24 MiB block freed (which by
# default raises the threshold to 24 MiB), then whether an 8 MiB temporary made and freed
# stays resident ("kept", glibc's default) or is handed back at once (a fixed threshold).
ALLOCATOR = r"""
import os, platform, sys

def allocator():
    if platform.libc_ver()[0] != "glibc":
        return "not glibc"
    import numpy as np

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    block = np.ones(24 * 2**20 // 8)
    del block
    before = rss()
    temporary = np.ones(8 * 2**20 // 8)
    del temporary
    return "kept" if rss() - before > 7 * 2**20 else "handed back"
"""

PLAIN = SETTINGS + ALLOCATOR + r"""
import numpy, scipy.linalg
print(settings())
print(allocator())
"""

CONFIGURED = SETTINGS + ALLOCATOR + r"""
import threading, time, weakref
from PySide6.QtCore import QCoreApplication
from detokgui.gui.process import configure_process

import numpy
app = QCoreApplication([])
configure_process(app)
print(allocator())
from detokgui.gui.jobs import JobRunner
import scipy.linalg  # loads scipy's own BLAS, after configure_process
print(settings())

app.processEvents()  # the first pass freezes what is alive
threads = set()
gc.callbacks.append(lambda phase, info: threads.add(threading.get_ident()))

class Cycle:
    def __init__(self):
        self.me = self

ring = Cycle()
gone = weakref.ref(ring)
del ring
runner = JobRunner()
done = []
runner.submit("a", lambda: [[] for _ in range(200000)], done.append)  # allocates a lot
t0 = time.perf_counter()
while (gone() is not None or not done) and time.perf_counter() - t0 < 10:
    app.processEvents()
    time.sleep(0.01)
print(f"cycle collected {gone() is None}")
print(f"collected on the GUI thread only {threads == {threading.get_ident()}}")
print(f"frozen {gc.get_freeze_count() > 1000}")
"""


def run(script: str, *args) -> list[str]:
    out = subprocess.run([sys.executable, "-c", script, *map(str, args)],
                         capture_output=True, text=True, timeout=300, env=SUBPROCESS_ENV,
                         check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()


def test_runner_panels_and_window_leave_the_process_settings_alone(tiny_ckpt):
    before, after = run(UNCHANGED, tiny_ckpt)[-2:]
    assert before.startswith("gc True")  # the premise: Python's defaults
    assert "('background', \"'k'\")" in before  # and pyqtgraph's (black plots)
    assert after == before  # BLAS threads too: as many as the library chose


def test_configure_process_sets_what_it_says():
    allocator, settings, collected, thread, frozen = run(CONFIGURED)[-5:]
    assert settings.startswith("gc False")  # automatic collection off ...
    assert collected == "cycle collected True"  # ... and garbage still collected
    assert thread == "collected on the GUI thread only True"
    assert frozen == "frozen True"  # what was alive when the event loop started
    assert "switch 0.005 " in settings  # Python's own switch interval
    # numpy's and scipy's BLAS on the calling thread: no pool spinning between products
    assert settings.endswith("blas [1, 1]"), settings
    plain_settings, plain = run(PLAIN)[-2:]
    assert (plain, allocator) in (("kept", "handed back"), ("not glibc", "not glibc"))
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    told = {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"} & set(SUBPROCESS_ENV)
    if cpus > 1 and not told:  # the premise: left alone, BLAS uses a pool
        assert not plain_settings.endswith("blas [1, 1]"), plain_settings


#: Calls that change the interpreter or the process for everyone in it, by the name called.
PROCESS_WIDE = {"disable", "enable", "freeze", "unfreeze", "set_threshold",
                "setswitchinterval", "mallopt", "malloc_trim", "sched_setattr", "setpriority",
                "nice", "syscall", "threadpool_limits", "set_num_threads", "setConfigOptions",
                "setConfigOption"}
#: Where detokgui may make them, and why.
ALLOWED = {
    "detokgui/gui/process.py": "configure_process: the app's settings, called by the launcher",
    "detokgui/gui/jobs.py": "setpriority: a runner's own worker threads run at a lower "
                            "priority (their thread id, not the process)",
    "detokgui/core/compare/series.py": "set_num_threads: a training-series task's torch "
                                       "threads, in a worker process of its own (a spawned "
                                       "local pool or a Dask worker)",
}


def test_only_the_process_module_makes_process_wide_calls():
    """No module but gui/process.py (and jobs.py's workers' own niceness, a series task's
    torch threads in its own process) calls gc.disable, gc.freeze, sys.setswitchinterval,
    glibc's mallopt/malloc_trim, a raw syscall, a thread-pool limit, pyqtgraph's
    setConfigOptions or the like: the allocator's settings, which cannot be read back, are
    left alone by construction."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    found = []
    for path in sorted((root / "detokgui").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                base = getattr(f.value, "id", "") if isinstance(f, ast.Attribute) else ""
                if name in PROCESS_WIDE and base not in ("self", "timer") and rel not in ALLOWED:
                    found.append(f"{rel}:{node.lineno} {base}.{name}")
    assert found == []
