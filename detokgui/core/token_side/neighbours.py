"""Token-space neighbours in the token embedding E
(docs/math/token-side.md#a7-token-space-neighbours).

    cos(x, e_v) = x . e_v / (|x| |e_v|)

`nearest_tokens` ranks every token v by cos(e_u, e_v) (u itself excluded);
`analogy` ranks by cos(e_a - e_b + e_c, e_v), excluding a, b and c. With `centred`, the
mean embedding mu = mean_v e_v is subtracted from every embedding first
(x = e_a - e_b + e_c - mu, and e_v - mu), which removes the direction all tokens share.
One [V, d] @ [d] product per query; E is never copied.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from detokgui.core.base.checks import check_token
from detokgui.core.base.errors import InputError

_NORMS_KEY = "neighbour_norms"


@dataclass
class Neighbours:
    """The k tokens nearest to a query vector by cosine, best first."""

    inputs: tuple[int, ...]  # (u,) or (a, b, c) for a - b + c
    centred: bool
    ids: list[int]
    cosines: list[float]


def _mean_and_norms(layer, centred: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(mu or zeros [d], |e_v - mu| [V]), cached on the layer."""

    def compute():
        E = layer.E
        mu = E.mean(dim=0) if centred else torch.zeros_like(E[0])
        norms = torch.empty(E.shape[0], dtype=E.dtype, device=E.device)
        for a in range(0, E.shape[0], 8192):
            torch.linalg.vector_norm(E[a : a + 8192] - mu, dim=1, out=norms[a : a + 8192])
        return mu, norms

    return layer.cached((_NORMS_KEY, bool(centred)), compute)


def _nearest(layer, x: torch.Tensor, k: int, centred: bool, exclude: tuple[int, ...]):
    k = int(k)
    if k < 1:
        raise InputError("k must be at least 1.")
    with torch.inference_mode():
        mu, norms = _mean_and_norms(layer, centred)
        xc = x - mu
        nx = torch.linalg.vector_norm(xc)
        if float(nx) == 0.0:
            raise InputError("The query vector is zero, so no cosine can be taken.")
        cos = (layer.E @ xc - mu @ xc) / (norms.clamp_min(torch.finfo(norms.dtype).tiny) * nx)
        cos[list(exclude)] = -torch.inf
        k = min(k, layer.n_vocab - len(set(exclude)))
        vals, idx = torch.topk(cos, k)
    return idx.tolist(), vals.double().tolist()


def nearest_tokens(layer, token: int, k: int = 10, centred: bool = False) -> Neighbours:
    """The k tokens v != u with the highest cos(e_u, e_v) (mean-centred if `centred`)."""
    u = check_token(layer, token)
    ids, cos = _nearest(layer, layer.E[u], k, centred, (u,))
    return Neighbours((u,), centred, ids, cos)


def analogy(layer, a: int, b: int, c: int, k: int = 10, centred: bool = False) -> Neighbours:
    """The k tokens nearest to e_a - e_b + e_c by cosine, a, b and c excluded
    ("king" - "man" + "woman")."""
    a, b, c = (check_token(layer, t) for t in (a, b, c))
    x = layer.E[a] - layer.E[b] + layer.E[c]
    ids, cos = _nearest(layer, x, k, centred, (a, b, c))
    return Neighbours((a, b, c), centred, ids, cos)
