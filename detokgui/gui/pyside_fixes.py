"""Work-around for a reference-counting bug of PySide6 6.12 on Python <= 3.11.

PySide6 6.12.0 drops one reference to None each time Python calls a Qt method that
returns void (QWidget.update(), QPainter.drawPath(), QCoreApplication.processEvents(),
...) and one reference to True each time Python emits a signal (SignalInstance.emit).
pyqtgraph makes thousands of such calls per redraw, so the reference counts of these
singletons (a few thousand to some 80,000 after start-up) reach zero after a few dozen
redraws of a grid of plots, and the interpreter aborts with "Fatal Python error:
none_dealloc: deallocating None" (or bool_dealloc). From Python 3.12 on, None, True and
False are immortal and the bug is harmless; on older CPythons
`make_singletons_immortal` gives them the same kind of huge reference count.
"""

from __future__ import annotations

import sys

_BOOST = 1 << 40  # ~1e12 lost references before it could matter


def make_singletons_immortal() -> bool:
    """Add _BOOST to the reference counts of None, True and False on CPython < 3.12
    (once); True if it did.

    Each count is read through ctypes and compared with sys.getrefcount first, so an
    unexpected object layout (a debug build) is left alone."""
    if sys.implementation.name != "cpython" or sys.version_info >= (3, 12):
        return False
    import ctypes

    done = False
    for obj in (None, True, False):
        cell = ctypes.c_ssize_t.from_address(id(obj))
        count = cell.value
        if count >= _BOOST or abs(sys.getrefcount(obj) - count) > 64:
            continue
        cell.value = count + _BOOST
        done = True
    return done
