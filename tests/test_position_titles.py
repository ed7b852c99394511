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


def test_hover_lines_and_slope_titles():
    from types import SimpleNamespace as NS

    row = np.array([[0.5, 0.25, 0.125]])
    band = NS(raw=row, mean=row, lower=row / 2, upper=row * 2, convention="paper")
    res = NS(heads=[3], i=1, band=band, b3_sigma="mean", convention="paper",
             lines={"mean": NS(t_pp=row), "max": NS(t_pp=row)}, b3=NS(total=row, softmax=row))
    assert titles.bias_hover(res, "tp", 3, 2) == (
        "head 3 · i = 1 · j = 2: T_p = 0.125, band 0.0625 … 0.25 (paper convention)"
        " · masked for this query (j > i)")
    assert titles.bias_hover(res, "tp", 3, 0, raw=True) == (
        "head 3 · i = 1 · j = 0: raw b^QK p_j = 0.5")
    assert titles.bias_hover(res, "total", 3, 2).endswith(
        "masked: a query at i attends to keys j ≤ i only")
    assert titles.bias_hover(res, "tpp", 3, 1).endswith("T_pp σ_i mean 0.25, σ_i max 0.25")
    assert titles.bias_hover(res, "softmax", 3, 1).endswith(
        "softmax = 0.25 (σ mean, paper convention)")
    pattern = NS(heads=[0, 3], n=2, pattern=np.vstack([row, row * 2]))
    assert titles.pattern_hover(pattern, 1, [3]) == (
        "key j = 1 (1 back)   head 3: 0.5   — click to set n = 1")
    last = NS(heads=[3], positions=[1, 2], values=np.array([[[1.0, 2.0, np.nan], [3, 4, 5]]]))
    assert titles.last_positions_hover(last, 3, 2) == "head 3 · j = 2: raw T_pp i = 2: 5"
    assert titles.slopes_title(1, 1000, "<a>").endswith("head 1, 1,000 tokens u")
    assert "red: &lt;a&gt; 0.5</span>" in titles.slopes_title(1, 1000, "<a>", 0.5)
    assert "u = &lt;a&gt;, head 2: slope 0.5 per position" in titles.curve_title("<a>", 2, 0.5)
