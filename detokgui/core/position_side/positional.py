"""The position side of layer 0 (docs/math/position-side.md): what attention does when only
positions (and possibly the query token) are known.

Notation: docs/math/notation.md; P [L, d], Wq_h / Wk_h [d, d'], b^QK_h [d], s = a sigma per
position. For a query position i and key positions j <= i, per head h:

    T_p(j)     = b^QK_h p_j^T / s_j                          position self-assertion  (B1)
    T_pp(i, j) = (p_i Wq_h)(p_j Wk_h)^T / (s_i s_j)          position-position        (B2)
    bias(i, j) = softmax_{j<=i}((T_pp + T_p) / tau)           positional bias          (B3)

with tau = `Layer0.temperature` (sqrt(d'); 1 for a model that does not scale its scores).

Position-only views need a sigma per position: `convention` "paper" (the default) or
"mean-sigma" with `sigma` "mean" | "max" | "min" | "none", as defined in
`core.model.conventions` (one definition for core, CLI and GUI).

The per-layer products P Wq_h, P Wk_h ([H, L, d'] each) and b^QK P^T ([H, L]) are formed
once (`position_factors`, cached on the layer) so that a query-position slider redraws all
heads with one [H, i+1, d'] x [H, d'] product. No d x d matrix and no V x L x d tensor is
ever built.

Results are small dataclasses of numpy arrays on the CPU (float32 for float32 models),
ready to plot or to write as CSV. Heads in results are listed in `heads` (0-based); the
first array axis follows that list.

Which function feeds which view:
    B1  position_bias_band          T_p over all j: raw, and per convention the line and
                                    band ("paper": E_v[1/S], 95% interval; "mean-sigma":
                                    1/mean_v S, min..max of sigma)
    B2  bias_lines / positional_bias  T_pp at query i for sigma mean / max / min
    B3  positional_bias             T_pp + T_p and its softmax at i (slider-fast)
    B4  positional_pattern, pattern_grid, iter_classify_heads / classify_heads
    B5  position_variance, raw_pp_last_positions
    B7  positional_bias(sigma="none") and position_bias_band(...).raw for the raw terms;
        token_position_slopes, slope_extremes, slope_histogram for the token slopes
Everything with a sigma other than "none" (and B4) needs the sigma table: the first call
computes it (seconds at GPT-2 size); run `sigma_stats_job(layer)` on a worker first.
Invalid positions, heads, tokens or sigma names raise `InputError` with a message for
the user.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from detokgui.core.base.checks import (
    as_int,
    check_count,
    check_heads,
    check_position,
    check_token,
    query_tensor,
)
from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import Job, Progress, run
from detokgui.core.base.progress import rescaled as _rescaled
from detokgui.core.model.conventions import (
    DEFAULT_POSITION_CONVENTION,
    check_position_convention,
    check_position_sigma,
    convention_label,
    inverse_sigma_stats,
    position_key_weights,
    position_sigma,
    sigma_stats_job,
)
from detokgui.core.model.sample import random_token_sample
from detokgui.core.model.sigma import sigma as _sigma
from detokgui.core.model.terms import position_factors
from detokgui.core.model.tokens import display_token

_SLOPES_KEY = "positional.token_slopes"
_RANKS_KEY = "positional.self_ranks"


# --------------------------------------------------------------------------- helpers


def _np(t: torch.Tensor) -> np.ndarray:
    t = t.detach()
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    return t.cpu().numpy().copy()  # never share memory with a cached tensor


def ls_weights(n: int, dtype=torch.float64, device=None) -> torch.Tensor:
    """w_j = (j - jbar) / sum_j (j - jbar)^2 for j = 0..n-1, so that the least-squares
    slope of y over j is sum_j w_j y_j (per position). Zeros when n < 2."""
    j = torch.arange(n, dtype=dtype, device=device)
    c = j - j.mean() if n else j
    den = (c * c).sum()
    return c / den if n >= 2 else torch.zeros_like(j)


# --------------------------------------------------------------------------- factors


def _head_rows(t: torch.Tensor, hs: list[int], n_heads: int) -> torch.Tensor:
    if hs == list(range(n_heads)):
        return t
    return t[hs]


# --------------------------------------------------------------------------- B1-B3


@dataclass
class PositionalBias:
    """B1-B3 at query position i, arrays [len(heads), i+1] over keys j = 0..i.

    t_p, t_pp as in `core.model.conventions` for `convention` ("paper", "mean-sigma", or
    "none" when sigma is "none"); total = t_pp + t_p; softmax = softmax_{j<=i}(total /
    temperature). The *_lo / *_hi arrays (None unless bands were asked for) bound the 95%
    percentile interval over the vocabulary v of the per-token values, where each key j
    has its own S[v, j] and the query side keeps its convention's sigma_i:
        t_p:   b^QK_h p_j^T / S[v, j]
        t_pp:  p_i W^QK_h p_j^T / (sigma_i S[v, j])
        total: (p_i W^QK_h p_j^T / sigma_i + b^QK_h p_j^T) / S[v, j]
    (the ends swap where the numerator is negative). Without LayerNorm nothing depends on
    v, so lo = hi = the value."""

    i: int
    sigma: str
    heads: list[int]
    temperature: float
    t_p: np.ndarray
    t_pp: np.ndarray
    total: np.ndarray
    softmax: np.ndarray
    convention: str = DEFAULT_POSITION_CONVENTION
    t_p_lo: np.ndarray | None = None
    t_p_hi: np.ndarray | None = None
    t_pp_lo: np.ndarray | None = None
    t_pp_hi: np.ndarray | None = None
    total_lo: np.ndarray | None = None
    total_hi: np.ndarray | None = None

    @property
    def j(self) -> np.ndarray:
        return np.arange(self.i + 1)

    def label(self) -> str:
        """The convention in words, e.g. for a plot title."""
        return convention_label(self.convention, self.sigma)


@torch.no_grad()
def positional_bias(layer, i, sigma: str = "mean", heads=None,
                    convention: str = DEFAULT_POSITION_CONVENTION, bands: bool | None = None) -> PositionalBias:
    """T_p, T_pp, their sum and its causal softmax for query position i, keys j <= i.

    sigma: "mean" | "max" | "min" over the vocabulary, or "none" (s = 1, raw).
    convention: "paper" (default) or "mean-sigma" (`core.model.conventions`); ignored for sigma
    "none".
    bands: compute the 95% percentile bands (default: for "paper" and "none" only; for
    "mean-sigma" they need the 1/sigma percentiles, computed once per layer).
    Cost after the first call: one [H, i+1, d'] x [H, d'] product, so it can follow a
    slider."""
    i = check_position(layer, i)
    hs = check_heads(layer, heads)
    sigma = check_position_sigma(sigma)
    convention = "none" if sigma == "none" else check_position_convention(convention)
    if bands is None:
        bands = convention != "mean-sigma"
    f = position_factors(layer)
    H = layer.n_heads
    Kp = _head_rows(f.Kp, hs, H)[:, : i + 1]  # [h, i+1, d']
    q = _head_rows(f.Qp, hs, H)[:, i]  # [h, d']
    raw_pp = torch.matmul(Kp, q.unsqueeze(-1)).squeeze(-1)  # [h, i+1]
    raw_p = _head_rows(f.Tp_raw, hs, H)[:, : i + 1]
    inv = inverse_sigma_stats(layer) if convention == "paper" or (bands and sigma != "none") \
        else None
    if convention == "none":
        a_pp, t_pp, t_p = raw_pp, raw_pp, raw_p
    else:
        s = position_sigma(layer, sigma)
        a_pp = raw_pp / s[i]  # the query side's share
        if convention == "paper":
            w = inv.mean[: i + 1]
            t_pp, t_p = a_pp * w, raw_p * w
        else:
            sj = s[: i + 1]
            t_pp, t_p = a_pp / sj, raw_p / sj
    total = t_pp + t_p
    soft = torch.softmax(total / layer.temperature, dim=-1)
    out = PositionalBias(
        i=i, sigma=sigma, heads=hs, temperature=layer.temperature,
        t_p=_np(t_p), t_pp=_np(t_pp), total=_np(total), softmax=_np(soft), convention=convention,
    )
    if bands:
        for name, a, value in (("t_p", raw_p, t_p), ("t_pp", a_pp, t_pp),
                               ("total", a_pp + raw_p, total)):
            lo, hi = (value, value) if inv is None else inv.band(a)
            setattr(out, f"{name}_lo", _np(lo))
            setattr(out, f"{name}_hi", _np(hi))
    return out


def bias_lines(layer, i, heads=None, sigmas=("mean", "max", "min"),
               convention: str = DEFAULT_POSITION_CONVENTION, bands: bool | None = None
               ) -> dict[str, PositionalBias]:
    """`positional_bias` at one i for several sigma summaries (the B2 lines)."""
    return {s: positional_bias(layer, i, s, heads, convention, bands) for s in sigmas}


@dataclass
class PositionBiasBand:
    """B1: T_p over ALL positions j = 0..L-1, arrays [len(heads), L].

    raw = b^QK_h p_j^T (no LayerNorm); at_max_sigma / at_min_sigma = raw divided by the
    vocabulary max / min of S[., j] = sigma(e_v + p_j). By `convention`:
      "mean-sigma"  mean = raw / mean_v S[v, j]; lower / upper = the elementwise min / max
                    of at_max_sigma and at_min_sigma (the range over the vocabulary's sigma)
      "paper"       mean = raw E_v[1/S[v, j]] (the authors' T_p, Fig 3-A); lower / upper =
                    the 95% percentile interval over v of raw / S[v, j]"""

    heads: list[int]
    raw: np.ndarray
    mean: np.ndarray
    at_max_sigma: np.ndarray
    at_min_sigma: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    convention: str = DEFAULT_POSITION_CONVENTION

    @property
    def j(self) -> np.ndarray:
        return np.arange(self.raw.shape[-1])

    def label(self) -> str:
        """The convention in words, e.g. for a plot title."""
        return convention_label(self.convention, "mean")


@torch.no_grad()
def position_bias_band(layer, heads=None,
                       convention: str = DEFAULT_POSITION_CONVENTION) -> PositionBiasBand:
    """T_p(j) for every j under `convention` (see `PositionBiasBand`), and raw (B1)."""
    hs = check_heads(layer, heads)
    convention = check_position_convention(convention)
    st = layer.sigma_stats()
    raw = _head_rows(position_factors(layer).Tp_raw, hs, layer.n_heads)
    a, b = raw / st.pos_max, raw / st.pos_min
    if convention == "paper":
        inv = inverse_sigma_stats(layer)
        mean = raw * inv.mean
        lower, upper = inv.band(raw)
    else:
        mean, lower, upper = raw / st.pos_mean, torch.minimum(a, b), torch.maximum(a, b)
    return PositionBiasBand(
        heads=hs, raw=_np(raw), mean=_np(mean), at_max_sigma=_np(a), at_min_sigma=_np(b),
        lower=_np(lower), upper=_np(upper), convention=convention,
    )


@dataclass
class BiasFigures:
    """B1-B3 at query position i as the paper's Fig 3-A..D show them, without bands over
    the vocabulary: `lines` T_pp for several sigma_i (B2), `b3` T_pp + T_p and its
    softmax for `b3_sigma` (B3), and `band` T_p over every key j with its band (B1, the
    same for every i)."""

    i: int
    heads: list[int]
    b3_sigma: str
    convention: str
    lines: dict[str, PositionalBias]
    b3: PositionalBias
    band: PositionBiasBand


def bias_figures(layer, i, heads=None, b3_sigma: str = "mean",
                 convention: str = DEFAULT_POSITION_CONVENTION,
                 line_sigmas=("mean", "max", "min")) -> BiasFigures:
    """Everything of `BiasFigures` at query position i; b3 is one of `lines` when its
    sigma is among them."""
    hs = check_heads(layer, heads)
    lines = bias_lines(layer, i, hs, line_sigmas, convention, bands=False)
    b3 = lines[b3_sigma] if b3_sigma in lines else \
        positional_bias(layer, i, b3_sigma, hs, convention, bands=False)
    return BiasFigures(i=i, heads=hs, b3_sigma=b3_sigma, convention=convention, lines=lines,
                       b3=b3, band=position_bias_band(layer, hs, convention))


# --------------------------------------------------------------------------- B4


@dataclass
class PositionalPattern:
    """B4 for query token x at position n, arrays [len(heads), n+1] over keys j <= n.

    With s_n = sigma(e_x + p_n) exactly and, for the keys, w_j = E_v[1/S[v, j]] ("paper",
    the default) or w_j = 1 / mean_v S[v, j] ("mean-sigma"):
        t_ep = (e_x Wq_h)(p_j Wk_h)^T w_j / s_n
        t_pp = (p_n Wq_h)(p_j Wk_h)^T w_j / s_n
        t_p  = b^QK_h p_j^T w_j
        pattern = softmax_{j<=n}((t_ep + t_pp + t_p) / temperature)
    the attention if every key token contributed only its average LayerNorm scale."""

    token: int
    n: int
    heads: list[int]
    query_sigma: float
    t_ep: np.ndarray
    t_pp: np.ndarray
    t_p: np.ndarray
    scores: np.ndarray
    pattern: np.ndarray
    convention: str = DEFAULT_POSITION_CONVENTION

    def grid(self) -> np.ndarray:
        """The pattern as [len(heads), rows, cols] (see `pattern_grid`)."""
        return pattern_grid(self.pattern)


@torch.no_grad()
def positional_pattern(layer, token, n, heads=None,
                       convention: str = DEFAULT_POSITION_CONVENTION) -> PositionalPattern:
    """softmax_{j<=n}((T_ep + T_pp + T_p) / tau) for query token `token` at position n;
    key weights w_j by `convention` (see `PositionalPattern`)."""

    x = check_token(layer, token)
    n = check_position(layer, n)
    hs = check_heads(layer, heads)
    convention = check_position_convention(convention)
    w_key = position_key_weights(layer, convention, n + 1)
    s_n = _sigma(layer.E[x] + layer.P[n], layer.eps)
    f = position_factors(layer)
    H = layer.n_heads
    Kp = _head_rows(f.Kp, hs, H)[:, : n + 1]  # [h, n+1, d']
    qe = torch.matmul(layer.E[x], layer.Wq[hs])  # [h, d']
    qp = _head_rows(f.Qp, hs, H)[:, n]
    scale = w_key / s_n
    t_ep = torch.matmul(Kp, qe.unsqueeze(-1)).squeeze(-1) * scale
    t_pp = torch.matmul(Kp, qp.unsqueeze(-1)).squeeze(-1) * scale
    t_p = _head_rows(f.Tp_raw, hs, H)[:, : n + 1] * w_key
    scores = t_ep + t_pp + t_p
    pat = torch.softmax(scores / layer.temperature, dim=-1)
    return PositionalPattern(
        token=x, n=n, heads=hs, query_sigma=float(s_n), t_ep=_np(t_ep), t_pp=_np(t_pp),
        t_p=_np(t_p), scores=_np(scores), pattern=_np(pat), convention=convention,
    )


def pattern_grid(values, cols: int | None = None) -> np.ndarray:
    """Lay the last axis (m values over j = 0..m-1) out row by row on a near-square grid.

    cols = ceil(sqrt(m)) unless given, rows = ceil(m / cols); j sits at
    (j // cols, j % cols); cells past m are NaN. m = 400 gives 20 x 20.
    Input [..., m] -> output [..., rows, cols] (float64)."""
    a = np.asarray(values, dtype=np.float64)
    m = a.shape[-1]
    if m == 0:
        raise InputError("There are no values to lay out.")
    c = math.isqrt(m - 1) + 1 if cols is None else check_count(cols, "number of grid columns")
    r = -(-m // c)
    out = np.full(a.shape[:-1] + (r * c,), np.nan)
    out[..., :m] = a
    return out.reshape(a.shape[:-1] + (r, c))


def pattern_grid_image(grid: np.ndarray,
                       log: bool = False) -> tuple[np.ndarray, tuple[float, float]]:
    """A `pattern_grid` as an image to colour: the weights, or with `log` log10 of them
    (floored at 1e-30), NaN where the grid is blank, float32; and its colour levels 0..max
    (log: min..max), one unit wide where they would be empty."""
    shown = np.log10(np.clip(grid, 1e-30, None)) if log else grid
    shown = np.where(np.isnan(grid), np.nan, shown).astype(np.float32)
    finite = shown[np.isfinite(shown)]
    lo, hi = (float(finite.min()), float(finite.max())) if log else (0.0, float(finite.max()))
    return shown, (lo, hi if hi > lo else lo + 1.0)


# --------------------------------------------------------------------------- head classes

HEAD_LABELS = ("duplicate-token", "detokenization", "contextual", "other")

# Evidence for the thresholds below (issue 11, item 5; tests/test_demo_model.py). On the
# trained demo model (shared/models/demo: 8 heads, L = 128, so n = 127), the weight-based
# criteria at n against the model's own layer-0 attention at the same query position n,
# averaged over 200 windows of 128 tokens of the sample corpus (recent = weight on the last
# 4 positions, span = exp(entropy) / (n+1), dist = mean attention distance in tokens):
#
#   head  label           weights: recent  span | measured: recent  span  dist
#   0     contextual               0.07   0.86  |           0.12   0.56  35.9
#   1     contextual               0.08   0.77  |           0.09   0.66  38.0
#   2     detokenization           0.61   0.11  |           0.56   0.09   6.0
#   3     contextual               0.07   0.76  |           0.08   0.48  35.7
#   4     contextual               0.10   0.70  |           0.11   0.57  31.9
#   5     detokenization           0.85   0.05  |           0.80   0.05   2.7
#   6     other                    0.41   0.14  |           0.40   0.12   6.6
#   7     detokenization           0.76   0.04  |           0.82   0.03   6.3
#
# The same rules applied to the measured values give the same eight labels, so the
# thresholds were kept. Head 6 is a local head (6.6 tokens back on average) that puts too
# little on the last 4 positions to be called detokenization: "other" is its honest label.
# Averaged over all query positions i >= 32 instead of at n, its span fraction reaches 0.21
# (spans are relative to i+1, and short contexts inflate them), which is why the criterion
# is read at one fixed n. Duplicate-token could not be tested on the demo: no head attends
# to earlier copies of the current token more than uniform attention would (measured
# 0.003-0.024 against 0.024), and no head ranks sampled tokens in their own top 10 keys.

#: Query position n used for classification (clipped to L-1): n+1 = 400 keys, the 20 x 20 grid.
CLASSIFY_POSITION = 399
#: Seeded sample of query tokens (pattern metrics are averaged over it; self-rank uses it).
CLASSIFY_SAMPLE = 200
#: "The previous few tokens": keys j = n-RECENT_WINDOW+1 .. n (the query's own position included).
RECENT_WINDOW = 4
#: detokenization: mean pattern weight on the RECENT_WINDOW last keys is at least this.
#: Demo model: 0.56-0.85 for its detokenization heads, 0.07-0.41 for the others.
DETOK_MIN_RECENT_WEIGHT = 0.5
#: duplicate-token: at least this fraction of sampled query tokens u rank themselves within
#: the top DUPLICATE_SELF_TOP_K of all V keys by T_ee(u, .) (key sigma = mean over positions).
DUPLICATE_SELF_TOP_K = 10
DUPLICATE_MIN_SELF_FRACTION = 0.5
#: contextual: effective span exp(entropy of the pattern) is at least this fraction of n+1.
#: Demo model: 0.48-0.86 for its broad heads, at most 0.14 for the local ones. Not raised
#: towards the middle of that gap: in GPT-2 small (n = 399) the contextual heads keep
#: 55-72% of their weight more than 15 tokens back (the authors' observed attention at
#: i = 500); an exponential decay with that tail has an effective span of about 100 of the
#: 400 keys, about 0.25, which a higher threshold would call "other" (not checkable here:
#: no GPT-2 weights offline).
CONTEXTUAL_MIN_SPAN_FRACTION = 0.2


@dataclass
class HeadClassification:
    """Measured criteria per head (arrays [len(heads)]) and the label they imply.

    Rules, first match wins (thresholds are the module constants):
      duplicate-token  self_top_fraction >= DUPLICATE_MIN_SELF_FRACTION
      detokenization   recent_weight >= DETOK_MIN_RECENT_WEIGHT
      contextual       span_fraction >= CONTEXTUAL_MIN_SPAN_FRACTION
      other            none of these
    Pattern metrics are means over the sampled query tokens of the B4 pattern at n:
      span = exp(-sum_j a_j log a_j), span_fraction = span / (n+1),
      mean_distance = sum_j a_j (n - j), recent_weight = sum_{j > n-RECENT_WINDOW} a_j.
    self_rank_median: median over the sample of 1 + #{v != u : T_ee(u,v) > T_ee(u,u)}.
    bias_slope: least-squares slope over j = 0..n of T_p(j) (sigma = mean), per position.
    mean_pattern: the B4 pattern averaged over the sampled query tokens, [len(heads), n+1]."""

    n: int
    heads: list[int]
    tokens: list[int]
    span: np.ndarray
    span_fraction: np.ndarray
    mean_distance: np.ndarray
    recent_weight: np.ndarray
    self_rank_median: np.ndarray
    self_top_fraction: np.ndarray
    bias_slope: np.ndarray
    labels: list[str]
    reasons: list[str] = field(default_factory=list)
    mean_pattern: np.ndarray | None = None

    def rows(self) -> list[dict]:
        """One dict per head, for a table."""
        return [
            {
                "head": h, "label": self.labels[r], "span": float(self.span[r]),
                "span_fraction": float(self.span_fraction[r]),
                "mean_distance": float(self.mean_distance[r]),
                "recent_weight": float(self.recent_weight[r]),
                "self_rank_median": float(self.self_rank_median[r]),
                "self_top_fraction": float(self.self_top_fraction[r]),
                "bias_slope": float(self.bias_slope[r]), "reason": self.reasons[r],
            }
            for r, h in enumerate(self.heads)
        ]


def label_head(recent_weight: float, self_top_fraction: float, span_fraction: float) -> tuple[str, str]:
    """(label, reason) from the three criteria, by the rules of `HeadClassification`."""
    if self_top_fraction >= DUPLICATE_MIN_SELF_FRACTION:
        return "duplicate-token", (
            f"{self_top_fraction:.0%} of sampled tokens rank themselves in their top "
            f"{DUPLICATE_SELF_TOP_K} keys (>= {DUPLICATE_MIN_SELF_FRACTION:.0%})")
    if recent_weight >= DETOK_MIN_RECENT_WEIGHT:
        return "detokenization", (
            f"weight {recent_weight:.2f} on the last {RECENT_WINDOW} positions "
            f"(>= {DETOK_MIN_RECENT_WEIGHT})")
    if span_fraction >= CONTEXTUAL_MIN_SPAN_FRACTION:
        return "contextual", (
            f"effective span {span_fraction:.0%} of the context "
            f"(>= {CONTEXTUAL_MIN_SPAN_FRACTION:.0%})")
    return "other", "no criterion met"


@torch.no_grad()
def _pattern_batch(layer, tokens: torch.Tensor, n: int, hs: list[int]) -> torch.Tensor:
    """B4 patterns for many query tokens at position n: [h, S, n+1]."""

    f = position_factors(layer)
    H = layer.n_heads
    s_key = layer.sigma_stats().pos_mean[: n + 1]
    Xe = layer.E[tokens]  # [S, d]
    s_n = _sigma(Xe + layer.P[n], layer.eps)  # [S]
    Q = torch.matmul(Xe, layer.Wq[hs]) + _head_rows(f.Qp, hs, H)[:, n].unsqueeze(1)
    Q = Q / s_n[None, :, None]  # [h, S, d']
    Kp = _head_rows(f.Kp, hs, H)[:, : n + 1]
    scores = torch.matmul(Q, Kp.transpose(1, 2))  # [h, S, n+1]
    scores.add_(_head_rows(f.Tp_raw, hs, H)[:, None, : n + 1]).div_(s_key)
    return torch.softmax(scores / layer.temperature, dim=-1)


@torch.no_grad()
def mean_pattern(layer, tokens, n: int, heads=None) -> np.ndarray:
    """The B4 pattern at query position n averaged over the query tokens `tokens`,
    [len(heads), n+1] float64: mean_u softmax_{j<=n}((T_ep + T_pp + T_p) / tau) with key
    sigma = vocabulary mean (the classification's `mean_pattern`, for any token sample)."""
    n = check_position(layer, n)
    hs = check_heads(layer, heads)
    ids = query_tensor(layer, tokens)
    return _np(_pattern_batch(layer, ids, n, hs).double().mean(1))


@torch.no_grad()
def iter_self_ranks(layer, tokens, heads=None, chunk_rows: int | None = None) -> Job:
    """Generator job: rank of each query token u among ALL V keys by T_ee(u, .) per head,
    1 = best, ties not counted against u; returns a LongTensor [len(heads), len(tokens)].

    Key sigma = mean over positions (the token-view default); the query's own sigma is a
    common factor and does not change ranks. Streams the vocabulary in row chunks
    through the rank-d' factors: cost ~ V d (H d') + V H S d'."""
    hs = check_heads(layer, heads)
    ids = query_tensor(layer, tokens)
    st = yield from _rescaled(sigma_stats_job(layer), 0.0, 0.5)
    s_key = st.tok_mean
    h, S, V, dh = len(hs), ids.numel(), layer.n_vocab, layer.d_head
    Q = torch.matmul(layer.E[ids], layer.Wq[hs])  # [h, S, d']
    Wk = layer.Wk[hs].permute(1, 0, 2).reshape(layer.d, h * dh)  # [d, h d']
    Ku = (layer.E[ids] @ Wk).reshape(S, h, dh).permute(1, 0, 2)  # [h, S, d']
    own = (Q * Ku).sum(-1) / s_key[ids]  # [h, S]  T_ee(u, u) up to 1/s_u
    above = torch.zeros(h, S, dtype=torch.long, device=layer.device)
    step = int(chunk_rows or max(256, min(V, (16 << 20) // max(1, h * S * 4))))
    buf = torch.empty(h, S, step, dtype=layer.dtype, device=layer.device)
    for a in range(0, V, step):
        b = min(V, a + step)
        K = (layer.E[a:b] @ Wk).reshape(b - a, h, dh).permute(1, 2, 0)  # [h, d', c]
        sc = torch.bmm(Q, K, out=buf[:, :, : b - a]) if b - a == step else torch.bmm(Q, K)
        sc.div_(s_key[a:b])
        gt = sc > own.unsqueeze(-1)
        above += gt.sum(-1)
        inside = (ids >= a) & (ids < b)
        if inside.any():  # never count u against itself (rounding may differ)
            cols = torch.nonzero(inside).squeeze(1)
            above[:, cols] -= gt[:, cols, ids[cols] - a].long()
        yield Progress(0.5 + 0.5 * b / V, f"self-rank over the vocabulary {b}/{V}")
    return above + 1


def iter_classify_heads(
    layer, n: int | None = None, sample: int = CLASSIFY_SAMPLE, seed: int = 0, heads=None,
) -> Job:
    """Generator job returning a `HeadClassification` (B4). n defaults to
    min(CLASSIFY_POSITION, L-1); `sample` query tokens are drawn with `seed`."""

    n = check_position(layer, min(CLASSIFY_POSITION, layer.n_positions - 1) if n is None else n)
    hs = check_heads(layer, heads)
    tokens = random_token_sample(layer, sample, seed)
    # The self-ranks do not depend on n: one whole-vocabulary pass per model, then a new n
    # costs only the patterns of the sample.
    ranks = yield from layer.cached_job(
        (_RANKS_KEY, tuple(tokens), tuple(hs)),
        lambda: _rescaled(iter_self_ranks(layer, tokens, hs), 0.0, 0.9))
    with torch.no_grad():
        ids = torch.tensor(tokens, dtype=torch.long, device=layer.device)
        pat = _pattern_batch(layer, ids, n, hs).double()  # [h, S, n+1]
        ent = -(pat * torch.log(pat.clamp_min(1e-300))).sum(-1)  # [h, S]
        span = ent.exp().mean(1)
        dist = torch.arange(n, -1, -1, dtype=torch.float64, device=layer.device)
        mean_distance = (pat * dist).sum(-1).mean(1)
        recent = pat[..., max(0, n + 1 - RECENT_WINDOW):].sum(-1).mean(1)
        mean_pattern = pat.mean(1)
        t_p = _head_rows(position_factors(layer).Tp_raw, hs, layer.n_heads)[:, : n + 1]
        t_p = t_p.double() / layer.sigma_stats().pos_mean[: n + 1].double()
        slope = t_p @ ls_weights(n + 1, device=layer.device)
        rk = ranks.double()
        self_median = rk.median(dim=1).values
        self_top = (ranks <= DUPLICATE_SELF_TOP_K).double().mean(1)
    yield Progress(1.0, "classified heads")
    span_np = _np(span)
    frac = span_np / (n + 1)
    rw, st_ = _np(recent), _np(self_top)
    decided = [label_head(float(rw[r]), float(st_[r]), float(frac[r])) for r in range(len(hs))]
    return HeadClassification(
        n=n, heads=hs, tokens=tokens, span=span_np, span_fraction=frac,
        mean_distance=_np(mean_distance), recent_weight=rw, self_rank_median=_np(self_median),
        self_top_fraction=st_, bias_slope=_np(slope),
        labels=[d[0] for d in decided], reasons=[d[1] for d in decided],
        mean_pattern=_np(mean_pattern),
    )


def classify_heads(layer, n: int | None = None, sample: int = CLASSIFY_SAMPLE, seed: int = 0,
                   heads=None) -> HeadClassification:
    """`iter_classify_heads` run to completion."""
    return run(iter_classify_heads(layer, n, sample, seed, heads))


# --------------------------------------------------------------------------- B5


@torch.no_grad()
def position_variance(layer) -> np.ndarray:
    """Var_k P[j, k] per position j (population variance over the d dims), [L]."""
    return _np(torch.var(layer.P, dim=1, correction=0))


@dataclass
class LastPositionsPP:
    """B5: raw T_pp(i, j) = (p_i Wq_h)(p_j Wk_h)^T for the last query positions.

    values[h, r, j] for query positions[r], keys j = 0..L-1; NaN where j > positions[r]."""

    heads: list[int]
    positions: list[int]
    values: np.ndarray


def raw_pp_last_positions(layer, count: int = 5, heads=None) -> LastPositionsPP:
    """Raw T_pp (no LayerNorm) for query positions L-count .. L-1 over j <= i."""
    hs = check_heads(layer, heads)
    L = layer.n_positions
    count = check_count(count, "number of positions")
    positions = list(range(max(0, L - count), L))
    vals = np.full((len(hs), len(positions), L), np.nan, dtype=np.float64)
    for r, i in enumerate(positions):
        vals[:, r, : i + 1] = positional_bias(layer, i, "none", hs).t_pp
    return LastPositionsPP(heads=hs, positions=positions, values=vals)


# --------------------------------------------------------------------------- B7


@dataclass
class TokenPositionSlopes:
    """B7: per query token u and head h, the least-squares slope over j = 0..L-1 of the
    raw e_u W^QK_h p_j^T (per position). slopes [V, len(heads)]."""

    heads: list[int]
    slopes: np.ndarray

    def column(self, head: int) -> np.ndarray:
        """Slopes of all V tokens for one head (by head index), e.g. for a histogram."""
        try:
            return self.slopes[:, self.heads.index(as_int(head, "head"))]
        except ValueError:
            raise InputError(f"Head {head} is not among the computed heads {self.heads}.") from None


@torch.no_grad()
def token_position_slopes(layer, heads=None) -> TokenPositionSlopes:
    """slope_u,h = e_u . (Wq_h (Kp_h^T w)), Kp_h = P Wk_h, w_j = (j - jbar)/sum (j - jbar)^2.

    The slope is linear in e_u, so the whole vocabulary is one [V, d] @ [d, H] product
    (tens of ms at GPT-2-small size). Cached per layer for all heads."""
    hs = check_heads(layer, heads)

    def compute() -> np.ndarray:
        f = position_factors(layer)
        w = ls_weights(layer.n_positions, dtype=layer.dtype, device=layer.device)
        c = torch.einsum("hjk,j->hk", f.Kp, w)  # [H, d']  Kp_h^T w
        A = torch.einsum("hdk,hk->dh", layer.Wq, c)  # [d, H]
        return _np(layer.E @ A)  # [V, H]

    full = layer.cached(_SLOPES_KEY, compute)
    return TokenPositionSlopes(heads=hs, slopes=full[:, hs])


@dataclass
class TokenPositionCurve:
    """B7 for one query token u: the raw e_u W^QK_h p_j^T over j = 0..L-1 and its
    least-squares line, raw and fit [len(heads), L]."""

    token: int
    heads: list[int]
    raw: np.ndarray
    fit: np.ndarray


@torch.no_grad()
def token_position_curve(layer, token: int, heads=None) -> TokenPositionCurve:
    """raw[h, j] = (e_u Wq_h)(p_j Wk_h)^T and fit[h, j] = mean_j raw + slope (j - jbar), whose
    slope is `token_position_slopes` for token u."""
    u = check_token(layer, token)
    hs = check_heads(layer, heads)
    f = position_factors(layer)
    q = torch.matmul(layer.E[u], layer.Wq[hs])  # [h, d']
    raw = torch.matmul(f.Kp[hs], q.unsqueeze(-1)).squeeze(-1).double()  # [h, L]
    L = raw.shape[1]
    j = torch.arange(L, dtype=torch.float64, device=raw.device)
    slope = raw @ ls_weights(L, device=raw.device)
    fit = (raw.mean(1) - slope * j.mean())[:, None] + slope[:, None] * j
    return TokenPositionCurve(token=u, heads=hs, raw=_np(raw), fit=_np(fit))


@dataclass
class SlopeExtremes:
    """Top (most positive) and bottom (most negative) slopes per head, [len(heads), k]."""

    heads: list[int]
    top_ids: np.ndarray
    top_values: np.ndarray
    bottom_ids: np.ndarray
    bottom_values: np.ndarray


def slope_extremes(result: TokenPositionSlopes, k: int = 10) -> SlopeExtremes:
    """The k tokens with the largest and the k with the smallest slope, per head."""
    V = result.slopes.shape[0]
    k = min(check_count(k, "k"), V)
    cols = result.slopes.T  # [h, V]
    order = np.argsort(cols, axis=1, kind="stable")
    bottom = order[:, :k]
    top = order[:, ::-1][:, :k]
    return SlopeExtremes(
        heads=list(result.heads),
        top_ids=top.copy(), top_values=np.take_along_axis(cols, top, 1),
        bottom_ids=bottom.copy(), bottom_values=np.take_along_axis(cols, bottom, 1),
    )


def slope_histogram(result: TokenPositionSlopes, head: int, bins: int = 60):
    """(counts, edges) of one head's slopes over the vocabulary (numpy.histogram)."""
    return np.histogram(result.column(as_int(head, "head")), bins=check_count(bins, "number of bins"))


@dataclass
class SlopeOverview:
    """B7 for every head: the slopes over the vocabulary, their k extremes, the extreme
    tokens' strings (`names`, as shown) and each head's histogram of slopes."""

    slopes: TokenPositionSlopes
    extremes: SlopeExtremes
    hists: dict[int, tuple[np.ndarray, np.ndarray]]
    names: dict[int, str]

    def extreme_rows(self, head: int, side: str) -> list[tuple[int, str, float]]:
        """(token id, token, slope) of one head's "top" or "bottom" extremes, in order."""
        r = self.extremes.heads.index(head)
        ids = getattr(self.extremes, f"{side}_ids")[r].tolist()
        values = getattr(self.extremes, f"{side}_values")[r].tolist()
        return [(t, self.names[t], v) for t, v in zip(ids, values)]


def slope_overview(layer, k: int = 10, bins: int = 60) -> SlopeOverview:
    """`token_position_slopes` of every head with `slope_extremes` (k) and one
    `slope_histogram` (bins) per head."""
    res = token_position_slopes(layer)
    ext = slope_extremes(res, k)
    ids = set(ext.top_ids.ravel().tolist()) | set(ext.bottom_ids.ravel().tolist())
    return SlopeOverview(slopes=res, extremes=ext,
                         hists={h: slope_histogram(res, h, bins) for h in res.heads},
                         names={t: display_token(layer.tokenizer, t) for t in ids})
