"""core.text_side.contextual_neurons: the Contextual neurons view's ranking rows (C5)."""

import pytest

from detokgui.core.base.progress import run
from detokgui.core.model.tokens import display_token
from detokgui.core.text_side import circuits
from detokgui.core.text_side.contextual_neurons import LISTED, TOP, iter_contextual_ranking


def test_ranking_rows(tiny_layer):
    res = run(iter_contextual_ranking(tiny_layer, (0, 2), 3))
    rank = circuits.rank_neurons(tiny_layer, circuits.contextual_circuit(tiny_layer, [0, 2]),
                                 TOP, 3)
    assert res.heads == [0, 2] and len(res.rows) == len(rank.order)
    first = res.rows[0]
    m = int(rank.order[0])
    assert first[:2] == (1, m)
    assert first[2:4] == pytest.approx((float(rank.size[m]), float(rank.mean[m])), rel=1e-6)
    tok = tiny_layer.tokenizer
    assert first[4] == " ".join(display_token(tok, int(t)) for t in rank.top_ids[0][:LISTED])
    assert first[5] == " ".join(display_token(tok, int(t)) for t in rank.bottom_ids[0][:LISTED])
    listed = set(rank.top_neurons.tolist())
    assert all(r[4] == r[5] == "" for r in res.rows if r[1] not in listed)
