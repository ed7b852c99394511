"""Composition scores of layer-0 heads with layer-1 heads, from the folded weights
(docs/math/composition.md).

For a layer-0 head h with W^OV_h = A B (A = Wv_h [d, d'] with block 0's ln_1 folded,
B = W^O_h C [d', d], centred as every later LayerNorm reads it) and a layer-1 head g with
its matrix X Y (two rank-d' factors, block 1's ln_1 folded):

    Q: X Y = Wq_g Wk_g^T      K: X Y = Wk_g Wq_g^T      V: X Y = Wv_g W^O_g C

the score is ||A B X Y||_F / (||A B||_F ||X Y||_F) (Elhage et al. 2021). No d x d matrix
is formed: with the d' x d' matrices G_A = A^T A, G_B = B B^T, G_X = X^T X, G_Y = Y Y^T
and M = B X,

    ||A B X Y||_F^2 = tr(G_A M G_Y M^T),  ||A B||_F^2 = tr(G_A G_B),  ||X Y||_F^2 = tr(G_X G_Y).

The baseline is the same score of independent Gaussian factors of the same shapes
(`baseline`): its mean and the 2.5 and 97.5 percentiles over `BASELINE_SAMPLES` draws.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch

from detokgui.core.base.progress import Job, Progress, rescaled
from detokgui.core.model.layer1 import Layer1, layer1_job

KINDS = ("Q", "K", "V")
BASELINE_SAMPLES = 400
BASELINE_SEED = 0
CACHE_KEY = "composition"


@dataclass(eq=False)
class Composition:
    """scores[k, h, g]: the composition of kind KINDS[k] of layer-0 head h with layer-1
    head g; the random-matrix baseline (mean, 2.5 and 97.5 percentiles) of the same
    shapes; layer 1's attention ("global attention", "local attention (window 256)")."""

    scores: np.ndarray  # [3, H0, H1]
    baseline_mean: float
    baseline_lo: float
    baseline_hi: float
    baseline_samples: int
    d: int
    d_head: int
    layer1_attention: str = "global attention"

    def of(self, kind: str) -> np.ndarray:
        """[H0, H1] scores of one kind ("Q", "K", "V")."""
        return self.scores[KINDS.index(kind)]

    def partner(self, kind: str, layer1_head: int) -> int:
        """The layer-0 head that composes most with `layer1_head` in `kind`."""
        return int(np.argmax(self.of(kind)[:, layer1_head]))

    def stand_out(self, kind: str) -> np.ndarray:
        """[H0, H1] True where the score is above the baseline's 97.5th percentile."""
        return self.of(kind) > self.baseline_hi


def centred_rows(W: torch.Tensor) -> torch.Tensor:
    """W C: each row with its mean over the last axis (d) subtracted, what a LayerNorm
    reads of what W writes into the residual stream."""
    return W - W.mean(dim=-1, keepdim=True)


