"""Tables of the token side (docs/math/token-side.md): top-k, heatmaps, whole-vocabulary
head statistics, bigram AUROC, self-assertion against frequency, neighbours."""

from __future__ import annotations

import math

from detokgui.core.base.tables import Table
from detokgui.core.model.tokens import token_string, token_strings


def topk_table(layer, result) -> Table:
    """<anchor>_id,<anchor>_token,head,rank,<ranked>_id,<ranked>_token,score for one
    `affinity.TopK` or a list of them (all of one direction): for direction "keys" the
    anchor is the query token and the ranked tokens are keys, for "queries" the reverse."""
    results = [result] if not isinstance(result, (list, tuple)) else list(result)
    directions = {r.direction for r in results}
    if len(directions) > 1:
        raise ValueError("topk_table takes results of one direction")
    keys = directions.pop() == "keys" if results else True
    anchor, ranked = ("query", "key") if keys else ("key", "query")
    tok = layer.tokenizer

    def rows():
        for res in results:
            a_id, a_str = res.anchor, token_string(tok, res.anchor)
            for r, h in enumerate(res.heads):
                for rank, (tid, score) in enumerate(
                    zip(res.ids[r].tolist(), res.scores[r].tolist()), start=1
                ):
                    yield (a_id, a_str, h, rank, tid, token_string(tok, tid), float(score))

    return [f"{anchor}_id", f"{anchor}_token", "head", "rank", f"{ranked}_id",
            f"{ranked}_token", "score"], rows()

def heatmap_table(layer, values, heads, query_ids, key_ids) -> Table:
    """head,query_index,query_id,query_token,key_index,key_id,key_token,value; `values`
    [heads, queries, keys] (a numpy array or a tensor)."""
    tok = layer.tokenizer
    qs = [(i, t, token_string(tok, t)) for i, t in enumerate(query_ids)]
    ks = [(i, t, token_string(tok, t)) for i, t in enumerate(key_ids)]

    def rows():
        for r, h in enumerate(heads):
            block = values[r].tolist()
            for qi, qt, qs_ in qs:
                for ki, kt, ks_ in ks:
                    yield (h, qi, qt, qs_, ki, kt, ks_, float(block[qi][ki]))

    header = ["head", "query_index", "query_id", "query_token", "key_index", "key_id",
              "key_token", "value"]
    return header, rows()

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

def sorted_block_table(layer, block) -> Table:
    """head,variance_rank,query_id,query_token,score_rank,key_id,key_token,t_ee for every
    entry of a `vocab_stats.SortedBlock` (ranks 1-based); for direction "queries" the row
    token is a key and the column token a query (key_id,key_token,...,query_*)."""
    names = token_strings(layer.tokenizer, layer.n_vocab)
    row_side, col_side = ("query", "key") if block.direction == "keys" else ("key", "query")

    def rows():
        for i in range(block.values.shape[0]):
            u = int(block.row_ids[i])
            for j in range(block.values.shape[1]):
                v = int(block.key_ids[i, j])
                yield (block.head, int(block.row_ranks[i]) + 1, u, names[u],
                       int(block.col_ranks[j]) + 1, v, names[v], float(block.values[i, j]))

    return ["head", "variance_rank", f"{row_side}_id", f"{row_side}_token", "score_rank",
            f"{col_side}_id", f"{col_side}_token", "t_ee"], rows()

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
