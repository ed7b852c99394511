"""core.token_side.heatmap: the token sets, values and titles of the affinity heatmap (A3)."""

import numpy as np

from detokgui.core.model.conventions import SigmaChoice
from detokgui.core.token_side import affinity
from detokgui.core.token_side.heatmap import (
    MAX_TOKENS,
    affinity_heatmap,
    heatmap_title,
    heatmap_tokens,
)

RAW = SigmaChoice("none")


def test_token_sets(tiny_layer):
    sigma = SigmaChoice("mean")
    text = list(range(MAX_TOKENS + 5))
    assert heatmap_tokens(tiny_layer, "text", text, -1, 0, None, 3, 0) == text[:MAX_TOKENS]
    sample = heatmap_tokens(tiny_layer, "sample", (), -1, 0, None, 7, 3)
    assert len(sample) == 7 and sample == heatmap_tokens(tiny_layer, "sample", (), -1, 0,
                                                         None, 7, 3)
    assert heatmap_tokens(tiny_layer, "topk", (), -1, 0, sigma, 5, 0) == []
    top = heatmap_tokens(tiny_layer, "topk", (), 11, 2, sigma, 5, 0)
    keys = affinity.topk_keys(tiny_layer, 11, 4, sigma, heads=[2]).ids[0].tolist()
    assert top[0] == 11 and top[1:] == [t for t in keys if t != 11]


def test_values_and_titles(tiny_layer):
    tokens = [5, 9, 13]
    res = affinity_heatmap(tiny_layer, tokens, (1, 3), RAW)
    block = affinity.affinity_block(tiny_layer, tokens, tokens, RAW, (1, 3)).numpy()
    assert res.heads == [1, 3] and res.values.shape == (2, 3, 3)
    np.testing.assert_array_equal(res.values, block)
    assert res.value_name == "raw e W^QK e^T" and "(Fig 12)" in heatmap_title(res, 1)
    assert res.describe(1, 0, 2) == (f"head 3  query {res.labels[0]!r}  key {res.labels[2]!r}  "
                                      f"value {block[1, 0, 2]:.4g}")
    empty = affinity_heatmap(tiny_layer, [], (0,), SigmaChoice("mean"))
    assert empty.values is None and empty.value_name == "T_ee"
    assert heatmap_title(empty, None).startswith("Token-token affinity T_ee, all heads (Fig 2-B)")
