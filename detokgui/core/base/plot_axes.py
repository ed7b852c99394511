"""A plot's axes and labels without a plotting library: view ranges that change only when
they must (a dragged slider rarely re-renders the axes), 1-2-5 tick steps, colour levels
symmetric about 0, category labels thinned to what fits, ticks of small cells, of a log10
axis and of a grid of cells, and parts of a footer wrapped into lines. The window's plots
and the exported figures measure text their own way and pass a test of width in
(`wrap_parts`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np


def nice_step(x: float) -> float:
    """The smallest of 1, 2, 5 x 10^k that is at least x (x > 0)."""
    if not np.isfinite(x) or x <= 0:
        return 1.0
    base = 10.0 ** math.floor(math.log10(x))
    return next(m * base for m in (1, 2, 5, 10) if m * base >= x * (1 - 1e-9))


def smaller_nice_step(step: float) -> float:
    """The next smaller of 1, 2, 5 x 10^k."""
    base = 10.0 ** math.floor(math.log10(step) + 1e-9)
    mantissa = round(step / base)
    return {1: 0.5, 2: 1.0, 5: 2.0}.get(mantissa, 1.0) * base


def stable_range(current, lo: float, hi: float, zero_based: bool = False,
                 min_fill: float = 0.6, pad: float = 0.06) -> tuple[float, float]:
    """A view range for data in [lo, hi] that changes only when it has to.

    The current range is kept while the data fit inside it and fill at least `min_fill`
    of it; otherwise a new one is padded and rounded outward to a tenth-of-span "nice"
    step. A dragged slider thus rarely changes the axes, which are the costly part of a
    redraw. zero_based: the range starts at 0 (probabilities)."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return current or ((0.0, 1.0) if zero_based else (-1.0, 1.0))
    if zero_based:
        lo = 0.0
    if hi <= lo:
        d = max(abs(lo), abs(hi), 1e-12) * 0.1
        lo, hi = (lo, hi + d) if zero_based else (lo - d, hi + d)
    if current is not None:
        c0, c1 = current
        if c0 <= lo and hi <= c1 and (hi - lo) >= min_fill * (c1 - c0):
            return current
    span = hi - lo
    step = nice_step(span / 10)
    y0 = 0.0 if zero_based else math.floor((lo - pad * span) / step) * step
    return y0, math.ceil((hi + pad * span) / step) * step


def growing_x_range(current, i: int) -> tuple[float, float]:
    """x range for keys 0..i with a strip of masked keys past i: kept while i stays inside
    it with at most ~12 % to spare, so the x axis changes every few dozen slider steps
    rather than at every one."""
    if current is not None and i + 1 <= current[1] <= i + 3 + 0.12 * (i + 1):
        return current
    x1 = i + 2 + 0.06 * (i + 1)
    q = nice_step(0.02 * (i + 1))
    x1 = math.ceil(x1 / q) * q
    return -max(0.5, 0.02 * x1), x1


def window_x_range(i: int, w: int) -> tuple[tuple[float, float], int, int]:
    """The x range of a window on the last w keys up to i, with a little room past i, and
    the slice [a, b) of the keys it shows."""
    a = max(0, i - w + 1)
    return (a - 0.5, i + max(1.0, 0.08 * (i - a + 1))), a, i + 1


def data_range(arrays, a: int, b: int) -> tuple[float, float]:
    """min and max over arrays[..., a:b] (NaNs ignored) of several arrays."""
    lo, hi = np.inf, -np.inf
    for arr in arrays:
        part = np.asarray(arr)[..., a:b]
        if part.size:
            lo = min(lo, float(np.nanmin(part)))
            hi = max(hi, float(np.nanmax(part)))
    return lo, hi


def symmetric_levels(values: np.ndarray) -> tuple[float, float]:
    """(-m, m) with m = max |v| over the finite values (1 when there are none or m = 0):
    a diverging colour map centred on 0."""
    finite = values[np.isfinite(values)]
    m = float(np.abs(finite).max()) if finite.size else 1.0
    m = m if m > 0 else 1.0
    return -m, m


