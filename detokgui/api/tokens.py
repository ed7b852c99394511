"""The token side and the six terms (`detokgui export terms|sigma|topk|heatmap|neighbours`;
docs/math/token-side.md): one function per analysis, each a DataFrame with the CLI's
columns, built by the same table functions (`core.*.tables`)."""

from __future__ import annotations

from detokgui.api.arguments import heads_of, single_token, single_tokens, token_ids
from detokgui.api.frames import analysis, tabled
from detokgui.api.jobs import ProgressArg, sigma_tables
from detokgui.core.base.errors import InputError


def sigma_choice(sigma):
    """"mean" (sigma per token = mean over positions of sigma(e_v + p_j)), "none" (raw,
    without LayerNorm), or a `core.token_side.affinity.SigmaChoice`."""
    from detokgui.core.model.conventions import SigmaChoice

    return sigma if isinstance(sigma, SigmaChoice) else SigmaChoice(sigma)


@analysis("terms")
def terms(layer, text, *, heads=None):
    """The six terms and the attention of a text (a string, or token ids):
    head,i,j,term,value for j <= i (`export terms`; docs/math/terms.md). term is one of
    ee, ep, pe, pp, e, p or "attention" = softmax_j(sum of the six / temperature).
    heads: a head, a list of heads, or None (all)."""
    from detokgui.core.model.tables import terms_table

    ids = token_ids(layer, text)
    hs = heads_of(layer, heads)
    return tabled(terms_table(layer, ids, hs), tokens=ids, heads=hs,
                  temperature=float(layer.temperature))


@analysis("sigma")
def sigma(layer, *, progress: ProgressArg = True):
    """position,mean,min,max of sigma(e_v + p_j) over the vocabulary v, per position j
    (`export sigma`; docs/math/sigma.md)."""
    from detokgui.core.model.tables import sigma_summary_table

    sigma_tables(layer, progress)
    return tabled(sigma_summary_table(layer))


@analysis("topk")
def topk(layer, token, k: int = 10, *, heads=None, sigma: str = "mean",
         direction: str = "keys", progress: ProgressArg = True):
    """The k keys with the highest T_ee(u, v) = (e_u Wq_h)(e_v Wk_h)^T / (s_u s_v) for the
    query token u, per head (`export topk`; docs/math/token-side.md#a2-top-k-affinity):
    query_id,query_token,head,rank,key_id,key_token,score.

    token: a token id, or a text that is exactly one token (" Korea" with its leading
    space; "Korea" is two tokens, K|orea, and is refused with that said); a list of them
    gives one block each. direction "queries": `token` is a key and the queries that
    score highest with it are ranked (columns key_id,key_token,...,query_id,query_token).
    heads: a head, a list of heads, or None (all). sigma: "mean" (default) or "none"."""
    from detokgui.core.base.checks import check_choice
    from detokgui.core.token_side.affinity import topk_keys, topk_queries
    from detokgui.core.token_side.tables import topk_table

    direction = check_choice("direction", direction, ("keys", "queries"))
    rank = topk_keys if direction == "keys" else topk_queries
    choice, hs = sigma_choice(sigma), heads_of(layer, heads)
    ids = single_tokens(layer, token, "query" if direction == "keys" else "key")
    if choice.convention == "mean":
        sigma_tables(layer, progress)
    results = [rank(layer, t, k, choice, hs) for t in ids]
    return tabled(topk_table(layer, results),
                  tokens=ids, direction=direction, k=k, sigma=choice.convention,
                  sigma_label=choice.label(), heads=hs)


@analysis("heatmap")
def heatmap(layer, tokens, *, heads=0, sigma: str = "mean", progress: ProgressArg = True):
    """T_ee between every pair of the tokens of a text (a string, or token ids), per head
    (`export heatmap`, default head 0): head,query_index,query_id,query_token,key_index,
    key_id,key_token,value. At most `core.token_side.affinity.MAX_HEATMAP_TOKENS` tokens."""
    from detokgui.core.token_side.affinity import MAX_HEATMAP_TOKENS, affinity_block
    from detokgui.core.token_side.tables import heatmap_table

    hs = heads_of(layer, heads)
    ids = token_ids(layer, tokens)
    if len(ids) > MAX_HEATMAP_TOKENS:
        raise InputError(f"The text has {len(ids)} tokens; the heatmap takes at most "
                         f"{MAX_HEATMAP_TOKENS} ({MAX_HEATMAP_TOKENS}^2 cells): shorten it.")
    choice = sigma_choice(sigma)
    if choice.convention == "mean":
        sigma_tables(layer, progress)
    values = affinity_block(layer, ids, ids, choice, hs)
    return tabled(heatmap_table(layer, values, hs, ids, ids),
                  tokens=ids, sigma=choice.convention, sigma_label=choice.label(), heads=hs)


@analysis("neighbours")
def neighbours(layer, token, k: int = 10, *, minus=None, plus=None, centred: bool = False):
    """The k nearest tokens to `token` by cosine in the token embedding E, or to the
    analogy token - minus + plus (`export neighbours`;
    docs/math/token-side.md#a7-token-space-neighbours): rank,token_id,token,cosine.
    Tokens as ids or single-token texts; `centred` subtracts the mean embedding first."""
    from detokgui.core.base.checks import check_count
    from detokgui.core.token_side.neighbours import analogy, nearest_tokens
    from detokgui.core.token_side.tables import neighbours_table

    k = check_count(k, "k")
    u = single_token(layer, token, "token")
    if (minus is None) != (plus is None):
        raise InputError("An analogy needs both minus and plus.")
    if minus is None:
        nb = nearest_tokens(layer, u, k, centred)
        shown = {"token_id": u}
    else:
        b, c = single_token(layer, minus, "minus"), single_token(layer, plus, "plus")
        nb = analogy(layer, u, b, c, k, centred)
        shown = {"token_id": u, "minus_id": b, "plus_id": c}
    return tabled(neighbours_table(layer, nb), **shown, k=k, centred=bool(centred))
