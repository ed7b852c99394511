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


def kept_mib(mode: str) -> float:
    from conftest import SUBPROCESS_ENV

    out = subprocess.run([sys.executable, "-c", KEPT_AFTER_FREE, mode], capture_output=True,
                         text=True, timeout=120, env=SUBPROCESS_ENV, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    return float(out.stdout.split()[-1])


@pytest.mark.skipif(allocator._libc() is None, reason="glibc's malloc only")
def test_the_app_hands_a_freed_temporary_back_at_once():
    # the premise: glibc's default keeps the freed temporary resident ...
    assert kept_mib("plain") > 7
    # ... and the application's process (a JobRunner's) does not
    assert kept_mib("app") < 1
