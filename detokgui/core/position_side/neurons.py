"""Position-embedding "neurons" (docs/math/position-side.md#b6-position-embedding-neurons): each
residual dimension k of P as a curve over positions, its fits, its period, and how much the
position-heavy dimensions overlap the token embedding's main directions.

For a curve y_j = P[j, k] (or P[j, k] / s_j with s_j = mean_v sigma(e_v + p_j) when
`scaled`), j = 0..L-1:

    norm   = sqrt(sum_j y_j^2)
    slope  = sum_j (j - jbar)(y_j - ybar) / sum_j (j - jbar)^2     (least squares, per position)
    r2     = 1 - SS_res / SS_tot of that line (NaN for a constant curve)
    F_f    = rfft(y - ybar)_f,  f = 1..L//2 (non-DC bins),  power_f = |F_f|^2
    frequency = argmax_f power_f;  period = L / frequency  (inf when there is no non-DC power)
    peak_share = (power at frequency-1, frequency, frequency+1, non-DC only) / sum_f power_f

Groups, first match wins (thresholds are the module constants):
    "linear"    r2 >= LINEAR_MIN_R2
    "periodic"  frequency >= PERIODIC_MIN_CYCLES and peak_share >= PERIODIC_MIN_PEAK_SHARE
    "other"     otherwise

The peak share counts the two neighbouring bins as well because a sine whose period does
not divide L spreads its power over adjacent bins (a pure sine keeps >= ~0.8 of it there).
A straight line has most of its power at f = 1 too, which is why "linear" is tested first
and "periodic" needs at least PERIODIC_MIN_CYCLES full cycles.

Results are numpy arrays (float64) on the CPU, indexed by dimension k = 0..d-1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from detokgui.core.base.checks import check_choice, check_count
from detokgui.core.base.errors import InputError
from detokgui.core.base.numbers import num
from detokgui.core.base.progress import Job, Progress, run

NEURON_GROUPS = ("linear", "periodic", "other")
#: "linear" when the least-squares line explains at least this share of the variance.
LINEAR_MIN_R2 = 0.8
#: "periodic" needs this many cycles over the L positions (dominant frequency index) ...
PERIODIC_MIN_CYCLES = 2
#: ... and at least this share of the non-DC FFT power in the peak bin and its neighbours.
#:
#: Checked on learned weights (issue 11): the trained demo model (shared/models/demo,
#: L = 128) has position dimensions that are plainly periodic to the eye, about 9 cycles of
#: period 14.2 (dims 94, 107, 84, 3, 119) or 5 cycles of period 25.6 (dims 104, 10, 112,
#: 53, 32, 60), but noisy: their peak shares are 0.32-0.47, so the first threshold (0.6)
#: called every one of them "other" and the group "periodic" came out empty. White noise
#: never gets near that: over 4000 white-noise columns the largest peak share was 0.22 at
#: L = 128 (99.9th percentile 0.20) and 0.045 at L = 1024. 0.3 sits above all noise and
#: below the visibly periodic dims; the shares just under it (dims 11, 2, 97, 31: 0.23-0.29)
#: are curves where a period can be guessed but noise dominates, and dim 106 (0.28, two
#: "cycles") is an arch, not a periodic curve. Synthetic sines (tests/test_neurons.py) keep
#: >= 0.8. Known blind spot: smooth random walks concentrate power at low frequencies and
#: can pass as periodic with 2-4 cycles (the threshold does not change that).
PERIODIC_MIN_PEAK_SHARE = 0.3

_GRAM_KEY = "neurons.gram"


@dataclass
class NeuronStats:
    """Per-dimension statistics of the position-embedding curves, arrays [d]."""

    scaled: bool
    n_positions: int
    norm: np.ndarray
    slope: np.ndarray
    intercept: np.ndarray
    r2: np.ndarray
    frequency: np.ndarray  # int, dominant non-DC rfft bin; 0 = none
    period: np.ndarray  # n_positions / frequency; inf when frequency == 0
    peak_share: np.ndarray
    group: list[str]

    def order(self, by: str = "norm", descending: bool = True) -> np.ndarray:
        """Dimensions sorted by one of the array fields (norm, slope, r2, period, ...)."""
        if by not in ("norm", "slope", "intercept", "r2", "frequency", "period", "peak_share"):
            raise InputError(f"Cannot sort position neurons by {by!r}.")
        vals = np.asarray(getattr(self, by), dtype=np.float64)
        key = np.where(np.isnan(vals), -np.inf if descending else np.inf, vals)
        idx = np.argsort(key, kind="stable")
        return idx[::-1].copy() if descending else idx

    def dims_in(self, group: str) -> np.ndarray:
        """The dimensions labelled `group`, in order of decreasing norm."""
        check_choice("group", group, NEURON_GROUPS)
        return np.array([k for k in self.order("norm") if self.group[k] == group], dtype=np.int64)


def group_of(r2: float, frequency: int, peak_share: float) -> str:
    """The group label from the fit statistics (rules in the module docstring)."""
    if r2 >= LINEAR_MIN_R2:  # NaN compares False
        return "linear"
    if frequency >= PERIODIC_MIN_CYCLES and peak_share >= PERIODIC_MIN_PEAK_SHARE:
        return "periodic"
    return "other"


#: The groups' rules in words, for a person (the window's tooltips).
GROUP_RULES = (
    "Groups (first match wins; thresholds in detokgui/core/position_side/neurons.py):\n"
    f"  linear — the least-squares line explains R² ≥ {LINEAR_MIN_R2:g} of the variance;\n"
    f"  periodic — dominant FFT frequency ≥ {PERIODIC_MIN_CYCLES} cycles over the L positions\n"
    f"      and ≥ {PERIODIC_MIN_PEAK_SHARE:g} of the non-DC power in that bin and its two "
    "neighbours;\n"
    "  other — everything else."
)


def period_text(p: float) -> str:
    """A period in positions with one decimal; ∞ for a curve without one."""
    return "∞" if not math.isfinite(p) else f"{p:.1f}"


def slope_text(v: float) -> str:
    """A slope with 4 significant digits, in scientific notation outside 1e-3..1e3; blank
    for NaN."""
    if math.isnan(v):
        return ""
    return f"{v:.2e}" if v != 0 and not 1e-3 <= abs(v) < 1e3 else f"{v:.4g}"


def describe_dim(stats: NeuronStats, k: int) -> str:
    """Dimension k's statistics in three lines."""
    st = stats
    return (f"dim {k}: norm {st.norm[k]:.6g}, slope {st.slope[k]:.6g}, R² {st.r2[k]:.4f}\n"
            f"period {period_text(float(st.period[k]))} positions (f = "
            f"{int(st.frequency[k])} cycles, peak share {st.peak_share[k]:.2f})\n"
            f"group {st.group[k]}")


