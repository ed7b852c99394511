"""Tick positions and labels of plot axes that the plotting library does not place well:
(position, label) lists as pyqtgraph's `AxisItem.setTicks` takes them, from numbers only."""

from __future__ import annotations

import math


def log_ticks(lo: float, hi: float) -> list[list[tuple[float, str]]]:
    """Ticks of a log10 axis over [lo, hi] (lo > 0): labelled at 1, 2 and 5 x 10^k,
    unlabelled at the other integers (pyqtgraph labels all of 2..9 and they overlap)."""
    lo = max(lo, 1e-30)
    hi = max(hi, lo)
    major, minor = [], []
    for k in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in range(1, 10):
            v = m * 10.0 ** k
            if lo / 1.5 <= v <= hi * 1.5:
                labelled = m in (1, 2, 5)
                (major if labelled else minor).append((math.log10(v), f"{v:g}" if labelled else ""))
    return [major, minor]


def cell_ticks(n: int, label=str, most: int = 20) -> list[list[tuple[float, str]]]:
    """Ticks at the middle of n unit cells 0..n-1, every k-th labelled label(cell) with the
    smallest k that labels at most `most` of them."""
    step = max(1, math.ceil(n / most))
    return [[(k + 0.5, label(k)) for k in range(0, n, step)], []]
