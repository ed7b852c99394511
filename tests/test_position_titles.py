"""Titles and notes of the position-side plots (core.position_side.titles), without Qt."""

import numpy as np

from detokgui.core.position_side import titles


def test_bias_titles_name_the_figure_sigma_and_convention():
    assert titles.tp_title(True, "paper").endswith("(Fig 8)")
    assert "95% of tokens; paper convention" in titles.tp_title(False, "paper")
    assert titles.tp_title(False, "mean-sigma").endswith("band: σ min…max; mean-σ convention")
    assert titles.tpp_title(7, {"mean": "#111", "max": "#222"}, "paper") == (
        "<b>Position-position term</b> T<sub>pp</sub>(i = 7, j) (Fig 3-B) — σ<sub>i</sub> "
        "<span style='color:#111'>mean</span>, <span style='color:#222'>max</span>; "
        "paper convention")
    assert titles.total_title(7, "max", "mean-sigma") == (
        "<b>Positional bias</b> T<sub>pp</sub> + T<sub>p</sub> at i = 7 (Fig 3-C) — "
        "σ max, mean-σ convention")
    assert titles.sigma_note("none", "paper") == "no LayerNorm"


def test_position_statistics_titles_and_note():
    title = titles.last_positions_title([5, 6, 7], ["#a", "#b", "#c"])
    assert title.endswith("(Fig 7), for <span style='color:#a'>i = 5</span> "
                          "<span style='color:#b'>i = 6</span> "
                          "<span style='color:#c'><b>i = 7</b></span>")
    assert "over its 64 dimensions (Fig 6 right)" in titles.variance_title(64)
    var = np.array([8.0, 1.0, 2.0, 0.5])  # median 1.5
    assert titles.variance_note(var) == ("Var(p_0) = 8 (5.3× the median), "
                                         "Var(p_3) = 0.5 (0.33× the median)")
