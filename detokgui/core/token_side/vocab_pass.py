"""The whole-vocabulary pass (docs/math/token-side.md#a4-head-statistics; bigram AUROC,
docs/math/token-side.md#a5-bigram-auroc, rides on it): for heads h and every row token,
all V scores

    T_ee(u, v) = (e_u Wq_h / s_u) . (e_v Wk_h / s_v)        (sigma convention as in A2)

reduced chunk by chunk to the statistics `HeadStats` (see `vocab_stats`).
Direction "keys": the rows are the queries u, the columns all keys v; direction
"queries" swaps the roles (rows are keys v, columns all queries u).

The V x V matrix is never held: with R = rows' factor (e Wq / s for queries) and
C = the columns' factor [V, d'], each chunk of rows is one [g, c, d'] @ [g, d', V]
product into one reused buffer (g heads at a time), reduced at once (top-k, diagonal,
self-rank, and whatever a `ChunkReducer` takes, e.g. `auroc`'s numerators). The mean and
variance need no pass: with C's column mean m_h and covariance
Cov_h = (C - m_h)^T (C - m_h) / V (d' x d', in float64), mean = R m_h^T and
variance = R Cov_h R^T exactly.

Nothing here is cached on disk: `vocab_stats` caches the statistics, `auroc` the AUROC.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch

from detokgui.core.base.checks import check_choice, check_heads
from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import Job, Progress
from detokgui.core.model.conventions import SigmaChoice, token_sigmas

DIRECTIONS = ("keys", "queries")
DEFAULT_K = 10
BUDGET_BYTES = 64 << 20  # one score buffer [g, c, V]
_MOMENTS_KEY = "score_moments"


def check_direction(direction: str) -> str:
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


class ChunkReducer(Protocol):
    """More to take from each chunk of scores while the pass holds it (`auroc`'s bigram
    AUROC numerators are one). The pass calls `visit_order` once, `reduce` per chunk, then
    `result`, whose value it returns as `VocabPass.extra`."""

    def visit_order(self, rows: np.ndarray) -> np.ndarray:
        """The row tokens `rows` (sorted ids) in the order the pass is to visit them."""

    def reduce(self, S: torch.Tensor, scratch: torch.Tensor, heads: slice,
               rows: np.ndarray) -> None:
        """S [g, n, V]: the scores of the heads `heads` (a slice of the pass's heads) for
        the row tokens `rows`; scratch: a buffer of at least S.numel() elements. S must not
        be changed."""

    def result(self, visited: np.ndarray) -> Any:
        """What the pass returns as `extra`; `visited` the row tokens it visited."""


@dataclass
class VocabPass:
    """What one pass returns: the statistics, and the result of its `ChunkReducer` (if
    any; `auroc.BigramAUROC` for `auroc.iter_auroc_pass`)."""

    stats: HeadStats
    extra: Any = None


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
    check_direction(direction)
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
                    k: int = DEFAULT_K, heads=None, rows=None, extra: ChunkReducer | None = None,
                    budget_bytes: int | None = None) -> Job[VocabPass]:
    """Generator job: one streamed pass over all V x V scores of the heads `heads`,
    yielding Progress per chunk of rows; returns VocabPass (not cached: see
    `vocab_stats.iter_head_stats`, `auroc.iter_bigram_auroc`). `extra` reduces each chunk
    further in the same loop (`auroc.iter_auroc_pass` passes the AUROC's). `rows` limits
    the pass to some row tokens (default all); the others' entries are left at
    top_ids -1, self_rank 0 (and AUROC NaN)."""
    sigma = sigma or SigmaChoice()
    check_direction(direction)
    hs = check_heads(layer, heads)
    V = layer.n_vocab
    k = max(1, min(int(k), V))
    mean, var = key_score_moments(layer, sigma, direction, hs)
    order = np.arange(V) if rows is None else np.unique(np.asarray(rows, dtype=np.int64))
    if order.size == 0 or order[0] < 0 or order[-1] >= V:
        raise InputError(f"The row tokens must be ids in 0..{V - 1}.")
    if extra is not None:
        order = extra.visit_order(order)
    g, c = _plan(layer, len(hs), budget_bytes or default_budget(layer))
    dev = layer.device
    top_ids = torch.full((len(hs), V, k), -1, dtype=torch.int32)
    top_scores = torch.full((len(hs), V, k), torch.nan, dtype=torch.float32)
    self_rank = torch.zeros((len(hs), V), dtype=torch.int64)
    total = len(hs) * order.shape[0]
    done = 0
    with torch.inference_mode():
        buf = torch.empty(g * c * V, dtype=layer.dtype, device=dev)
        tmp = torch.empty_like(buf) if extra is not None else None
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
                if extra is not None:
                    extra.reduce(S, tmp, gi, rows_np)
                diag = S.gather(2, rows.view(1, n, 1).expand(len(group), n, 1))
                greater = S.sub_(diag).gt_(0).sum(dim=-1)
                self_rank[gi, rows_cpu] = greater.to(torch.int64).cpu() + 1
                done += len(group) * n
                yield Progress(done / total, f"whole-vocabulary pass: {_heads_text(group)}, "
                               f"{a + n}/{order.shape[0]} tokens")
    stats = HeadStats(direction, hs, sigma, k, top_ids.numpy(), top_scores.numpy(),
                      self_rank.numpy(), mean, var)
    return VocabPass(stats, extra.result(order) if extra is not None else None)


def _heads_text(group: list[int]) -> str:
    """"head 3", "heads 0-7" for consecutive heads, "heads 2, 7" otherwise."""
    if len(group) == 1:
        return f"head {group[0]}"
    if list(group) == list(range(group[0], group[-1] + 1)):
        return f"heads {group[0]}-{group[-1]}"
    return "heads " + ", ".join(str(h) for h in group)
