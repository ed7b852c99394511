"""The six-term decomposition of layer-0 attention scores for a token sequence
(docs/math/terms.md#the-six-terms).

For query position i (token t_i) and key position j, head h, with s_i = sigma(e_{t_i} + p_i):

    T_ee = (e_i Wq)(e_j Wk)^T / (s_i s_j)     T_pp = (p_i Wq)(p_j Wk)^T / (s_i s_j)
    T_pe = (p_i Wq)(e_j Wk)^T / (s_i s_j)     T_ep = (e_i Wq)(p_j Wk)^T / (s_i s_j)
    T_e  = b^QK e_j^T / s_j                   T_p  = b^QK p_j^T / s_j

and alpha = softmax_{j<=i}(sum / tau), tau = `Layer0.temperature` (sqrt(d'), or 1 for a
model that does not scale its scores, e.g. GPT-Neo). The query-side constants dropped here
(see `query_constants`) are the same for every j and cancel in the softmax.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from detokgui.core.base.checks import check_heads
from detokgui.core.model.sigma import sequence_sigma

TERM_NAMES = ("ee", "pp", "pe", "ep", "e", "p")
_FACTORS_KEY = "positional.factors"


@dataclass(eq=False)
class PositionFactors:
    """Per-layer products reused by every position view (computed once per layer)."""

    Qp: torch.Tensor  # [H, L, d']  p_j Wq_h
    Kp: torch.Tensor  # [H, L, d']  p_j Wk_h
    Tp_raw: torch.Tensor  # [H, L]  b^QK_h p_j^T


@torch.no_grad()
def position_factors(layer) -> PositionFactors:
    """P Wq_h, P Wk_h and b^QK_h P^T for all heads, cached on the layer."""
    P = layer.P
    return layer.cached(_FACTORS_KEY, lambda: PositionFactors(
        Qp=torch.matmul(P, layer.Wq).contiguous(),
        Kp=torch.matmul(P, layer.Wk).contiguous(),
        Tp_raw=(layer.bQK @ P.T).contiguous(),
    ))


@dataclass(eq=False)
class TermFactors:
    """The rank-d' factors of the six terms of one sequence for the heads `heads` (first
    axis follows that list), each row already divided by its sigma:

        qe[h, i] = e_{t_i} Wq_h / s_i     qp[h, i] = p_i Wq_h / s_i        [h, n, d']
        ke[h, j] = e_{t_j} Wk_h / s_j     kp[h, j] = p_j Wk_h / s_j
        te[h, j] = b^QK_h e_{t_j}^T / s_j tp[h, j] = b^QK_h p_j^T / s_j     [h, n]

    so that T_ee = qe ke^T, T_pp = qp kp^T, T_pe = qp ke^T, T_ep = qe kp^T, T_e = te and
    T_p = tp (repeated along i). Any block of the [n, n] terms costs one small product."""

    heads: list[int]
    qe: torch.Tensor
    qp: torch.Tensor
    ke: torch.Tensor
    kp: torch.Tensor
    te: torch.Tensor
    tp: torch.Tensor

    def block(self, r: int | None, rows: slice = slice(None), cols: slice = slice(None)
              ) -> list[torch.Tensor]:
        """The six terms (TERM_NAMES order) of head `heads[r]` for query rows `rows` and
        key columns `cols`: four [rows, cols] matrices, then T_e and T_p as [1, cols].
        r=None: all heads at once, [h, rows, cols] and [h, 1, cols]."""
        if r is None:
            qe, qp = self.qe[:, rows], self.qp[:, rows]
            ke, kp = self.ke[:, cols].transpose(1, 2), self.kp[:, cols].transpose(1, 2)
            return [torch.bmm(qe, ke), torch.bmm(qp, kp), torch.bmm(qp, ke),
                    torch.bmm(qe, kp), self.te[:, None, cols], self.tp[:, None, cols]]
        qe, qp = self.qe[r, rows], self.qp[r, rows]
        ke, kp = self.ke[r, cols].T, self.kp[r, cols].T
        return [qe @ ke, qp @ kp, qp @ ke, qe @ kp, self.te[r, None, cols],
                self.tp[r, None, cols]]


def term_factors(layer, token_ids, heads=None) -> TermFactors:
    """`TermFactors` of a token sequence (validated) for `heads` (all by default). The
    position products P Wq_h, P Wk_h, b^QK_h P^T come from `position_factors` (computed
    once per layer), so only the token side costs a product per call."""
    ids = layer.check_token_ids(token_ids)
    hs = check_heads(layer, heads)
    every = hs == list(range(layer.n_heads))
    pf = position_factors(layer)

    def pick(t):
        return t if every else t[hs]

    n, d, h = ids.shape[0], layer.d, len(hs)
    inv = 1.0 / sequence_sigma(layer, ids)
    Xe = layer.E[ids] * inv[:, None]
    # one [n, d] @ [d, h (2 d' + 1)] product for the token side of every head
    W = torch.cat([pick(layer.Wq).permute(1, 0, 2).reshape(d, -1),
                   pick(layer.Wk).permute(1, 0, 2).reshape(d, -1), pick(layer.bQK).T], 1)
    tok = Xe @ W
    hd = h * layer.d_head

    def per_head(t):  # [n, h d'] -> [h, n, d']
        return t.reshape(n, h, layer.d_head).transpose(0, 1)

    col = inv[:, None]
    return TermFactors(
        heads=hs,
        qe=per_head(tok[:, :hd]), qp=pick(pf.Qp)[:, :n] * col,
        ke=per_head(tok[:, hd:2 * hd]), kp=pick(pf.Kp)[:, :n] * col,
        te=tok[:, 2 * hd:].T, tp=pick(pf.Tp_raw)[:, :n] * inv,
    )


def six_terms(layer, token_ids, heads=None, *, expand: bool = True) -> dict[str, torch.Tensor]:
    """{"ee","pp","pe","ep","e","p"} -> [h, n, n] for the heads `heads` (all by default;
    the first axis follows that list). "e"/"p" are repeated along i, or left as [h, 1, n]
    (broadcastable, no copy) with expand=False."""
    f = term_factors(layer, token_ids, heads)
    H, n = f.te.shape

    def key_only(t):  # repeated along i
        t = t.unsqueeze(1)
        return t.expand(H, n, n).contiguous() if expand else t

    def pair(q, k):
        return torch.matmul(q, k.transpose(1, 2))

    return {
        "ee": pair(f.qe, f.ke),
        "pp": pair(f.qp, f.kp),
        "pe": pair(f.qp, f.ke),
        "ep": pair(f.qe, f.kp),
        "e": key_only(f.te),
        "p": key_only(f.tp),
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
    """alpha[h, i, j] = softmax_{j<=i}(sum of six terms / tau), [H, n, n]."""
    return causal_softmax(scores(layer, token_ids), layer.temperature)