def factors(layer, l1: Layer1) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The rank-d' factors (float64, on the layer's device) of the left matrix ("OV0",
    [H, d, d'] and [H, d', d]) and of the right matrix of each kind ("Q", "K", "V")."""
    f64 = torch.float64
    Wo0 = centred_rows(layer.Wo.to(f64))
    Wo1 = centred_rows(l1.Wo.to(f64))
    Wq1, Wk1, Wv1 = l1.Wq.to(f64), l1.Wk.to(f64), l1.Wv.to(f64)
    return {
        "OV0": (layer.Wv.to(f64), Wo0),
        "Q": (Wq1, Wk1.transpose(1, 2)),
        "K": (Wk1, Wq1.transpose(1, 2)),
        "V": (Wv1, Wo1),
    }


def _gram(X: torch.Tensor, left: bool) -> torch.Tensor:
    """X^T X for a left factor [.., d, d'], X X^T for a right one [.., d', d]."""
    return X.transpose(-1, -2) @ X if left else X @ X.transpose(-1, -2)


def scores_of_factors(A, B, X, Y) -> torch.Tensor:
    """||A_h B_h X_g Y_g||_F / (||A_h B_h||_F ||X_g Y_g||_F) for every h of A, B
    ([H, d, d'], [H, d', d]) and every g of X, Y ([G, d, d'], [G, d', d]): [H, G]."""
    GA, GB, GX, GY = _gram(A, True), _gram(B, False), _gram(X, True), _gram(Y, False)
    M = torch.einsum("hkd,gdl->hgkl", B, X)  # B_h X_g, [H, G, d', d']
    left = torch.einsum("hkm,hgml->hgkl", GA, M)  # G_A M
    right = torch.einsum("hgkm,gml->hgkl", M, GY)  # M G_Y
    num = (left * right).sum(dim=(-1, -2)).clamp_min(0)
    nl = (GA * GB.transpose(-1, -2)).sum(dim=(-1, -2)).clamp_min(0)  # tr(G_A G_B)
    nr = (GX * GY.transpose(-1, -2)).sum(dim=(-1, -2)).clamp_min(0)  # tr(G_X G_Y)
    return num.sqrt() / (nl.sqrt()[:, None] * nr.sqrt()[None, :])


def paired_scores(A, B, X, Y) -> torch.Tensor:
    """||A_i B_i X_i Y_i||_F / (||A_i B_i||_F ||X_i Y_i||_F) for each i of the batches
    A, X [n, d, d'] and B, Y [n, d', d] (the pairs of `scores_of_factors`' diagonal, in a
    few batched products): [n]."""
    GA, GB, GX, GY = _gram(A, True), _gram(B, False), _gram(X, True), _gram(Y, False)
    M = B @ X  # [n, d', d']
    num = ((GA @ M) * (M @ GY)).sum(dim=(-1, -2)).clamp_min(0)
    nl = (GA * GB.transpose(-1, -2)).sum(dim=(-1, -2)).clamp_min(0)
    nr = (GX * GY.transpose(-1, -2)).sum(dim=(-1, -2)).clamp_min(0)
    return num.sqrt() / (nl.sqrt() * nr.sqrt())


@functools.lru_cache(maxsize=16)
def baseline(d: int, d_head: int, samples: int = BASELINE_SAMPLES,
             seed: int = BASELINE_SEED) -> tuple[float, float, float]:
    """(mean, 2.5th, 97.5th percentile) of the composition score of independent Gaussian
    factors A, X [d, d'] and B, Y [d', d] over `samples` seeded draws (the same for every
    kind: the shapes are the same)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    batch = max(1, min(samples, (1 << 24) // max(1, 4 * d * d_head)))
    done = 0
    while done < samples:
        n = min(batch, samples - done)
        A, X = (torch.randn(n, d, d_head, generator=g, dtype=torch.float64) for _ in range(2))
        B, Y = (torch.randn(n, d_head, d, generator=g, dtype=torch.float64) for _ in range(2))
        out += paired_scores(A, B, X, Y).tolist()
        done += n
    arr = np.asarray(out)
    lo, hi = np.percentile(arr, [2.5, 97.5])
    return float(arr.mean()), float(lo), float(hi)


def composition(layer, l1: Layer1) -> Composition:
    """The Q-, K- and V-composition scores of every layer-0 head with every layer-1 head,
    and the random-matrix baseline of the same shapes."""
    f = factors(layer, l1)
    A, B = f["OV0"]
    scores = torch.stack([scores_of_factors(A, B, *f[k]) for k in KINDS])
    mean, lo, hi = baseline(layer.d, layer.d_head)
    return Composition(scores.cpu().numpy(), mean, lo, hi, BASELINE_SAMPLES, layer.d,
                       layer.d_head, l1.attention_label)


def composition_job(layer) -> Job[Composition]:
    """Generator job: block 1 (read or downloaded on demand, `layer1_job`), then the
    composition scores; kept on the layer (a second call returns at once)."""
    return layer.cached_job(CACHE_KEY, lambda: _composition_steps(layer))


def _composition_steps(layer) -> Job[Composition]:
    l1 = yield from rescaled(layer1_job(layer), 0.0, 0.9)
    yield Progress(0.9, "composition scores")
    return composition(layer, l1)
