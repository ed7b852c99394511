"""The LayerNorm scale sigma(e_v + p_j) for every token and position (SPEC §1).

    sigma(x) = sqrt(mean_k (x_k - mean(x))^2 + eps)
    Var(e + p) = Var(e) + Var(p) + 2 Cov(e, p),   Cov(e, p) = (1/d) e . p_c

where p_c is p centred (centring e is then unnecessary: p_c sums to zero), so the whole
table is one [V, d] @ [d, L] product plus broadcasts, computed in row chunks; no
V x L x d tensor ever exists.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from detokgui.core.progress import Job, Progress


@dataclass
class SigmaStats:
    """S[v, j] = sigma(e_v + p_j) and its summaries."""

    table: torch.Tensor  # [V, L]
    pos_mean: torch.Tensor  # [L]  mean_v S[v, j]
    pos_max: torch.Tensor  # [L]
    pos_min: torch.Tensor  # [L]
    tok_mean: torch.Tensor  # [V]  mean_j S[v, j]

    def position_sigma(self, which: str) -> torch.Tensor | None:
        """Per-position sigma for position-only views: 'mean' | 'max' | 'min' | 'none'."""
        return _pick(which, {"mean": self.pos_mean, "max": self.pos_max, "min": self.pos_min})


def _pick(which: str, options: dict):
    if which == "none":
        return None
    try:
        return options[which]
    except KeyError:
        raise ValueError(f"sigma convention must be one of {[*options, 'none']}, not {which!r}")


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
    ~5x faster than torch.var_mean's one-pass (Welford) kernel."""
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
