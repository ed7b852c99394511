"""Tidy tables (header + rows, as `tables.write_csv` writes them) of the corpus counts and
the whole-vocabulary statistics (docs/math/text-side.md#c4-corpus-counts, docs/math/token-side.md).

Token columns hold each token's real text (`tokens.token_strings`: ' Korea' with its
leading space; the csv module quotes it where needed), never the on-screen form."""

from __future__ import annotations

import math

from detokgui.core.tables import Table
from detokgui.core.tokens import token_strings


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


def stats_table(layer, stats) -> Table:
    """head,query_id,query_token,self_rank,variance,top1_id,top1_token,top1_score for
    every row token of a `vocab_stats.HeadStats` (docs/math/token-side.md#a4-head-statistics);
    for direction "queries" the row is a key and its top-1 a query (columns
    key_id,key_token,...,top1_*)."""
    names = token_strings(layer.tokenizer, layer.n_vocab)
    side = "query" if stats.direction == "keys" else "key"

    def rows():
        for r, h in enumerate(stats.heads):
            sr, var = stats.self_rank[r].tolist(), stats.variance[r].tolist()
            ids, sc = stats.top_ids[r, :, 0].tolist(), stats.top_scores[r, :, 0].tolist()
            for u in range(len(sr)):
                if sr[u] > 0:
                    yield (h, u, names[u], sr[u], float(var[u]), ids[u], names[ids[u]],
                           float(sc[u]))

    return ["head", f"{side}_id", f"{side}_token", "self_rank", "variance", "top1_id",
            "top1_token", "top1_score"], rows()


def auroc_table(layer, result, no_bigram: str = "skip") -> Table:
    """head,query_id,query_token,auroc,positives,negatives of an `auroc.BigramAUROC`
    (docs/math/token-side.md#a5-bigram-auroc): positives = distinct keys v with c(v, u) > 0
    (each weighted by its count in the AUROC), negatives = V - positives. "skip" lists the
    query tokens with at least one bigram; "zero" every token, AUROC 0 for those without (the
    authors' convention)."""
    names = token_strings(layer.tokenizer, result.n_vocab)
    values = result.values(no_bigram)
    pos, neg = result.positives.tolist(), result.negatives.tolist()

    def rows():
        for r, h in enumerate(result.heads):
            v = values[r].tolist()
            for u, a in enumerate(v):
                if not math.isnan(a):
                    yield (h, u, names[u], float(a), pos[u], neg[u])

    return ["head", "query_id", "query_token", "auroc", "positives", "negatives"], rows()


def frequency_table(layer, fs) -> Table:
    """head,token_id,token,count,t_e of a `frequency.FrequencyStats` for every token
    (docs/math/token-side.md#a6-self-assertion-and-frequency): corpus count and
    T_e(v) = b^QK_h e_v^T / s_v."""
    names = token_strings(layer.tokenizer, layer.n_vocab)
    counts = fs.counts.tolist()

    def rows():
        for r, h in enumerate(fs.heads):
            te = fs.t_e[r].tolist()
            for v, c in enumerate(counts):
                yield (h, v, names[v], c, float(te[v]))

    return ["head", "token_id", "token", "count", "t_e"], rows()


def neighbours_table(layer, nb) -> Table:
    """rank,token_id,token,cosine of a `neighbours.Neighbours`
    (docs/math/token-side.md#a7-token-space-neighbours), best first."""
    names = token_strings(layer.tokenizer, layer.n_vocab)
    rows = ((r, t, names[t], float(c)) for r, (t, c) in enumerate(zip(nb.ids, nb.cosines), 1))
    return ["rank", "token_id", "token", "cosine"], rows
