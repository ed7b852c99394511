"""The application's process hands a computation's freed temporaries back to the system
at once (gui/allocator.py; issue 16: the soak's memory growth was the allocator's)."""

import subprocess
import sys

import pytest

from detokgui.gui import allocator

# In a fresh process: a 24 MiB block freed (which, by default, raises glibc's mmap
# threshold to 24 MiB), then an 8 MiB temporary made and freed; prints how much the
# resident size grew over the temporary, in MiB.
KEPT_AFTER_FREE = """
import os, sys
import numpy as np

if sys.argv[1] == "app":
    from PySide6.QtCore import QCoreApplication
    from detokgui.gui.jobs import JobRunner
    app = QCoreApplication([])
    runner = JobRunner()

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

block = np.ones(24 * 2**20 // 8)
del block
before = rss()
temporary = np.ones(8 * 2**20 // 8)
del temporary
print((rss() - before) / 2**20)
"""


# In a fresh process: page faults per 1 MiB temporary made and freed fifty times (under
# the mmap threshold: from an arena).
FAULTS_PER_TEMPORARY = """
import resource, sys
import numpy as np

if sys.argv[1] == "app":
    from PySide6.QtCore import QCoreApplication
    from detokgui.gui.jobs import JobRunner
    app = QCoreApplication([])
    runner = JobRunner()

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

for k in range(2):  # the second round counted
    before = faults()
    for _ in range(50):
        temporary = np.ones(2**20 // 8)
        small = [bytearray(64) for _ in range(20)]  # made meanwhile, as a paint makes them
        del temporary
print((faults() - before) / 50)
"""


def printed(mode: str, script: str = KEPT_AFTER_FREE) -> float:
    """What `script` prints last, run in a fresh process with the argument `mode`."""
    from conftest import SUBPROCESS_ENV

    out = subprocess.run([sys.executable, "-c", script, mode], capture_output=True,
                         text=True, timeout=120, env=SUBPROCESS_ENV, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    return float(out.stdout.split()[-1])


@pytest.mark.skipif(allocator._libc() is None, reason="glibc's malloc only")
def test_the_app_hands_a_freed_temporary_back_at_once():
    # the premise: glibc's default keeps the freed temporary resident ...
    assert printed("plain") > 7
    # ... and the application's process (a JobRunner's) does not
    assert printed("app") < 1


@pytest.mark.skipif(allocator._libc() is None, reason="glibc's malloc only")
def test_a_temporary_under_the_threshold_reuses_its_pages():
    """A block freed at the top of an arena stays there for the next one (glibc handed it
    back at once under a fixed mmap threshold: each 1 MiB image or array faulted its 256
    pages in again)."""
    assert printed("app", FAULTS_PER_TEMPORARY) < 16
