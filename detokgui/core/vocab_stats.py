"""Whole-vocabulary head statistics (SPEC A4), and the pass that bigram AUROC rides on (A5).

For head h and every query token u, over all V keys v, the scores are

    T_ee(u, v) = (e_u Wq_h / s_u) . (e_v Wk_h / s_v)        (sigma convention as in A2)

and per (h, u):
    top-k keys        the k keys v with the highest T_ee(u, v)
    self-rank         1 + #{v != u : T_ee(u, v) > T_ee(u, u)}   (1 = u is its own best key)
    mean, variance    mean_v T_ee(u, v),  mean_v (T_ee(u, v) - mean)^2  (population)

Direction "queries" is the same with the roles swapped: for every key token v, over all
queries u, the scores T_ee(u, v) (top-k queries, v's rank among the queries of its own
column, the column's variance).

The V x V matrix is never held: with R = rows' factor (e Wq / s for queries) and
C = the columns' factor [V, d'], each chunk of rows is one [g, c, d'] @ [g, d', V]
product into one reused buffer (g heads at a time), reduced at once (top-k, diagonal,
self-rank, and AUROC when bigram counts are given). The mean and variance need no pass:
with C's column mean m_h and covariance Cov_h = (C - m_h)^T (C - m_h) / V (d' x d', in
float64), mean = R m_h^T and variance = R Cov_h R^T exactly.

Results are cached on disk per (model identity, sigma convention, direction, k, heads).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass

import numpy as np
import torch

from detokgui.core.affinity import SigmaChoice, token_sigmas
from detokgui.core.checks import check_choice, check_heads
from detokgui.core.diskcache import Entry
from detokgui.core.errors import InputError
from detokgui.core.identity import model_identity
from detokgui.core.progress import Job, Progress, run

DIRECTIONS = ("keys", "queries")
DEFAULT_K = 10
FORMAT = "detokgui-head-stats-v1"
BUDGET_BYTES = 64 << 20  # one score buffer [g, c, V]
_MOMENTS_KEY = "score_moments"


def _check_direction(direction: str) -> str:
    return check_choice("direction", direction, DIRECTIONS)


@dataclass
class HeadStats:
    """A4 statistics of every row token (query u for direction "keys", key v for
    "queries") for the heads `heads`: arrays indexed [head index in `heads`, token id]."""

    direction: str
    heads: list[int]
    sigma: SigmaChoice
    k: int
    top_ids: np.ndarray  # [h, V, k] int32, best first
    top_scores: np.ndarray  # [h, V, k] float32
    self_rank: np.ndarray  # [h, V] int64, 1 = the token itself scores highest
    mean: np.ndarray  # [h, V] float64
    variance: np.ndarray  # [h, V] float64

    def row(self, head: int) -> int:
        """Index of `head` in `heads`."""
        try:
            return self.heads.index(int(head))
        except ValueError:
            raise InputError(f"Head {head} was not computed (heads {self.heads}).") from None

    def order(self, head: int, by: str = "variance", descending: bool = True) -> np.ndarray:
        """Token ids sorted by `by` ("variance", "self_rank" or "top1" score) for one head;
        ties keep token-id order."""
        values = {"variance": self.variance, "self_rank": self.self_rank,
                  "top1": self.top_scores[..., 0]}.get(by)
        if values is None:
            raise InputError(f"sort by variance, self_rank or top1, not {by!r}")
        v = values[self.row(head)]
        return np.argsort(-v if descending else v, kind="stable")


@dataclass
class VocabPass:
    """What one pass returns: the statistics, and the AUROC when counts were given."""

    stats: HeadStats
    auroc: object | None  # auroc.BigramAUROC


# --------------------------------------------------------------------------- factors


def _sides(direction: str):
    """(row side, column side) names for token_sigmas and the weight attribute names."""
    return (("query", "Wq"), ("key", "Wk")) if direction == "keys" else (("key", "Wk"),
                                                                          ("query", "Wq"))


def _project(X: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """X [n, d] @ W [g, d, d'] as [g, n, d'] (a view), through one [n, d] @ [d, g d']
    product (a broadcast matmul would copy X once per head)."""
    g, d, dh = W.shape
    return (X @ W.permute(1, 0, 2).reshape(d, g * dh)).view(-1, g, dh).permute(1, 0, 2)


def row_factor(layer, sigma: SigmaChoice, direction: str, heads: list[int],
               rows=slice(None)) -> torch.Tensor:
    """R = e W / s for the row tokens `rows`, [h, n, d'] (Wq for direction "keys")."""
    (side, w), _ = _sides(direction)
    R = _project(layer.E[rows], getattr(layer, w)[heads]).contiguous()
    s = token_sigmas(layer, sigma, side)
    if s is not None:
        R.div_(s[rows].unsqueeze(-1))
    return R


def column_factor(layer, sigma: SigmaChoice, direction: str, heads: list[int]) -> torch.Tensor:
    """C^T = (e W / s)^T for every column token, [h, d', V], contiguous."""
    _, (side, w) = _sides(direction)
    C = _project(layer.E, getattr(layer, w)[heads])  # [h, V, d'], a view of a new product
    s = token_sigmas(layer, sigma, side)
    if s is not None:
        C.div_(s.unsqueeze(-1))
    return C.transpose(1, 2).contiguous()


def key_score_moments(layer, sigma: SigmaChoice | None = None, direction: str = "keys",
                      heads=None) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) over the V columns of every row's scores, [h, V] float64 each:
    mean = R m^T, variance = R Cov R^T with C's column mean m and covariance Cov (1/V).
    Kept on the layer per head, sigma convention and direction (16 bytes per token)."""
    sigma = sigma or SigmaChoice()
    _check_direction(direction)
    hs = check_heads(layer, heads)
    with torch.inference_mode():
        per_head = [layer.cached((_MOMENTS_KEY, sigma, direction, h),
                                 lambda h=h: _moments(layer, sigma, direction, h)) for h in hs]
    return np.stack([m[0] for m in per_head]), np.stack([m[1] for m in per_head])


def _moments(layer, sigma: SigmaChoice, direction: str, h: int):
    V = layer.n_vocab
    Ct = column_factor(layer, sigma, direction, [h])[0].double()  # [d', V]
    m = Ct.mean(dim=1)
    Cc = Ct - m[:, None]
    cov = (Cc @ Cc.T) / V
    R = row_factor(layer, sigma, direction, [h])[0].double()  # [V, d']
    return (R @ m).cpu().numpy(), ((R @ cov) * R).sum(dim=1).clamp_min_(0).cpu().numpy()


# --------------------------------------------------------------------------- the pass


def _plan(layer, n_heads: int, budget_bytes: int) -> tuple[int, int]:
    """(heads per group g, rows per chunk c) for a score buffer [g, c, V] of about
    `budget_bytes`: all heads at once unless that leaves fewer than 16 rows."""
    V = layer.n_vocab
    row_bytes = V * layer.E.element_size()
    g = n_heads if n_heads * 16 * row_bytes <= budget_bytes else 1
    return g, max(1, min(V, budget_bytes // (g * row_bytes)))


def default_budget(layer) -> int:
    """Bytes of one score buffer: 64 MB on CPU, 512 MB on CUDA (the AUROC needs a second)."""
    return (512 << 20) if layer.device.type == "cuda" else BUDGET_BYTES


def iter_vocab_pass(layer, sigma: SigmaChoice | None = None, *, direction: str = "keys",
                    k: int = DEFAULT_K, heads=None, counts=None, rows=None,
                    budget_bytes: int | None = None) -> Job[VocabPass]:
    """Generator job: one streamed pass over all V x V scores of the heads `heads`,
    yielding Progress per chunk of rows; returns VocabPass (not cached: see
    `iter_head_stats`, `auroc.iter_bigram_auroc`). With `counts` (a CorpusCounts, direction
    "keys" only) the bigram AUROC of every query token is computed in the same loop.
    `rows` limits the pass to some row tokens (default all); the others' entries are left
    at top_ids -1, self_rank 0, AUROC NaN."""
    sigma = sigma or SigmaChoice()
    from detokgui.core import auroc as A

    _check_direction(direction)
    hs = check_heads(layer, heads)
    V = layer.n_vocab
    k = max(1, min(int(k), V))
    if counts is not None and direction != "keys":
        raise InputError("Bigram AUROC ranks keys for each query: use direction 'keys'.")
    pos = A.PositiveSets.from_counts(counts, layer) if counts is not None else None
    mean, var = key_score_moments(layer, sigma, direction, hs)
    # With counts, rows are visited by decreasing number of positives (see auroc).
    order = np.arange(V) if rows is None else np.unique(np.asarray(rows, dtype=np.int64))
    if order.size == 0 or order[0] < 0 or order[-1] >= V:
        raise InputError(f"The row tokens must be ids in 0..{V - 1}.")
    if pos is not None:
        order = order[np.argsort(-pos.m[order], kind="stable")]
    g, c = _plan(layer, len(hs), budget_bytes or default_budget(layer))
    dev = layer.device
    top_ids = torch.full((len(hs), V, k), -1, dtype=torch.int32)
    top_scores = torch.full((len(hs), V, k), torch.nan, dtype=torch.float32)
    self_rank = torch.zeros((len(hs), V), dtype=torch.int64)
    numer = torch.zeros((len(hs), V), dtype=torch.float64) if pos is not None else None
    total = len(hs) * order.shape[0]
    done = 0
    with torch.inference_mode():
        buf = torch.empty(g * c * V, dtype=layer.dtype, device=dev)
        tmp = torch.empty_like(buf) if pos is not None else None
        for h0 in range(0, len(hs), g):
            group = hs[h0 : h0 + g]
            gi = slice(h0, h0 + len(group))
            Ct = column_factor(layer, sigma, direction, group)
            for a in range(0, order.shape[0], c):
                rows_np = order[a : a + c]
                n = rows_np.shape[0]
                rows = torch.from_numpy(rows_np).to(dev)
                R = row_factor(layer, sigma, direction, group, rows)
                S = buf[: len(group) * n * V].view(len(group), n, V)
                torch.bmm(R, Ct, out=S)
                vals, idx = torch.topk(S, k, dim=-1)
                rows_cpu = torch.from_numpy(rows_np)
                top_ids[gi, rows_cpu] = idx.to(torch.int32).cpu()
                top_scores[gi, rows_cpu] = vals.float().cpu()
                if pos is not None:
                    numer[gi, rows_cpu] = A.chunk_numerator(S, tmp, rows_np, pos).cpu()
                diag = S.gather(2, rows.view(1, n, 1).expand(len(group), n, 1))
                greater = S.sub_(diag).gt_(0).sum(dim=-1)
                self_rank[gi, rows_cpu] = greater.to(torch.int64).cpu() + 1
                done += len(group) * n
                yield Progress(done / total, f"whole-vocabulary pass: heads {group[0]}-"
                               f"{group[-1]}, {a + n}/{order.shape[0]} tokens")
    stats = HeadStats(direction, hs, sigma, k, top_ids.numpy(), top_scores.numpy(),
                      self_rank.numpy(), mean, var)
    result = None
    if pos is not None:
        numer = numer.numpy()
        if rows is not None:
            numer[:, np.setdiff1d(np.arange(V), order)] = np.nan
        result = A.BigramAUROC.from_numerators(numer, pos, hs, sigma, counts.key)
    return VocabPass(stats, result)


# --------------------------------------------------------------------------- cache


def _key(layer, *parts) -> str:
    spec = json.dumps([FORMAT, model_identity(layer), *parts], default=str)
    return hashlib.sha256(spec.encode()).hexdigest()


def _stats_entry(layer, sigma: SigmaChoice, direction: str, k: int, heads) -> Entry:
    key = _key(layer, "stats", sigma.convention, list(sigma.positions), direction, int(k),
               list(heads))
    h, V = len(heads), layer.n_vocab
    return Entry("vocab-stats", key, FORMAT,
                 {"top_ids": ((h, V, k), "i"), "top_scores": ((h, V, k), "f"),
                  "self_rank": ((h, V), "i"), "mean": ((h, V), "f"), "variance": ((h, V), "f")})


def save_stats(layer, st: HeadStats) -> None:
    entry = _stats_entry(layer, st.sigma, st.direction, st.k, st.heads)
    entry.save(entry.arrays_of(st))


def load_stats(layer, sigma: SigmaChoice, direction: str, k: int, heads) -> HeadStats | None:
    """The cached statistics, or None when not cached (or damaged: then discarded)."""
    return _stats_entry(layer, sigma, direction, k, heads).load(
        lambda a, _: HeadStats(direction, list(heads), sigma, int(k), **a))


def iter_head_stats(layer, sigma: SigmaChoice | None = None, *, direction: str = "keys",
                    k: int = DEFAULT_K, heads=None, use_cache: bool = True,
                    budget_bytes: int | None = None) -> Job[HeadStats]:
    """Generator job: `HeadStats` of every token for the heads `heads` (all by default),
    from the disk cache when this model, sigma convention, direction, k and heads were
    computed before; otherwise one pass (Progress per chunk), then cached atomically."""
    sigma = sigma or SigmaChoice()
    _check_direction(direction)
    hs = check_heads(layer, heads)
    k = max(1, min(int(k), layer.n_vocab))
    if use_cache:
        cached = load_stats(layer, sigma, direction, k, hs)
        if cached is not None:
            yield Progress(1.0, "head statistics (cached)")
            return cached
    res = yield from iter_vocab_pass(layer, sigma, direction=direction, k=k, heads=hs,
                                     budget_bytes=budget_bytes)
    save_stats(layer, res.stats)
    return res.stats


def head_stats(layer, sigma: SigmaChoice | None = None, *, on_progress=None,
               **kwargs) -> HeadStats:
    """`iter_head_stats` run to completion."""
    return run(iter_head_stats(layer, sigma, **kwargs), on_progress)


# --------------------------------------------------------------------------- sorted matrix


@dataclass
class SortedBlock:
    """A block of the "sorted matrix" of one head: row r is the r-th token by decreasing
    variance of its scores, column j its j-th highest score (rank j + 1).

    values[i, j] = the score of rank col_ranks[j] + 1 in the row of token row_ids[i], whose
    position in the variance order is row_ranks[i]; key_ids[i, j] the column token there.
    Rows and columns are taken with strides `row_step`, `col_step` (1 = every one) so the
    block has at most max_rows x max_cols entries."""

    head: int
    direction: str
    sigma: SigmaChoice
    values: np.ndarray  # [nr, nc], the layer's dtype
    key_ids: np.ndarray  # [nr, nc] int64
    row_ids: np.ndarray  # [nr]
    row_ranks: np.ndarray  # [nr]
    col_ranks: np.ndarray  # [nc]
    row_step: int
    col_step: int


def sorted_matrix_block(layer, head: int, sigma: SigmaChoice | None = None, *,
                        direction: str = "keys", rows: tuple[int, int | None] = (0, None),
                        cols: tuple[int, int | None] = (0, None), max_rows: int = 256,
                        max_cols: int = 512, row_order: np.ndarray | None = None) -> SortedBlock:
    """Rows rows[0]..rows[1]-1 (in the order of decreasing score variance, or `row_order`)
    and columns (score ranks, 0-based) cols[0]..cols[1]-1 of the sorted matrix of one
    head, subsampled with a uniform stride to at most max_rows x max_cols. Costs one
    [n, d'] @ [d', V] product and a top-k (or sort) of n <= max_rows rows."""
    sigma = sigma or SigmaChoice()
    _check_direction(direction)
    (h,) = check_heads(layer, [head])
    V = layer.n_vocab
    r0, r1 = _span(rows, V, "rows")
    c0, c1 = _span(cols, V, "cols")
    if row_order is None:
        _, var = key_score_moments(layer, sigma, direction, [h])
        row_order = np.argsort(-var[0], kind="stable")
    rstep = max(1, math.ceil((r1 - r0) / max(1, int(max_rows))))
    cstep = max(1, math.ceil((c1 - c0) / max(1, int(max_cols))))
    row_ranks = np.arange(r0, r1, rstep)
    row_ids = np.asarray(row_order)[row_ranks]
    col_ranks = np.arange(c0, c1, cstep)
    with torch.inference_mode():
        ids = torch.from_numpy(row_ids).to(layer.device)
        R = row_factor(layer, sigma, direction, [h], ids)[0]
        S = R @ column_factor(layer, sigma, direction, [h])[0]  # [n, V]
        if c1 <= max(4096, V // 8):
            vals, idx = torch.topk(S, c1, dim=1)
        else:
            vals, idx = torch.sort(S, dim=1, descending=True)
        sel = torch.from_numpy(col_ranks).to(layer.device)
        values = vals[:, sel].cpu().numpy()
        key_ids = idx[:, sel].cpu().numpy()
    return SortedBlock(h, direction, sigma, values, key_ids, row_ids, row_ranks, col_ranks,
                       rstep, cstep)


def _span(span, V: int, what: str) -> tuple[int, int]:
    a, b = span
    a, b = int(a), V if b is None else int(b)
    if not 0 <= a < b <= V:
        raise InputError(f"The {what} {a}..{b} must satisfy 0 <= start < end <= {V}.")
    return a, b