def summary_text(stats: NeuronStats) -> str:
    """d, L and how many dimensions each group has, raw or scaled, in one line."""
    counts = " · ".join(f"{g} {stats.group.count(g)}" for g in NEURON_GROUPS)
    return (f"d = {len(stats.group)} dims · L = {stats.n_positions} positions · {counts}"
            + (" · scaled by σ̄_j" if stats.scaled else " · raw"))


def position_curves(layer, scaled: bool = False) -> np.ndarray:
    """The curves P[:, k] as an [L, d] float64 array; with `scaled`, row j divided by the
    vocabulary-mean sigma s_j = mean_v sigma(e_v + p_j) (what ln_1 sees on average)."""
    with torch.no_grad():
        P = layer.P.detach().to("cpu", torch.float64)
        if scaled:
            P = P / layer.sigma_stats().pos_mean.detach().to("cpu", torch.float64)[:, None]
    return P.numpy().copy()


def curve_stats(curves, scaled: bool = False) -> NeuronStats:
    """Fits, FFT period and group of every column of `curves` [L, d] (any array)."""
    Y = np.asarray(curves, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[0] < 1:
        raise InputError(f"Position curves must be a non-empty [L, d] array, not {Y.shape}.")
    L, d = Y.shape
    x = np.arange(L, dtype=np.float64)
    xc = x - x.mean()
    sxx = float(xc @ xc)
    ybar = Y.mean(axis=0)
    Yc = Y - ybar
    slope = (xc @ Yc) / sxx if sxx > 0 else np.zeros(d)
    intercept = ybar - slope * x.mean()
    ss_tot = (Yc * Yc).sum(axis=0)
    resid = Yc - np.outer(xc, slope)
    ss_res = (resid * resid).sum(axis=0)
    tiny = 1e-24 * np.maximum(1.0, (Y * Y).sum(axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = np.where(ss_tot > tiny, 1.0 - ss_res / ss_tot, np.nan)

    power = np.abs(np.fft.rfft(Yc, axis=0)[1:]) ** 2  # [L//2, d], non-DC bins f = 1..
    freq = np.zeros(d, dtype=np.int64)
    share = np.zeros(d)
    if power.shape[0]:
        total = power.sum(axis=0)
        peak = power.argmax(axis=0)  # 0-based into f = 1..
        has = total > tiny
        rows = np.arange(d)
        band = power[peak, rows].copy()
        left, right = peak - 1, peak + 1
        ok_l, ok_r = left >= 0, right < power.shape[0]
        band[ok_l] += power[left[ok_l], rows[ok_l]]
        band[ok_r] += power[right[ok_r], rows[ok_r]]
        freq = np.where(has, peak + 1, 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(has, band / total, 0.0)
    with np.errstate(divide="ignore"):
        period = np.where(freq > 0, L / np.maximum(freq, 1), np.inf)
    group = [group_of(float(r2[k]), int(freq[k]), float(share[k])) for k in range(d)]
    return NeuronStats(
        scaled=bool(scaled), n_positions=L, norm=np.sqrt((Y * Y).sum(axis=0)), slope=slope,
        intercept=intercept, r2=r2, frequency=freq, period=period.astype(np.float64),
        peak_share=share, group=group,
    )


def neuron_stats(layer, scaled: bool = False) -> NeuronStats:
    """`curve_stats` of the layer's position embedding (raw, or LayerNorm-scaled)."""
    return curve_stats(position_curves(layer, scaled), scaled=scaled)


def position_heavy_dims(stats: NeuronStats, m: int) -> np.ndarray:
    """The m dimensions with the largest curve norm (descending)."""
    d = stats.norm.shape[0]
    m = check_count(m, "number of position-heavy dimensions", 1, d)
    return stats.order("norm")[:m]


# --------------------------------------------------------------------------- SVD overlap


def iter_token_directions(layer, r: int, centre: bool = False,
                          rows_per_chunk: int = 8192) -> Job[tuple[np.ndarray, np.ndarray]]:
    """Generator job: top-r right singular vectors of E (rows [r, d], unit norm) and the
    singular values [r], largest first.

    From the eigendecomposition of the d x d Gram matrix E^T E, accumulated in float64
    over row chunks of E (one pass over E, ~V d^2 flops: a few seconds on a small CPU at
    GPT-2-small size, so it yields progress per chunk); cached per layer. With `centre`,
    of the mean-removed embedding E - mean_v e_v."""
    d = layer.d
    r = check_count(r, "number of SVD directions", 1, d)

    def eigen():
        G, mu = yield from layer.cached_job(_GRAM_KEY, lambda: _iter_gram(layer, rows_per_chunk))
        if centre:
            G = G - torch.outer(mu, mu) / layer.n_vocab
        vals, vecs = torch.linalg.eigh(G)
        return vals.flip(0).clamp_min(0).sqrt().numpy(), vecs.flip(1).T.contiguous().numpy()

    eig = yield from layer.cached_job((_GRAM_KEY, bool(centre)), eigen)
    yield Progress(1.0, "token embedding directions")
    s, Vt = eig
    return Vt[:r].copy(), s[:r].copy()


def _iter_gram(layer, rows_per_chunk: int) -> Job[tuple[torch.Tensor, torch.Tensor]]:
    """(E^T E [d, d], sum_v e_v [d]) in float64 on the CPU, over row chunks of E."""
    E, V, d = layer.E, layer.n_vocab, layer.d
    G = torch.zeros(d, d, dtype=torch.float64, device=E.device)
    total = torch.zeros(d, dtype=torch.float64, device=E.device)
    step = max(1, int(rows_per_chunk))
    with torch.no_grad():
        for a in range(0, V, step):
            b = min(V, a + step)
            Ec = E[a:b]
            G += (Ec.T @ Ec).double()
            total += Ec.sum(0, dtype=torch.float64)
            yield Progress(b / V, f"token embedding Gram matrix {b}/{V}")
    return G.cpu(), total.cpu()


def token_directions(layer, r: int, centre: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """`iter_token_directions` run to completion: (Vt [r, d], singular values [r])."""
    return run(iter_token_directions(layer, r, centre))


@dataclass
class EmbeddingOverlap:
    """How much each of the top-r token-embedding directions lies on the m position-heavy dims.

    loadings[i, c] = Vt[i, dims[c]]^2 (squared weight of unit direction i on dim dims[c]);
    overlap[i] = sum_c loadings[i, c], a fraction in 0..1; baseline = m / d is what a
    random unit direction would give on average."""

    dims: np.ndarray  # [m] position-heavy dims, by decreasing norm
    dim_norms: np.ndarray  # [m]
    singular_values: np.ndarray  # [r]
    loadings: np.ndarray  # [r, m]
    overlap: np.ndarray  # [r]
    baseline: float
    scaled: bool
    centred: bool


def iter_embedding_overlap(layer, r: int = 10, m: int = 20, scaled: bool = False,
                           centre: bool = False) -> Job[EmbeddingOverlap]:
    """Generator job: overlap of the m highest-norm position dims (of the raw or scaled
    curves) with E's top-r right singular vectors."""
    st = neuron_stats(layer, scaled)
    dims = position_heavy_dims(st, m)
    Vt, s = yield from iter_token_directions(layer, r, centre)
    load = Vt[:, dims] ** 2
    return EmbeddingOverlap(
        dims=dims, dim_norms=st.norm[dims], singular_values=s, loadings=load,
        overlap=load.sum(axis=1), baseline=len(dims) / layer.d, scaled=bool(scaled),
        centred=bool(centre),
    )


def embedding_overlap(layer, r: int = 10, m: int = 20, scaled: bool = False,
                      centre: bool = False) -> EmbeddingOverlap:
    """`iter_embedding_overlap` run to completion."""
    return run(iter_embedding_overlap(layer, r, m, scaled, centre))


def overlap_title(res: EmbeddingOverlap) -> str:
    """The overlap plot's title: which E (centred or not) on how many heaviest dims of P."""
    what = "scaled" if res.scaled else "raw"
    return (f"SVD directions of {'centred ' if res.centred else ''}E on the {len(res.dims)} "
            f"heaviest dims of P ({what})")


def overlap_note(res: EmbeddingOverlap, shown: int = 4) -> tuple[str, str]:
    """The overlap view's two short lines, the mean overlap and the first `shown` heavy
    dims, and their tooltip with the baseline and every heavy dim. Short lines keep the
    plot its room: the view is ~200 pixels wide under the table of a small window (m/d is
    in its legend)."""
    more = ", …" if len(res.dims) > shown else ""
    dims = ", ".join(str(int(k)) for k in res.dims[:shown]) + more
    return (f"mean overlap {num(float(res.overlap.mean()))}\nheavy dims {dims}",
            f"The mean overlap of the {len(res.overlap)} directions (random: m/d = "
            f"{num(res.baseline)}).\nAll position-heavy dims: "
            + ", ".join(str(int(k)) for k in res.dims))