def label_step(n: int, pixels: float, label_px: float) -> int:
    """Label every k-th of n equally spaced categories spread over `pixels` so that
    labelled ones are at least `label_px` apart: the smallest such k, ceil(label_px n /
    pixels) (1 when all fit)."""
    if n <= 1 or pixels <= 0:
        return 1
    return max(1, math.ceil(label_px * n / pixels))


def category_ticks(labels: Sequence[str], step: int, offset: float = 0.0,
                   keep: int | None = None) -> list[tuple[float, str]]:
    """(position, label) for every `step`-th label (and always `keep`, e.g. the selected
    one), at i + offset."""
    ticks = [(i + offset, labels[i]) for i in range(0, len(labels), step) if labels[i]]
    if keep is not None and 0 <= keep < len(labels) and keep % step and labels[keep]:
        near = [t for t in ticks if abs(t[0] - offset - keep) >= step / 2]  # room for it
        ticks = sorted(near + [(keep + offset, labels[keep])])
    return ticks


def heatmap_ticks(rows: Sequence[str], cols: Sequence[str], height: float, width: float,
                  line_px: float, label_px: float, limit: int = 0,
                  keep: tuple[int, int] = (-1, -1)):
    """A matrix's tick labels at its cells' centres (i + 0.5), thinned (`label_step`) to
    what its `height` x `width` pixels hold without overlap: rows `line_px` apart,
    columns `label_px` (the widest label's width) apart. With `limit` > 0 a side shows
    at most `limit` labels, and more than 8 columns alternate between the bottom and top
    axes (so they get twice the width). The `keep` (row, column) keep their labels.
    Returns (left, bottom, top); top is None when the columns do not alternate."""

    def at_most(n: int) -> int:
        return math.ceil(n / limit) if limit else 1

    r_keep, c_keep = keep
    r_step = max(label_step(len(rows), height, line_px), at_most(len(rows)))
    left = category_ticks(rows, r_step, 0.5, r_keep if r_keep >= 0 else None)
    alternate = len(cols) > 8 and bool(limit)
    c_step = max(label_step(len(cols), width * (2 if alternate else 1), label_px),
                 at_most(len(cols)))
    ticks = category_ticks(cols, c_step, 0.5, c_keep if c_keep >= 0 else None)
    if alternate:
        return left, ticks[0::2], ticks[1::2]
    return left, ticks, None


def wrap_parts(parts: Sequence, fits: Callable[[str], bool]) -> list[str]:
    """The non-empty parts (of a footer, a title) joined with " · " into as few lines as
    `fits` (a line's text -> whether it is narrow enough) allows; a part too wide for one
    line breaks between words."""
    lines: list[str] = []
    for part in (str(p) for p in parts if p):
        joined = f"{lines[-1]} · {part}" if lines else part
        if lines and fits(joined):
            lines[-1] = joined
            continue
        lines.append("")
        for word in part.split(" "):
            longer = f"{lines[-1]} {word}" if lines[-1] else word
            if lines[-1] and not fits(longer):
                lines.append(word)
            else:
                lines[-1] = longer
    return lines


def tick_values(lo: float, hi: float, at_least: float, margin: float = 0.0,
                 least: int = 2, floor: float = 0.0) -> list[float]:
    """Multiples of a 1-2-5 step of at least `at_least` within lo + margin .. hi - margin
    (none at the very ends, where a label would touch the next cell's), and at least
    `least` of them: a smaller step until there are, but none under `floor` (labels that
    far apart would overlap) once there is one."""
    step = nice_step(at_least)
    for _ in range(4):
        first = math.ceil((lo + margin) / step - 1e-9)
        last = math.floor((hi - margin) / step + 1e-9)
        if last - first + 1 >= least or step < 1e-12 or \
                (smaller_nice_step(step) < floor and last >= first):
            break
        step = smaller_nice_step(step)
    return [k * step for k in range(first, last + 1)]


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
