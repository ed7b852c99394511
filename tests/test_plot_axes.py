"""A plot's ranges, levels, category labels and wrapped footer lines (core.base.plot_axes),
without Qt."""

import math

import numpy as np

from detokgui.core.base.plot_axes import (
    category_ticks,
    cell_ticks,
    heatmap_ticks,
    label_step,
    log_ticks,
    nice_step,
    smaller_nice_step,
    symmetric_levels,
    tick_values,
    wrap_parts,
)


def test_nice_steps_are_one_two_five():
    assert nice_step(0.3) == 0.5
    assert nice_step(7.0) == 10.0
    assert nice_step(0.0) == 1.0
    assert smaller_nice_step(10.0) == 5.0
    assert smaller_nice_step(0.5) == 0.2


def test_symmetric_levels_ignore_non_finite_values():
    assert symmetric_levels(np.array([-0.5, 2.0, np.nan, np.inf])) == (-2.0, 2.0)
    assert symmetric_levels(np.zeros(3)) == (-1.0, 1.0)
    assert symmetric_levels(np.array([np.nan])) == (-1.0, 1.0)


def test_label_step_is_the_least_that_keeps_labels_apart():
    assert label_step(10, 200, 20) == 1
    assert label_step(100, 200, 20) == 10
    assert label_step(1, 10, 20) == 1
    assert label_step(50, 0, 20) == 1


def test_category_ticks_keep_the_selected_label():
    labels = [str(i) for i in range(10)]
    assert category_ticks(labels, 3) == [(0, "0"), (3, "3"), (6, "6"), (9, "9")]
    ticks = category_ticks(labels, 3, 0.5, keep=4)
    assert (4.5, "4") in ticks and (3.5, "3") not in ticks
    assert [p for p, _ in ticks] == sorted(p for p, _ in ticks)
    assert category_ticks(["a", "", "c"], 1) == [(0, "a"), (2, "c")]


def test_wrap_parts_joins_then_breaks_between_words():
    def fits(text):
        return len(text) <= 12

    assert wrap_parts(["ab", "", "cd"], fits) == ["ab · cd"]
    assert wrap_parts(["model x", "sigma mean"], fits) == ["model x", "sigma mean"]
    assert wrap_parts(["one two three four"], fits) == ["one two", "three four"]
    assert wrap_parts([], fits) == []


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
    assert cell_ticks(3) == [[(0.5, "0"), (1.5, "1"), (2.5, "2")], []]
    labelled, unlabelled = cell_ticks(45, lambda r: str(r * 7))
    assert unlabelled == [] and len(labelled) == 15  # every 3rd
    assert labelled[1] == (3.5, "21")


def test_tick_values_keep_off_the_ends_and_find_at_least_two():
    assert tick_values(0, 100, 20) == [0, 20, 40, 60, 80, 100]
    assert tick_values(0, 100, 20, margin=5) == [20, 40, 60, 80]
    assert tick_values(0, 10, 8, margin=1) == [2, 4, 6, 8]  # step 10 gives none: smaller
    assert tick_values(0, 10, 8, margin=1, floor=3) == [5]  # but none closer than 3 apart



def test_heatmap_ticks_thin_rows_and_alternate_many_columns():
    rows = [f"r{i}" for i in range(100)]
    cols = [f"c{i}" for i in range(20)]
    left, bottom, top = heatmap_ticks(rows, cols, 500, 400, 10, 40, limit=60)
    assert [p for p, _ in left[:3]] == [0.5, 2.5, 4.5]  # 100 rows of 10 px in 500 px
    assert top is not None and bottom[0] == (0.5, "c0") and top[0] == (1.5, "c1")
    left, bottom, top = heatmap_ticks(rows[:4], cols[:4], 500, 400, 10, 40, keep=(2, 3))
    assert top is None and len(left) == 4 and (3.5, "c3") in bottom
    left, _, _ = heatmap_ticks(rows, [], 5000, 400, 10, 40, limit=20)
    assert len(left) == 20  # at most `limit` labels


def test_window_x_range_shows_the_last_w_keys_up_to_i():
    from detokgui.core.base.plot_axes import window_x_range

    assert window_x_range(100, 32) == ((68.5, 102.56), 69, 101)
    assert window_x_range(5, 32) == ((-0.5, 6.0), 0, 6)  # at least one key of room
