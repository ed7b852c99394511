"""Exported tables hold each token's real string, never the on-screen form."""

import csv

import torch

from detokgui.core.base.tables import write_csv
from detokgui.core.model.tokens import SPACE_MARK
from detokgui.core.position_side import positional
from detokgui.core.position_side.tables import (
    pattern_table,
    slope_extremes_table,
    token_position_curve_table,
)
from detokgui.core.token_side import affinity
from detokgui.core.token_side.tables import heatmap_table, topk_table


def _token_cells(table):
    header, rows = table
    rows = list(rows)
    cols = [i for i, h in enumerate(header) if h.endswith("token")]
    assert cols, header
    return [row[i] for row in rows for i in cols]


def test_every_table_with_tokens_writes_real_strings(tiny_layer, tmp_path):
    L = tiny_layer
    korea = L.tokenizer.encode(" Korea")[0]
    newline = L.tokenizer.encode("\n")[0]
    ids = [korea, newline, L.tokenizer.encode(" North")[0]]
    slopes = positional.token_position_slopes(L)
    built = {
        "topk": topk_table(L, affinity.topk_keys(L, korea, 5)),
        "topk queries": topk_table(L, [affinity.topk_queries(L, newline, 5)]),
        "heatmap": heatmap_table(L, affinity.affinity_block(L, ids, ids, heads=[0]), [0],
                                        ids, ids),
        "pattern": pattern_table(L, positional.positional_pattern(L, korea, 9)),
        "slope extremes": slope_extremes_table(L, positional.slope_extremes(slopes, 4)),
        "slope curve": token_position_curve_table(L, korea, [1]),
    }
    for name, table in built.items():
        cells = _token_cells(table)
        assert all(isinstance(c, str) for c in cells), name
        assert not any(SPACE_MARK in c or c.startswith("\\n") for c in cells), name
    assert " Korea" in _token_cells(topk_table(L, affinity.topk_keys(L, korea, 1)))
    assert "\n" in _token_cells(heatmap_table(
        L, affinity.affinity_block(L, ids, ids, heads=[0]), [0], ids, ids))
    # ... and the CSV writer quotes them so that they read back exactly
    out = tmp_path / "hm.csv"
    write_csv(out, heatmap_table(L, torch.zeros(1, 3, 3), [0], ids, ids))
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["key_token"] for r in rows[:3]] == [" Korea", "\n", " North"]
