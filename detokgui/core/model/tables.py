"""Tables of the model itself: the six terms of a token sequence and the sigma summary
(docs/math/terms.md, docs/math/sigma.md)."""

from __future__ import annotations

import torch

from detokgui.core.base.tables import Table
from detokgui.core.model.terms import TERM_NAMES, causal_softmax


def terms_table(layer, token_ids, heads=None) -> Table:
    """head,i,j,term,value for j <= i; term is one of the six names or `attention`. heads:
    the heads written (None: all)."""
    terms = layer.six_terms(token_ids)
    total = sum(terms[k] for k in TERM_NAMES)
    named = {**terms, "attention": causal_softmax(total, layer.temperature)}
    n = total.shape[-1]
    ii, jj = torch.tril_indices(n, n)
    ii_l, jj_l = ii.tolist(), jj.tolist()

    hs = range(layer.n_heads) if heads is None else heads

    def rows():
        for h in hs:
            for name, t in named.items():
                vals = t[h][ii, jj].tolist()
                for i, j, v in zip(ii_l, jj_l, vals):
                    yield (h, i, j, name, float(v))

    return ["head", "i", "j", "term", "value"], rows()

def sigma_summary_table(layer) -> Table:
    """position,mean,min,max of sigma(e_v + p_j) over the vocabulary."""
    st = layer.sigma_stats()
    cols = [st.pos_mean.tolist(), st.pos_min.tolist(), st.pos_max.tolist()]
    rows = ((j, float(a), float(b), float(c)) for j, (a, b, c) in enumerate(zip(*cols)))
    return ["position", "mean", "min", "max"], rows
