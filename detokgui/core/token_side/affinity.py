"""Token-token affinity T_ee over the vocabulary (docs/math/token-side.md#a2-top-k-affinity).

    T_ee(u, v) = (e_u Wq_h)(e_v Wk_h)^T / (s_u s_v)

Token-only views need a sigma per token: `SigmaChoice` "mean" (default), "at" (positions
i, j) or "none", as defined in `core.model.conventions`
(docs/math/sigma.md#token-only-views).

A top-k over all V keys is one [V, d] @ [d, H] product: a_h = (e_u Wq_h) Wk_h^T is
formed first, so neither W^QK_h (d x d) nor any V x V matrix is built.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from detokgui.core.base.checks import (
    check_count,
    check_heads,
    check_token,
    query_tensor,
    token_tensor,
)
from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import Job, Progress
from detokgui.core.model.conventions import SigmaChoice, token_sigmas, token_sigmas_of
from detokgui.core.model.tokens import token_string
from detokgui.core.token_side.vocab_pass import column_factor, row_factor

#: The token sigma of the token views unless one is given: the mean over positions.
DEFAULT_SIGMA = SigmaChoice()
#: The most tokens a T_ee heatmap takes (GUI and CLI): N^2 cells per head, and a CSV of
#: N^2 rows per head; 20,000 tokens would need 1.6 GB per head (and 30 GB of CSV).
MAX_HEATMAP_TOKENS = 400


@dataclass
class TopK:
    """Top-k result for one anchor token over all heads: ids/scores [len(heads), k]."""

    anchor: int
    direction: str  # "keys": best keys for a query; "queries": best queries for a key
    heads: list[int]
    ids: torch.Tensor
    scores: torch.Tensor
    sigma: SigmaChoice


def resulting_sequence(tokenizer, res: TopK, token: int) -> str:
    """The paper's "resulting sequence" of a ranked token: key then query as real strings,
    e.g. key ' North' + query ' Korea' -> ' North Korea' (decode would drop a
    sentencepiece token's leading space); newlines shown as \\n."""
    key, query = (token, res.anchor) if res.direction == "keys" else (res.anchor, token)
    if tokenizer is None:
        return f"<{key}><{query}>"
    return (token_string(tokenizer, key) + token_string(tokenizer, query)).replace("\n", "\\n")


def _topk(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    k = min(check_count(k, "k"), scores.shape[1])
    vals, idx = torch.topk(scores, k, dim=1)
    return vals, idx


def _topk_against(layer, anchor: int, direction: str, k: int, sigma: SigmaChoice,
                  heads) -> TopK:
    """Rank the whole vocabulary against one fixed token. direction "keys": the anchor is
    the query u and every v is scored by T_ee(u, v); "queries": the anchor is the key v
    and every u is scored by T_ee(u, v). One [V, d] @ [d, H] product."""
    t = check_token(layer, anchor)
    hs = check_heads(layer, heads)
    check_count(k, "k")
    if not isinstance(sigma, SigmaChoice):
        raise InputError(f"sigma must be a SigmaChoice, not {sigma!r}.")
    if direction == "keys":
        fixed, ranked, fixed_side, ranked_side = layer.Wq, layer.Wk, "query", "key"
    else:
        fixed, ranked, fixed_side, ranked_side = layer.Wk, layer.Wq, "key", "query"
    f = torch.matmul(layer.E[t], fixed[hs])  # [h, d']
    a = torch.einsum("hk,hdk->dh", f, ranked[hs])  # [d, h]
    s = (layer.E @ a).T  # [h, V]
    s_ranked = token_sigmas(layer, sigma, ranked_side)
    if s_ranked is not None:
        s_t = token_sigmas_of(layer, sigma, fixed_side, torch.tensor([t], device=layer.device))
        s.div_(s_ranked).div_(s_t)
    vals, idx = _topk(s, k)
    return TopK(t, direction, hs, idx.cpu(), vals.cpu(), sigma)


def topk_keys(layer, query: int, k: int = 10, sigma: SigmaChoice = DEFAULT_SIGMA, heads=None) -> TopK:
    """Keys v with the highest T_ee(query, v), per head."""
    return _topk_against(layer, query, "keys", k, sigma, heads)


def topk_queries(
    layer, key: int, k: int = 10, sigma: SigmaChoice = DEFAULT_SIGMA, heads=None
) -> TopK:
    """Queries u with the highest T_ee(u, key), per head."""
    return _topk_against(layer, key, "queries", k, sigma, heads)


def iter_topk_keys_of(layer, queries, k: int = 10, sigma: SigmaChoice = DEFAULT_SIGMA,
                      heads=None, chunk_rows: int = 64) -> Job:
    """Generator job: the ids of the k keys with the highest T_ee(u, v) over all V keys for
    each query token u of `queries` (many at once; `topk_keys` per query gives the same),
    an int64 array [len(heads), len(queries), k], best first. One head at a time, query
    rows in chunks of `chunk_rows`: the largest score block is [chunk_rows, V]; the query's
    own sigma is a common factor of its row and does not change the ranking."""
    import numpy as np


    hs = check_heads(layer, heads)
    ids = query_tensor(layer, queries)
    k = min(check_count(k, "k"), layer.n_vocab)
    step = check_count(chunk_rows, "rows per chunk")
    S = ids.numel()
    out = np.empty((len(hs), S, k), dtype=np.int64)
    for r, h in enumerate(hs):
        with torch.inference_mode():
            Ct = column_factor(layer, sigma, "keys", [h])  # [1, d', V]
            for a in range(0, S, step):
                R = row_factor(layer, sigma, "keys", [h], ids[a : a + step])  # [1, c, d']
                out[r, a : a + step] = torch.topk(torch.bmm(R, Ct)[0], k, dim=-1).indices.cpu().numpy()
            del Ct
        yield Progress((r + 1) / len(hs), f"top-{k} keys of {S} query tokens, head {h}")
    return out


def affinity_block(
    layer, query_ids, key_ids=None, sigma: SigmaChoice = DEFAULT_SIGMA, heads=None
) -> torch.Tensor:
    """T_ee for every (query, key) pair of two token sets, [len(heads), nq, nk]."""
    hs = check_heads(layer, heads)
    qi = token_tensor(layer, query_ids, "query tokens")
    ki = qi if key_ids is None else token_tensor(layer, key_ids, "key tokens")
    if qi.numel() == 0 or ki.numel() == 0:
        raise InputError("The token set is empty.")
    for t in (int(qi.min()), int(qi.max()), int(ki.min()), int(ki.max())):
        check_token(layer, t)
    Q = torch.matmul(layer.E[qi], layer.Wq[hs])  # [h, nq, d']
    K = torch.matmul(layer.E[ki], layer.Wk[hs])  # [h, nk, d']
    out = torch.matmul(Q, K.transpose(1, 2))
    s_q = token_sigmas_of(layer, sigma, "query", qi)
    s_k = token_sigmas_of(layer, sigma, "key", ki)
    return out / (s_q[:, None] * s_k[None, :])
