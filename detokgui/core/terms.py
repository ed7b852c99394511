"""The six-term decomposition of layer-0 attention scores for a token sequence (SPEC §1).

For query position i (token t_i) and key position j, head h, with s_i = sigma(e_{t_i} + p_i):

    T_ee = (e_i Wq)(e_j Wk)^T / (s_i s_j)     T_pp = (p_i Wq)(p_j Wk)^T / (s_i s_j)
    T_pe = (p_i Wq)(e_j Wk)^T / (s_i s_j)     T_ep = (e_i Wq)(p_j Wk)^T / (s_i s_j)
    T_e  = b^QK e_j^T / s_j                   T_p  = b^QK p_j^T / s_j

and alpha = softmax_{j<=i}(sum / sqrt(d')). The query-side constants dropped here
(see `query_constants`) are the same for every j and cancel in the softmax.
"""

from __future__ import annotations

import torch

from detokgui.core.checks import check_heads
from detokgui.core.sigma import sequence_sigma

TERM_NAMES = ("ee", "pp", "pe", "ep", "e", "p")


def six_terms(layer, token_ids, heads=None, *, expand: bool = True) -> dict[str, torch.Tensor]:
    """{"ee","pp","pe","ep","e","p"} -> [h, n, n] for the heads `heads` (all by default;
    the first axis follows that list). "e"/"p" are repeated along i, or left as [h, 1, n]
    (broadcastable, no copy) with expand=False."""
    ids = layer.check_token_ids(token_ids)
    hs = check_heads(layer, heads)
    Wq, Wk, bQK = (layer.Wq, layer.Wk, layer.bQK) if heads is None else (
        layer.Wq[hs], layer.Wk[hs], layer.bQK[hs])
    n = ids.shape[0]
    Xe, Xp = layer.E[ids], layer.P[:n]
    inv = 1.0 / sequence_sigma(layer, ids)
    Qe, Qp = torch.matmul(Xe, Wq), torch.matmul(Xp, Wq)  # [h, n, d']
    Ke, Kp = torch.matmul(Xe, Wk), torch.matmul(Xp, Wk)
    both = inv[:, None] * inv[None, :]
    H = len(hs)

    def pair(Q, K):
        return torch.matmul(Q, K.transpose(1, 2)) * both

    def key_only(X):  # b^QK x_j^T / s_j, repeated along i
        t = ((X @ bQK.T).T * inv).unsqueeze(1)
        return t.expand(H, n, n).contiguous() if expand else t

    return {
        "ee": pair(Qe, Ke),
        "pp": pair(Qp, Kp),
        "pe": pair(Qp, Ke),
        "ep": pair(Qe, Kp),
        "e": key_only(Xe),
        "p": key_only(Xp),
    }


def scores(layer, token_ids, heads=None) -> torch.Tensor:
    """Sum of the six terms, [h, n, n]."""
    t = six_terms(layer, token_ids, heads, expand=False)
    return sum(t[k] for k in TERM_NAMES)


def query_constants(layer, token_ids) -> torch.Tensor:
    """The dropped terms, constant in j: (x_i Wq / s_i) . bk + bq . bk, as [H, n, 1].

    q_i . k_j = sum of the six terms + this."""
    ids = layer.check_token_ids(token_ids)
    n = ids.shape[0]
    x = layer.E[ids] + layer.P[:n]
    inv = 1.0 / sequence_sigma(layer, ids)
    Q = torch.matmul(x, layer.Wq) * inv[None, :, None]  # [H, n, d']
    c = torch.einsum("hnk,hk->hn", Q, layer.bk) + (layer.bq * layer.bk).sum(-1, keepdim=True)
    return c.unsqueeze(-1)


def causal_softmax(s: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax over j <= i of s / temperature along the last axis; zero above the diagonal."""
    n = s.shape[-1]
    mask = torch.ones(n, n, dtype=torch.bool, device=s.device).triu_(1)
    return torch.softmax((s / temperature).masked_fill(mask, -torch.inf), dim=-1)


def attention(layer, token_ids) -> torch.Tensor:
    """alpha[h, i, j] = softmax_{j<=i}(sum of six terms / sqrt(d')), [H, n, n]."""
    return causal_softmax(scores(layer, token_ids), layer.temperature)
