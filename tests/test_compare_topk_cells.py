"""core.compare.views.other_rank: the "its rank in the other model" cells of Compare (1)."""

from detokgui.core.compare.views import other_rank


def test_other_rank_cells():
    row = {"key_a": 5, "key_a_in_other": 7, "rank_a_in_other": 3,
           "key_b": 6, "key_b_in_other": None, "rank_b_in_other": None}
    assert other_rank(row, "a", "missing in B") == 3
    assert other_rank(row, "b", "missing in A") == "missing in A"
    assert other_rank({**row, "rank_a_in_other": None}, "a", "m") == "–"  # no query in B
    assert other_rank({**row, "key_a": None}, "a", "m") == ""
