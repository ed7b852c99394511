"""The corpus-text plots' titles (`core.text_side.titles`): what they name, in the colours
and with the legend they are given."""

from types import SimpleNamespace

from detokgui.core.model.conventions import temperature_label
from detokgui.core.text_side.titles import empirical_title, sinks_title


def test_empirical_title_names_each_curve_in_its_colour(tiny_layer):
    res = SimpleNamespace(i=7, windows=12, convention="paper")
    colors = {"empirical": "#111111", "predicted": "#222222", "pattern": "#333333"}
    title = empirical_title(tiny_layer, res, colors)
    assert title.startswith("<b>Observed vs predicted attention</b> at i = 7 (Fig 3-E) — ")
    assert "<span style='color:#111111'>mean over 12 windows</span>" in title
    assert "<span style='color:#222222'>position-only prediction</span>" in title
    assert f"(paper convention, {temperature_label(tiny_layer)}, dashed)" in title
    assert title.endswith("<span style='color:#333333'>mean positional pattern</span> (dotted)")
    assert "(log<sub>10</sub>) at i = 7" in empirical_title(tiny_layer, res, colors, log=True)


def test_sinks_title_says_what_is_shown_and_what_position_0_is():
    split = sinks_title(SimpleNamespace(bos=True), True, "LEGEND")
    assert split.startswith("<b>Attention sinks</b>: logit advantage of key position 0")
    assert split.endswith(" — LEGEND — position 0 = the prepended BOS token")
    plain = sinks_title(SimpleNamespace(bos=False), False)
    assert "attention to key position 0 over query position i" in plain
    assert plain.endswith("(grey, dashed) — position 0 = each text's first token")
