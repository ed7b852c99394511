"""The tests' comparison of CSV rows from two code paths (tests/approx.py) accepts float32
rounding and swaps of tied items, and nothing more."""

import pytest
from approx import FLOAT32_RTOL, assert_rows_close

RANKED = ("score", "rank", ("key_id",))


def table(*lists):
    """Rows of ranked lists: one (head, [(key_id, score), ...]) per list."""
    return [{"head": str(h), "rank": str(r), "key_id": str(k), "score": repr(s)}
            for h, items in lists for r, (k, s) in enumerate(items, start=1)]


WANT = table((0, [(7, 5.0), (3, 4.0), (9, 2.0)]), (1, [(4, -1.0), (2, -1.5), (8, -3.0)]))


def test_float_columns_within_the_tolerance_of_their_scale():
    tol = FLOAT32_RTOL * 5.0  # the score column's largest |value|
    got = table((0, [(7, 5.0 - tol / 2), (3, 4.0 + tol / 2), (9, 2.0)]),
                (1, [(4, -1.0 + tol), (2, -1.5), (8, -3.0)]))
    assert_rows_close(got, WANT, ["score"])
    assert_rows_close(got, WANT, ["score"], ranked=RANKED)
    off = table((0, [(7, 5.0), (3, 4.0), (9, 2.0)]), (1, [(4, -1.0), (2, -1.5 - 2 * tol),
                                                         (8, -3.0)]))
    with pytest.raises(AssertionError):
        assert_rows_close(off, WANT, ["score"])
    with pytest.raises(AssertionError):
        assert_rows_close(WANT, WANT[:-1], ["score"])


def test_other_columns_exactly():
    with pytest.raises(AssertionError):
        assert_rows_close(table((0, [(7, 5.0), (3, 4.0), (9, 2.0)]),
                                (2, [(4, -1.0), (2, -1.5), (8, -3.0)])), WANT, ["score"])
    with pytest.raises(AssertionError):  # a float column not named as one is text
        assert_rows_close([{"score": "1.0"}], [{"score": "1"}])


def test_tied_items_may_swap_and_the_last_may_be_the_next_in_line():
    tie = table((0, [(7, 5.0), (3, 4.0), (9, 4.0 - 1e-4)]))
    swapped = table((0, [(7, 5.0), (9, 4.0 - 1e-4), (3, 4.0)]))
    assert_rows_close(swapped, tie, ["score"], ranked=RANKED)
    with pytest.raises(AssertionError):  # exact ids without `ranked`
        assert_rows_close(swapped, tie, ["score"])
    last = table((0, [(7, 5.0), (3, 4.0), (11, 4.0 - 3e-4)]))  # 11 was fourth
    assert_rows_close(last, tie, ["score"], ranked=RANKED)


def test_untied_items_may_not_swap_or_change():
    swapped = table((0, [(3, 4.0), (7, 5.0), (9, 2.0)]), (1, [(4, -1.0), (2, -1.5), (8, -3.0)]))
    with pytest.raises(AssertionError):
        assert_rows_close(swapped, WANT, ["score"], ranked=RANKED)
    with pytest.raises(AssertionError):  # the last item, but its score does not tie
        assert_rows_close(table((0, [(7, 5.0), (3, 4.0), (9, 2.0)]),
                                (1, [(4, -1.0), (2, -1.5), (6, -2.0)])), WANT, ["score"],
                          ranked=RANKED)
    with pytest.raises(AssertionError):  # a tie, but with an item that was not shown, mid-list
        assert_rows_close(table((0, [(7, 5.0), (3, 4.0), (9, 2.0)]),
                                (1, [(4, -1.0), (6, -1.5), (8, -3.0)])), WANT, ["score"],
                          ranked=RANKED)
