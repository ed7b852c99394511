"""A plot's ranges, levels, category labels and wrapped footer lines (core.base.plot_axes),
without Qt."""

import numpy as np

from detokgui.core.base.plot_axes import (
    category_ticks,
    label_step,
    nice_step,
    smaller_nice_step,
    symmetric_levels,
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
