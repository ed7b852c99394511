"""The affinity heatmap (A3, the paper's Fig 2-B and Fig 12): which tokens it compares
(`heatmap_tokens`: the typed text's, a seeded sample, or a query and its top-k keys), the
block T_ee(u, v) for every pair of them per head, or the raw e_u W^QK e_v^T without
LayerNorm (`affinity_heatmap`), and its title (`heatmap_title`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from detokgui.core.model import sample
from detokgui.core.model.tokens import display_token
from detokgui.core.token_side import affinity

MAX_TOKENS = affinity.MAX_HEATMAP_TOKENS


@dataclass
class HeatmapResult:
    tokens: list[int]
    labels: list[str]
    values: np.ndarray | None  # [len(heads), n, n]
    heads: list[int]
    sigma: affinity.SigmaChoice

    @property
    def value_name(self) -> str:
        """What a cell holds: 'T_ee', or 'raw e W^QK e^T' without LayerNorm."""
        return "raw e W^QK e^T" if self.sigma.convention == "none" else "T_ee"

    def describe(self, k: int, r: int, c: int) -> str:
        """The hover text of cell (r, c) of the k-th head's map."""
        return (f"head {self.heads[k]}  query {self.labels[r]!r}  key {self.labels[c]!r}  "
                f"value {self.values[k, r, c]:.4g}")


def heatmap_tokens(layer, source: str, token_set, query: int, head: int, sigma, size: int,
                   seed: int) -> list[int]:
    """The token set a heatmap shows: the typed text's tokens, a seeded sample of `size`,
    or the query followed by its top size-1 keys in `head`."""
    if source == "text":
        return list(token_set)[:MAX_TOKENS]
    if source == "sample":
        return sample.random_token_sample(layer, min(size, MAX_TOKENS), seed)
    if query < 0:
        return []
    res = affinity.topk_keys(layer, query, min(size, MAX_TOKENS) - 1, sigma, heads=[head])
    return [query] + [t for t in res.ids[0].tolist() if t != query]


def affinity_heatmap(layer, tokens: list[int], heads, sigma) -> HeatmapResult:
    """T_ee (or the raw product, sigma "none") between every pair of `tokens`, per head."""
    if not tokens:
        return HeatmapResult([], [], None, list(heads), sigma)
    labels = [display_token(layer.tokenizer, t) for t in tokens]
    values = affinity.affinity_block(layer, tokens, tokens, sigma, heads)
    return HeatmapResult(tokens, labels, values.cpu().numpy(), list(heads), sigma)


def heatmap_title(res: HeatmapResult, head: int | None) -> str:
    """'Token-token affinity T_ee, head 3 (Fig 2-B) — sigma = …', or without LayerNorm
    the raw product (Fig 12); head None: the whole grid."""
    who = f", head {head}" if head is not None else ", all heads"
    if res.sigma.convention == "none":
        return f"Token-token affinity without LayerNorm, raw e W^QK e^T{who} (Fig 12)"
    return f"Token-token affinity T_ee{who} (Fig 2-B) — {res.sigma.label()}"
