"""The head classification's table texts (`core.position_side.class_texts`): a column for
every measured criterion of `HeadClassification.rows()`, the reason in each cell's tooltip,
the rules with where they were measured."""

from detokgui.core.position_side import positional as pos
from detokgui.core.position_side.class_texts import CLASS_COLUMNS, row_tip, rules_line


def test_columns_tips_and_rules(tiny_layer):
    c = pos.classify_heads(tiny_layer, n=40, sample=6, seed=1)
    row = c.rows()[2]
    assert [key for key, *_ in CLASS_COLUMNS] == [k for k in row if k != "reason"]
    assert row_tip(row) == f"head 2: {c.labels[2]} — {c.reasons[2]}"
    assert rules_line(None) == "<b>Head classification</b>"
    line = rules_line(c)
    assert line.startswith("<b>Head classification</b> at n = 40, mean over 6 sampled")
    assert f"last-{pos.RECENT_WINDOW} weight ≥ {pos.DETOK_MIN_RECENT_WEIGHT}" in line
