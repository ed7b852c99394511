"""Lines and bands reduced to what a plot can show at its size in pixels: at most four
points a pixel column for a line (the M4 aggregation: first, lowest, highest, last) and
two for a band, so that drawing them costs what the screen holds, not what the data
hold, and colours the same pixels. Pure numpy, for the GUI's plots
(`detokgui.gui.small_multiples`)."""

from __future__ import annotations

import math

import numpy as np


def pixel_envelope(x: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                   columns: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A band (lower..upper over increasing x) with at most two points per pixel column
    when its x span is `columns` pixels wide: in each column the first and last x, with
    the column's lowest lower and highest upper. It fills the same pixels as the whole
    band; Qt fills a polygon of a thousand jagged points a head far more slowly. Fewer
    points than 2 x columns come back as they are."""
    if x.size <= 2 * max(columns, 1.0) or x[-1] <= x[0]:
        return x, lower, upper
    starts, ends = _pixel_columns(x, columns)
    lo = np.minimum.reduceat(lower, starts)
    hi = np.maximum.reduceat(upper, starts)
    xs = np.column_stack([x[starts], x[ends]]).ravel()
    return xs, np.repeat(lo, 2), np.repeat(hi, 2)


def cell_lines(corners, x, ys, x_range, y_range, columns: float):
    """Lines ys [cells, n] over x, each in its unit cell (lower-left `corners`) showing
    x_range by y_range (y clipped to it), at most four points a pixel column of a cell
    `columns` pixels wide (`pixel_line`), a NaN break after every cell: (px, py) flat."""
    (x0, x1), (y0, y1) = x_range, y_range
    keep = (x >= x0) & (x <= x1)
    corner = np.asarray(corners, dtype=np.float64)
    xs, ys = pixel_line((x[keep] - x0) / (x1 - x0),
                        (np.clip(ys[:, keep], y0, y1) - y0) / (y1 - y0), columns)
    px = np.empty((len(corner), xs.size + 1))
    py = np.empty_like(px)
    px[:, :-1] = corner[:, :1] + xs
    py[:, :-1] = corner[:, 1:] + ys
    px[:, -1] = py[:, -1] = np.nan
    return px.ravel(), py.ravel()


def pixel_line(x: np.ndarray, ys: np.ndarray, columns: float) -> tuple[np.ndarray, np.ndarray]:
    """Lines ys [rows, n] over increasing x (fractions 0..1 of a `columns`-pixel width) with
    at most four points per pixel column: its first point, its lowest and highest (at the
    column's middle x) and its last, for every row (the M4 aggregation). A line through
    them colours the same pixel columns over the same heights as the whole line, and
    keeps both ends exactly. Fewer points than 4 x columns come back as they are."""
    if x.size <= 4 * max(columns, 1.0) or x[-1] <= x[0]:
        return x, ys
    starts, ends = _pixel_columns(x, columns)
    mid = (x[starts] + x[ends]) / 2
    xs = np.column_stack([x[starts], mid, mid, x[ends]]).ravel()
    out = np.stack([ys[:, starts], np.minimum.reduceat(ys, starts, axis=1),
                    np.maximum.reduceat(ys, starts, axis=1), ys[:, ends]], axis=2)
    return xs, out.reshape(ys.shape[0], -1)


def _pixel_columns(x: np.ndarray, columns: float) -> tuple[np.ndarray, np.ndarray]:
    """The first and last index of each run of increasing x that falls in one of
    `columns` equal pixel columns from x[0] to x[-1] (the last x in the last column)."""
    col = np.floor((x - x[0]) / (x[-1] - x[0]) * columns).astype(np.int64)
    col = np.minimum(col, math.ceil(columns) - 1)
    starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
    return starts, np.r_[starts[1:], x.size] - 1
