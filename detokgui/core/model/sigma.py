"""The LayerNorm scale sigma(e_v + p_j) for every token and position
(docs/math/sigma.md#the-sigma-table).

    sigma(x) = sqrt(mean_k (x_k - mean(x))^2 + eps)
    Var(e + p) = Var(e) + Var(p) + 2 Cov(e, p),   Cov(e, p) = (1/d) e . p_c

where p_c is p centred (centring e is then unnecessary: p_c sums to zero), so the whole
table is one [V, d] @ [d, L] product plus broadcasts, computed in row chunks; no
V x L x d tensor ever exists.

The paper's position-only figures (docs/math/sigma.md#the-paper-convention) divide a key term a_j
by each token's own sigma and summarise over the vocabulary, so they need, per position
j, statistics of 1 / S[v, j] over v (`InverseSigmaStats`): the mean E_v[1/S[v, j]] and
the 2.5 / 97.5 percentiles (the 95% percentile interval of seaborn's
`errorbar=("pi", 95)`, numpy's default "linear" percentile). For a constant a_j:

    mean_v(a_j / S[v, j])          = a_j E_v[1/S[v, j]]
    percentile_q(a_j / S[v, j])    = a_j percentile_q(1/S[., j])          (a_j >= 0)
                                   = a_j percentile_{100-q}(1/S[., j])    (a_j < 0)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from detokgui.core.base.checks import check_choice
from detokgui.core.base.progress import Job, Progress


@dataclass
class SigmaStats:
    """S[v, j] = sigma(e_v + p_j) and its summaries."""

    table: torch.Tensor  # [V, L]
    pos_mean: torch.Tensor  # [L]  mean_v S[v, j]
    pos_max: torch.Tensor  # [L]
    pos_min: torch.Tensor  # [L]
    tok_mean: torch.Tensor  # [V]  mean_j S[v, j]

    def position_sigma(self, which: str) -> torch.Tensor | None:
        """Per-position sigma for position-only views: 'mean' | 'max' | 'min' | 'none'
        (`conventions.POSITION_SIGMAS`)."""

        options = {"mean": self.pos_mean, "max": self.pos_max, "min": self.pos_min}
        if check_choice("position sigma", which, (*options, "none")) == "none":
            return None
        return options[which]


@dataclass
class InverseSigmaStats:
    """Per position j, statistics of 1 / S[v, j] over the vocabulary v, each [L].

    mean = E_v[1/S[v, j]]; lo, hi = the (100-interval)/2 and (100+interval)/2 percentiles
    of 1/S[., j] (numpy's "linear" definition: order statistics of the V values at
    rank q/100 (V-1), interpolated linearly)."""

    mean: torch.Tensor
    lo: torch.Tensor
    hi: torch.Tensor
    interval: float = 95.0

    def band(self, a: torch.Tensor, n: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(low, high) of the per-token values a_j / S[v, j] over v for keys j = 0..n-1
        (n defaults to a's last dimension); a [..., n]. The ends swap where a_j < 0."""
        n = a.shape[-1] if n is None else n
        lo, hi = a * self.lo[:n], a * self.hi[:n]
        neg = a < 0
        return torch.where(neg, hi, lo), torch.where(neg, lo, hi)


def sigma(x: torch.Tensor, eps: float) -> torch.Tensor:
    """sigma over the last dimension (population variance), as ln_1 computes it."""
    var, _ = torch.var_mean(x, dim=-1, correction=0)
    return torch.sqrt(var + eps)


def sequence_sigma(layer, ids: torch.Tensor) -> torch.Tensor:
    """s_i = sigma(e_{t_i} + p_i) for a validated id sequence, [n]."""
    n = ids.shape[0]
    return sigma(layer.E[ids] + layer.P[:n], layer.eps)


def _centred_positions(layer) -> tuple[torch.Tensor, torch.Tensor]:
    """(2/d) P_c^T as [d, L] and Var(p_j) + eps as [L]."""
    P = layer.P
    Pc = P - P.mean(dim=1, keepdim=True)
    var_p = (Pc * Pc).mean(dim=1) + layer.eps
    return (Pc.T * (2.0 / layer.d)).contiguous(), var_p


def row_variance(X: torch.Tensor, rows_per_chunk: int = 4096) -> torch.Tensor:
    """Var(x) = mean_k (x_k - mean(x))^2 for every row of X [n, d], as [n].

    Two plain passes per chunk of rows through one reused scratch buffer: on CPU this is
    faster than torch.var_mean's one-pass (Welford) kernel (docs/performance.md)."""
    n = X.shape[0]
    var = torch.empty(n, dtype=X.dtype, device=X.device)
    scratch = torch.empty((min(n, rows_per_chunk), X.shape[1]), dtype=X.dtype, device=X.device)
    for a in range(0, n, rows_per_chunk):
        x = X[a : a + rows_per_chunk]
        c = torch.sub(x, x.mean(dim=1, keepdim=True), out=scratch[: x.shape[0]])
        torch.mean(c.square_(), dim=1, out=var[a : a + x.shape[0]])
    return var


def tokens_at_position(layer, j: int, rows: torch.Tensor | slice = slice(None)) -> torch.Tensor:
    """sigma(e_v + p_j) for the tokens `rows` (all by default) at one position j, [V]."""
    p = layer.P[j]
    pc = p - p.mean()
    E = layer.E[rows]
    var_e = row_variance(E)
    var = var_e + (pc * pc).mean() + layer.eps + (E @ pc) * (2.0 / layer.d)
    return var.clamp_min_(layer.eps).sqrt_()


