"""Ticks of a log10 axis (core.base.axis_ticks): labels at 1, 2 and 5 x 10^k only."""

import math

from detokgui.core.base.axis_ticks import log_ticks


def test_log_ticks_label_one_two_five_and_mark_the_rest():
    major, minor = log_ticks(0.3, 40.0)
    assert [t for _, t in major] == ["0.2", "0.5", "1", "2", "5", "10", "20", "50"]
    assert all(t == "" for _, t in minor)
    assert (math.log10(3), "") in minor and (math.log10(60), "") in minor
    positions = [p for p, _ in major + minor]
    assert min(positions) >= math.log10(0.3 / 1.5) and max(positions) <= math.log10(60)


def test_log_ticks_of_a_flat_or_non_positive_range():
    major, _ = log_ticks(0.0, 0.0)  # clamped to 1e-30
    assert major and all(p < -20 for p, _ in major)
    assert log_ticks(5.0, 1.0) == log_ticks(5.0, 5.0)


def test_cell_ticks_label_at_most_twenty_cells_at_their_middles():
    from detokgui.core.base.axis_ticks import cell_ticks

    assert cell_ticks(3) == [[(0.5, "0"), (1.5, "1"), (2.5, "2")], []]
    labelled, unlabelled = cell_ticks(45, lambda r: str(r * 7))
    assert unlabelled == [] and len(labelled) == 15  # every 3rd
    assert labelled[1] == (3.5, "21")
