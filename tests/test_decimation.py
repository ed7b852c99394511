"""Lines and bands reduced to a plot's pixel columns (core.base.decimation): the same
pixels as the whole line or band, both ends exact."""

import numpy as np
import pytest

from detokgui.core.base.decimation import pixel_envelope, pixel_line


def test_pixel_line_keeps_each_columns_ends_and_extremes():
    x = np.linspace(0, 1, 10)
    ys = np.array([[0, -3, 1, 1, 2, 2, -1, 0, 7, 5.0], [1, 1, 1, 1, 1, 2, 2, 2, 2, 2]])
    xs, out = pixel_line(x, ys, 2.0)  # 10 points over 2 columns
    assert xs.tolist() == pytest.approx([0, 2 / 9, 2 / 9, 4 / 9, 5 / 9, 7 / 9, 7 / 9, 1])
    assert out.tolist() == [[0, -3, 2, 2, 2, -1, 7, 5], [1, 1, 1, 1, 2, 2, 2, 2]]
    same = pixel_line(x, ys, 3.0)  # no more than four points a column: as given
    assert same[0] is x and same[1] is ys


def test_pixel_envelope_keeps_each_columns_extremes():
    x = np.arange(10.0)
    lo = np.array([0, -3, 1, 1, 2, 2, -1, 0, 0, 5.0])
    hi = lo + 1
    xs, elo, ehi = pixel_envelope(x, lo, hi, 2.0)  # 10 points over 2 columns
    assert xs.tolist() == [0, 4, 5, 9]
    assert elo.tolist() == [-3, -3, -1, -1] and ehi.tolist() == [3, 3, 6, 6]
    same = pixel_envelope(x, lo, hi, 5.0)  # no more than two points a column: as given
    assert all(a is b for a, b in zip(same, (x, lo, hi)))