def chunk_rows(layer, n_cols: int, budget_bytes: int = 32 << 20) -> int:
    """Rows per chunk so that a [rows, n_cols] working buffer stays near `budget_bytes`."""
    per_row = max(1, n_cols) * layer.E.element_size()
    return int(max(256, min(layer.n_vocab, budget_bytes // per_row)))


def iter_sigma_stats(layer, rows_per_chunk: int | None = None) -> Job[SigmaStats]:
    """Generator job: yields Progress per row chunk, returns SigmaStats.

    Per chunk of rows: S = sqrt(max(eps, Var(e) 1^T + E (2/d) P_c^T + 1 (Var(p) + eps)^T)),
    written straight into the table; summaries are reduced while the chunk is in cache
    (column sums in float32 per chunk, accumulated across chunks in float64)."""
    V, L = layer.n_vocab, layer.n_positions
    PcT2, var_p = _centred_positions(layer)
    table = torch.empty((V, L), dtype=layer.dtype, device=layer.device)
    tok_mean = torch.empty(V, dtype=layer.dtype, device=layer.device)
    pos_sum = torch.zeros(L, dtype=torch.float64, device=layer.device)
    pos_max = torch.full((L,), -torch.inf, dtype=layer.dtype, device=layer.device)
    pos_min = torch.full((L,), torch.inf, dtype=layer.dtype, device=layer.device)
    var_e = row_variance(layer.E)
    step = rows_per_chunk or chunk_rows(layer, L)
    for a in range(0, V, step):
        b = min(V, a + step)
        out = table[a:b]
        torch.addmm(var_p.unsqueeze(0), layer.E[a:b], PcT2, out=out)
        out.add_(var_e[a:b].unsqueeze(1)).clamp_min_(layer.eps).sqrt_()
        torch.mean(out, dim=1, out=tok_mean[a:b])
        pos_sum += out.sum(dim=0)
        torch.maximum(pos_max, out.amax(dim=0), out=pos_max)
        torch.minimum(pos_min, out.amin(dim=0), out=pos_min)
        yield Progress(b / V, f"sigma table {b}/{V}")
    return SigmaStats(
        table=table,
        pos_mean=(pos_sum / V).to(layer.dtype),
        pos_max=pos_max,
        pos_min=pos_min,
        tok_mean=tok_mean,
    )


def _percentile_ranks(n: int, q: float) -> tuple[int, int, float]:
    """numpy's "linear" percentile: the value at rank r = q/100 (n-1) of the sorted data is
    x[floor r] + (r - floor r)(x[ceil r] - x[floor r]); returns (floor r, ceil r, frac)."""
    r = q / 100.0 * (n - 1)
    lo = int(r // 1)
    return lo, min(lo + 1, n - 1), r - lo


def iter_inverse_sigma_stats(table: torch.Tensor, interval: float = 95.0,
                             cols_per_chunk: int | None = None) -> Job[InverseSigmaStats]:
    """Generator job: `InverseSigmaStats` of a sigma table S [V, L], per column j.

    Streams column chunks: each chunk is copied transposed ([c, V], contiguous, at most
    ~32 MB) in blocks of rows small enough to stay in cache (one strided copy of the
    whole chunk touches a new page per element), inverted in place,
    summed for the mean, and the two order statistics either side of each percentile
    rank are read from an unsorted partial selection of each column's tail (`topk` of
    ~2.5% of V at each end, then the two extreme values of that tail: faster than
    `kthvalue` per rank or a full sort; `torch.quantile` refuses inputs over 2^24
    elements). The interpolation is done on 1/S itself, so the result equals
    numpy's percentile of the per-token values."""
    V, L = table.shape
    if V < 1:
        raise ValueError("the sigma table has no rows")
    half = (100.0 - float(interval)) / 2.0
    low_r0, low_r1, low_f = _percentile_ranks(V, half)
    high_r0, high_r1, high_f = _percentile_ranks(V, 100.0 - half)
    c = int(cols_per_chunk or max(1, min(L, (32 << 20) // max(1, V * table.element_size()))))
    # CPU: ~64 KB blocks, below torch's grain for splitting a copy across threads
    block = V if table.device.type != "cpu" else max(1, (64 << 10) // (c * table.element_size()))
    mean = torch.empty(L, dtype=torch.float64, device=table.device)
    lo = torch.empty(L, dtype=table.dtype, device=table.device)
    hi = torch.empty(L, dtype=table.dtype, device=table.device)
    buf = torch.empty(c, V, dtype=table.dtype, device=table.device)
    for a in range(0, L, c):
        b = min(L, a + c)
        inv = buf[: b - a]
        for r in range(0, V, block):
            inv[:, r : r + block].copy_(table[r : r + block, a:b].T)
        inv.reciprocal_()
        mean[a:b] = inv.sum(dim=1)  # cascade summation: float32 is accurate to ~1e-7 here
        # ranks 0..low_r1 in some order; their largest two are ranks low_r1 and low_r0
        tail = inv.topk(low_r1 + 1, dim=1, largest=False, sorted=False).values
        top = tail.topk(min(2, low_r1 + 1), dim=1, largest=True).values
        x1, x0 = top[:, 0], (top[:, -1] if low_r1 > low_r0 else top[:, 0])
        lo[a:b] = x0 + (x1 - x0) * low_f
        # ranks high_r0..V-1 in some order; their smallest two are ranks high_r0 and high_r1
        tail = inv.topk(V - high_r0, dim=1, largest=True, sorted=False).values
        bottom = tail.topk(min(2, V - high_r0), dim=1, largest=False).values
        x0, x1 = bottom[:, 0], (bottom[:, -1] if high_r1 > high_r0 else bottom[:, 0])
        hi[a:b] = x0 + (x1 - x0) * high_f
        yield Progress(b / L, f"1/sigma percentiles {b}/{L}")
    mean /= V
    return InverseSigmaStats(mean=mean.to(table.dtype), lo=lo, hi=hi, interval=float(interval))
