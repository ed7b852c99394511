"""Tables of the corpus counts (docs/math/text-side.md#c4-corpus-counts)."""

from __future__ import annotations

from detokgui.core.base.tables import Table
from detokgui.core.model.tokens import token_strings


def counts_table(tokenizer, counts) -> Table:
    """token_id,token,count: the corpus count of every token id 0..V-1
    (docs/math/text-side.md#c4-corpus-counts)."""
    names = token_strings(tokenizer, counts.n_vocab)
    uni = counts.unigrams.tolist()
    return ["token_id", "token", "count"], ((t, names[t], uni[t]) for t in range(len(uni)))

def bigrams_table(counts) -> Table:
    """prev_id,next_id,count: every bigram c(prev, next) > 0, by prev then next
    (docs/math/text-side.md#c4-corpus-counts). InputError when the corpus has no bigram."""
    counts.require_bigrams("bigram table")
    prev, nxt, c = counts.bigram_triples()
    return ["prev_id", "next_id", "count"], zip(prev.tolist(), nxt.tolist(), c.tolist())
