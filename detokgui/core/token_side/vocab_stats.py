"""Whole-vocabulary head statistics (docs/math/token-side.md#a4-head-statistics): cached, and
the sorted matrix of one head.

For head h and every query token u, over all V keys v, the scores are

    T_ee(u, v) = (e_u Wq_h / s_u) . (e_v Wk_h / s_v)        (sigma convention as in A2)

and per (h, u):
    top-k keys        the k keys v with the highest T_ee(u, v)
    self-rank         1 + #{v != u : T_ee(u, v) > T_ee(u, u)}   (1 = u is its own best key)
    mean, variance    mean_v T_ee(u, v),  mean_v (T_ee(u, v) - mean)^2  (population)

Direction "queries" is the same with the roles swapped: for every key token v, over all
queries u, the scores T_ee(u, v) (top-k queries, v's rank among the queries of its own
column, the column's variance).

They come from one whole-vocabulary pass (`vocab_pass.iter_vocab_pass`, which never holds
the V x V matrix); the mean and variance need no pass (`vocab_pass.key_score_moments`).

Results are cached on disk per (model identity, sigma convention, direction, k, heads).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from detokgui.core.base.checks import check_heads
from detokgui.core.base.diskcache import Entry
from detokgui.core.base.errors import InputError
from detokgui.core.base.numbers import num
from detokgui.core.base.progress import Job, Progress, run
from detokgui.core.model.conventions import SigmaChoice
from detokgui.core.model.identity import model_identity
from detokgui.core.token_side.vocab_pass import (
    DEFAULT_K,
    HeadStats,
    check_direction,
    column_factor,
    iter_vocab_pass,
    key_score_moments,
    row_factor,
)

FORMAT = "detokgui-head-stats-v1"
PLURAL = {"query": "queries", "key": "keys"}


def sides(direction: str) -> tuple[str, str]:
    """(row side, column side): ("query", "key") for direction "keys"."""
    return ("query", "key") if direction == "keys" else ("key", "query")


def summary(st: HeadStats, head: int) -> str:
    """One head's statistics in a line: its median self-rank and how many row tokens are
    their own top column token."""
    row_side, col_side = sides(st.direction)
    rank = st.self_rank[st.row(head)]
    n_own = int((rank == 1).sum())
    own = (f"{num(n_own)} token{'s are' if n_own != 1 else ' is'} "
           f"{'their' if n_own != 1 else 'its'} own top {col_side}")
    return (f"head {head} · {row_side} → {PLURAL[col_side]} · median self-rank "
            f"{num(float(np.median(rank)))} · {own} · {st.sigma.label()}")


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
    check_direction(direction)
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

    def levels(self) -> tuple[float, float]:
        """Colour levels: the 1st to the 99.5th percentile of the finite values as float32
        (0..1 without any; one unit wide where they meet)."""
        values = np.asarray(self.values, dtype=np.float32)
        finite = values[np.isfinite(values)]
        if not finite.size:
            return 0.0, 1.0
        lo, hi = float(np.percentile(finite, 1)), float(np.percentile(finite, 99.5))
        return lo, hi if hi > lo else lo + 1

    def title(self) -> str:
        """'Sorted T_ee matrix, head 3 (every 2 × 1) (<sigma>)': the strides when not 1."""
        step = (f" (every {self.row_step} × {self.col_step})"
                if self.row_step > 1 or self.col_step > 1 else "")
        return f"Sorted T_ee matrix, head {self.head}{step} ({self.sigma.label()})"

    def describe(self, i: int, j: int, name: Callable[[int], str]) -> str:
        """The hover text of entry (i, j); `name(token id)` is a token's display form."""
        row_side, col_side = sides(self.direction)
        u, v = int(self.row_ids[i]), int(self.key_ids[i, j])
        return (f"{row_side} {name(u)!r} (variance rank {num(int(self.row_ranks[i]) + 1)})"
                f" · {col_side} {name(v)!r} at rank {num(int(self.col_ranks[j]) + 1)}"
                f" · T_ee = {num(float(self.values[i, j]))}")


def sorted_matrix_block(layer, head: int, sigma: SigmaChoice | None = None, *,
                        direction: str = "keys", rows: tuple[int, int | None] = (0, None),
                        cols: tuple[int, int | None] = (0, None), max_rows: int = 256,
                        max_cols: int = 512, row_order: np.ndarray | None = None) -> SortedBlock:
    """Rows rows[0]..rows[1]-1 (in the order of decreasing score variance, or `row_order`)
    and columns (score ranks, 0-based) cols[0]..cols[1]-1 of the sorted matrix of one
    head, subsampled with a uniform stride to at most max_rows x max_cols. Costs one
    [n, d'] @ [d', V] product and a top-k (or sort) of n <= max_rows rows."""
    sigma = sigma or SigmaChoice()
    check_direction(direction)
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
