"""The C heap of the application's process (glibc's malloc; elsewhere nothing changes).

glibc serves an allocation of at least its *mmap threshold* from a mapping of its own,
handed back to the system when freed; smaller ones come from its arenas, whose freed
memory stays resident until trimmed. By default the threshold starts at 128 KiB and
rises to the size of each mapped block freed, up to 32 MiB, so once the computations
have freed a few large temporaries, every temporary under 32 MiB (tables, score
vectors, images) shares the arenas with the small objects that outlive it. In the soak
benchmark (1000 operations, 10 model switches) 100-300 MB then stayed resident but
free, and the resident size after a switch varied by 40-75 MB from one run to the next,
so that it "grew" by up to 74 MB with no more memory alive (heaptrack: what was alive
after 1000 operations and after 300 differed by under 1 MB). A fixed threshold of
MMAP_THRESHOLD keeps the arenas to small objects: 150-250 MB less resident, 2-30 MB
free in the arenas and 5-26 MB of growth over the run, at the same speed
(benchmarks/run.py's computations within 1-3 %; with 256 KiB they were 5-10 % slower,
each temporary's pages faulted in afresh).

A fixed threshold also fixes the *trim threshold*, which glibc would otherwise raise with
it: at its default, 128 KiB, a freed block at the top of an arena is handed back to the
system at once, so a temporary of a few hundred KiB to a few MiB made and freed again and
again (an image, a curve's points, a table's column) faulted its pages in afresh each time:
a new 650 x 420 image (1 MiB) took 0.38 ms to clear instead of 0.02 ms, 237 page faults.
The trim threshold is set to twice the mmap threshold, as glibc pairs them itself: at most
that much free memory stays at the top of an arena.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading

MMAP_THRESHOLD = 4 * 2**20
_M_TRIM_THRESHOLD = -1  # mallopt's parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3

_fixed = False


def _libc():
    """glibc, or None (another system or C library: nothing to set or trim)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


def fix_mmap_threshold(nbytes: int = MMAP_THRESHOLD) -> bool:
    """Serve every allocation of at least `nbytes` from its own mapping, and keep up to
    twice that free at the top of each arena, for good (once per process; True if glibc
    took both)."""
    global _fixed
    if not _fixed:
        libc = _libc()
        _fixed = libc is not None and libc.mallopt(_M_MMAP_THRESHOLD, int(nbytes)) == 1 \
            and libc.mallopt(_M_TRIM_THRESHOLD, 2 * int(nbytes)) == 1
    return _fixed


def trim_in_background() -> threading.Thread | None:
    """Hand the arenas' free pages back to the system (malloc_trim) on a short-lived
    thread named "malloc_trim": trimming gigabytes takes a few hundred ms. None where
    there is nothing to trim."""
    libc = _libc()
    if libc is None:
        return None
    thread = threading.Thread(target=libc.malloc_trim, args=(0,), name="malloc_trim",
                              daemon=True)
    thread.start()
    return thread
