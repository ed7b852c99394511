"""Bigram AUROC per query token and head (docs/math/token-side.md#a5-bigram-auroc, paper Fig 2-C,
2-D).

For query token u and head h, the keys v are scored by T_ee(u, v). Positives are the
tokens v that precede u in the corpus, c(v, u) > 0, each weighted by c(v, u); negatives
are all other V - m_u tokens, weight 1 each. The AUROC is the weighted Mann-Whitney
statistic (ties count one half):

    AUROC(u, h) = sum_{p in P} c(p, u) * sum_{n in N} ([s_p > s_n] + 1/2 [s_p = s_n])
                  / (W_u * |N|),        W_u = sum_p c(p, u),  |N| = V - m_u.

It is computed from ranks, never by expanding weights into repeated samples: for a
positive p, the negatives below it (ties half) are

    L_all(p) - L_pos(p),   L_X(p) = #{x in X: s_x < s_p} + 1/2 #{x in X: s_x = s_p}

(p's tie with itself is in both and cancels). L_pos ranks each positive among the m_u
positives of its row (a sort of m_u values). L_all ranks it among all V scores of the row:

- few positives (m_u <= `small_max`): L_all(p) = (V - sum_v sign(s_v - s_p)) / 2, one
  subtract-sign-sum sweep of the row per positive, all rows of a chunk and all heads at
  once, level by level (the j-th positive of every row that has one);
- many positives: the row is sorted once and each positive found by binary search.

Query rows are visited by decreasing m_u so each level of a chunk is a prefix of its rows.
All of this runs inside the chunk loop of `vocab_pass.iter_vocab_pass` (A4's pass), as its
`ChunkReducer` `AUROCNumerators`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np
import torch

from detokgui.core.base.checks import as_int, check_choice, check_count, check_heads, check_token
from detokgui.core.base.diskcache import Entry
from detokgui.core.base.errors import InputError
from detokgui.core.base.numbers import num
from detokgui.core.base.progress import Job, Progress, rescaled, run
from detokgui.core.base.tables import Table
from detokgui.core.corpus.counts import iter_layer_counts
from detokgui.core.model.conventions import SigmaChoice
from detokgui.core.model.identity import model_identity
from detokgui.core.token_side.vocab_pass import (
    DEFAULT_K,
    VocabPass,
    column_factor,
    iter_vocab_pass,
    row_factor,
)
from detokgui.core.token_side.vocab_stats import save_stats

NO_BIGRAM = ("skip", "zero")
NO_BIGRAM_LABELS = {
    "skip": "mean over query tokens with at least one bigram",
    "zero": "authors' convention: query tokens without bigrams count as AUROC 0",
}
#: Rows with more positives than this are sorted instead of swept once per positive: a
#: sweep costs a few tens of times less per score than a sort on a CPU (less so on a GPU).
SMALL_MAX = {"cpu": 40, "cuda": 8}
FORMAT = "detokgui-bigram-auroc-v1"


def check_no_bigram(convention: str) -> str:
    return check_choice("no-bigram convention", convention, NO_BIGRAM)


@dataclass
class PositiveSets:
    """For each query u, its positives: the keys v with c(v, u) > 0 (CSR by u)."""

    indptr: np.ndarray  # [V + 1] int64
    keys: torch.Tensor  # [nnz] int64, on the layer's device
    weights: torch.Tensor  # [nnz] float64, on the layer's device
    m: np.ndarray  # [V] number of positives m_u
    W: np.ndarray  # [V] total weight W_u

    @classmethod
    def from_counts(cls, counts, layer) -> PositiveSets:
        if counts.n_vocab != layer.n_vocab:
            raise InputError(f"The corpus counts cover {counts.n_vocab} token ids but the model "
                             f"has {layer.n_vocab}; count the corpus with this model's tokenizer.")
        counts.require_bigrams("bigram AUROC to compute")
        t = counts.by_next()
        indptr = t.indptr.astype(np.int64)
        m = np.diff(indptr)
        data = t.data.astype(np.float64)
        W = np.zeros(len(m))
        nz = m > 0
        W[nz] = np.add.reduceat(data, indptr[:-1][nz])
        dev = layer.device
        return cls(indptr, torch.from_numpy(t.indices.astype(np.int64)).to(dev),
                   torch.from_numpy(data).to(dev), m, W)


def _half_ranks(sorted_seq: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """#{x < value} + 1/2 #{x = value} over the last dim of `sorted_seq`, per value."""
    left = torch.searchsorted(sorted_seq, values)
    right = torch.searchsorted(sorted_seq, values, right=True)
    return (left + right).to(values.dtype) * 0.5


def _sorted_rows(S: torch.Tensor) -> torch.Tensor:
    if S.device.type == "cpu":  # numpy's sort is about twice as fast as torch's on a CPU
        return torch.from_numpy(np.sort(S.numpy(), axis=-1))
    return torch.sort(S, dim=-1).values


def chunk_numerator(S: torch.Tensor, tmp: torch.Tensor, rows: np.ndarray,
                    pos: PositiveSets, small_max: int | None = None) -> torch.Tensor:
    """sum_p c(p, u) (L_all(p) - L_pos(p)) for the query rows of one chunk, [g, n] float64.

    S [g, n, V]: the chunk's scores T_ee(u, v) for g heads and the n query tokens `rows`
    (ordered by decreasing m_u); tmp: scratch of at least S.numel() elements. S is not
    changed. Rows without positives get 0."""
    g, n, V = S.shape
    dev = S.device
    out = torch.zeros((g, n), dtype=torch.float64, device=dev)
    m = pos.m[rows]
    n_pos = int(np.count_nonzero(m))
    if n_pos == 0:
        return out
    if small_max is None:
        small_max = SMALL_MAX.get(dev.type, 8)
    n_big = int(np.count_nonzero(m > small_max))
    for lo, hi, sort_rows in ((0, n_big, True), (n_big, n_pos, False)):
        if hi <= lo:
            continue
        mm = m[lo:hi]
        width = int(mm.max())
        j = np.arange(width)
        valid_np = j[None, :] < mm[:, None]  # [r, width]
        flat = pos.indptr[rows[lo:hi], None] + np.minimum(j[None, :], mm[:, None] - 1)
        flat = torch.from_numpy(flat).to(dev)
        valid = torch.from_numpy(valid_np).to(dev)
        keys = pos.keys[flat]  # [r, width]
        w = pos.weights[flat] * valid
        Sr = S[:, lo:hi]
        T = Sr.gather(2, keys.expand(g, -1, -1)).masked_fill_(~valid, torch.inf)
        pos_ranks = _half_ranks(torch.sort(T, dim=-1).values, T)  # L_pos (pads are +inf)
        if sort_rows:
            all_ranks = _half_ranks(_sorted_rows(Sr), T)
        else:
            all_ranks = torch.zeros_like(T)
            for level in range(width):
                r = int(np.count_nonzero(mm > level))  # rows with a level-th positive: a prefix
                sweep = tmp[: g * r * V].view(g, r, V)
                torch.sub(Sr[:, :r], T[:, :r, level : level + 1], out=sweep)
                all_ranks[:, :r, level] = (V - sweep.sign_().sum(dim=-1)) * 0.5
        out[:, lo:hi] = ((all_ranks - pos_ranks).double() * w).sum(dim=-1)
    return out


@dataclass
class BigramAUROC:
    """AUROC of every query token u for the heads `heads`, [h, V]; NaN where u has no
    bigram (m_u = 0) or no negative (m_u = V)."""

    heads: list[int]
    sigma: SigmaChoice
    auroc: np.ndarray  # [h, V] float64
    positives: np.ndarray  # [V] m_u: distinct keys v with c(v, u) > 0
    weight: np.ndarray  # [V] W_u = sum_v c(v, u)
    corpus_key: str = ""

    @property
    def n_vocab(self) -> int:
        return int(self.positives.shape[0])

    @property
    def negatives(self) -> np.ndarray:
        return self.n_vocab - self.positives

    @classmethod
    def from_numerators(cls, numer: np.ndarray, pos: PositiveSets, heads, sigma,
                        corpus_key: str = "") -> BigramAUROC:
        V = pos.m.shape[0]
        den = pos.W * (V - pos.m)
        with np.errstate(invalid="ignore", divide="ignore"):
            auroc = np.where(den > 0, numer / np.where(den > 0, den, 1), np.nan)
        return cls(list(heads), sigma, auroc, pos.m.astype(np.int64),
                   pos.W.astype(np.int64), corpus_key)

    def row(self, head: int) -> int:
        try:
            return self.heads.index(int(head))
        except ValueError:
            raise InputError(f"Head {head} was not computed (heads {self.heads}).") from None

    def values(self, no_bigram: str = "skip") -> np.ndarray:
        """[h, V]: "skip" leaves NaN for tokens without bigrams; "zero" (the authors'
        convention) puts 0 there."""
        if check_no_bigram(no_bigram) == "zero":
            return np.where(self.positives[None, :] == 0, 0.0, self.auroc)
        return self.auroc

    def head_means(self, no_bigram: str = "skip") -> tuple[np.ndarray, np.ndarray]:
        """(mean AUROC per head [h], number of query tokens in each mean [h]): over tokens
        with at least one bigram ("skip"), or over all tokens with 0 for those without
        ("zero", the authors' convention)."""
        v = self.values(no_bigram)
        ok = np.isfinite(v)
        n = ok.sum(axis=1)
        with np.errstate(invalid="ignore"):
            means = np.where(ok, v, 0.0).sum(axis=1) / np.where(n > 0, n, 1)
        return np.where(n > 0, means, np.nan), n

    def ranked(self, head: int, no_bigram: str = "skip") -> np.ndarray:
        """The query tokens that have an AUROC in one head, highest first (ties keep id
        order)."""
        values = self.values(no_bigram)[self.row(head)]
        ids = np.flatnonzero(np.isfinite(values))
        return ids[np.argsort(-values[ids], kind="stable")]

    def summary(self, no_bigram: str = "skip") -> str:
        """'<the mean's convention> · <sigma> · n of V tokens follow some token in the
        corpus'."""
        return (f"{NO_BIGRAM_LABELS[no_bigram]} · {self.sigma.label()} · "
                f"{num(int((self.positives > 0).sum()))} of {num(self.n_vocab)} "
                "tokens follow some token in the corpus")


class AUROCNumerators:
    """The pass's `ChunkReducer` for the AUROC: visits the query rows by decreasing m_u and
    keeps `chunk_numerator` of each chunk, [h, V] float64; `result` divides them into a
    BigramAUROC (NaN for the rows not visited)."""

    def __init__(self, pos: PositiveSets, heads, sigma: SigmaChoice, corpus_key: str = ""):
        self.pos, self.heads, self.sigma, self.corpus_key = pos, list(heads), sigma, corpus_key
        self.numer = torch.zeros((len(self.heads), pos.m.shape[0]), dtype=torch.float64)

    def visit_order(self, rows: np.ndarray) -> np.ndarray:
        return rows[np.argsort(-self.pos.m[rows], kind="stable")]

    def reduce(self, S: torch.Tensor, scratch: torch.Tensor, heads: slice,
               rows: np.ndarray) -> None:
        self.numer[heads, torch.from_numpy(rows)] = chunk_numerator(S, scratch, rows,
                                                                    self.pos).cpu()

    def result(self, visited: np.ndarray) -> BigramAUROC:
        numer = self.numer.numpy()
        numer[:, np.setdiff1d(np.arange(numer.shape[1]), visited)] = np.nan
        return BigramAUROC.from_numerators(numer, self.pos, self.heads, self.sigma,
                                           self.corpus_key)


def iter_auroc_pass(layer, counts, sigma: SigmaChoice | None = None, *, heads=None,
                    k: int = DEFAULT_K, rows=None, budget_bytes: int | None = None
                    ) -> Job[VocabPass]:
    """Generator job: one whole-vocabulary pass (direction "keys", `iter_vocab_pass`) that
    also computes the bigram AUROC of the query tokens `rows` (all by default) from the
    CorpusCounts `counts`; returns VocabPass(A4 statistics, BigramAUROC). Not cached."""
    sigma = sigma or SigmaChoice()
    hs = check_heads(layer, heads)
    acc = AUROCNumerators(PositiveSets.from_counts(counts, layer), hs, sigma, counts.key)
    return (yield from iter_vocab_pass(layer, sigma, direction="keys", k=k, heads=hs,
                                       rows=rows, extra=acc, budget_bytes=budget_bytes))


def bigram_row_sample(counts, n: int, seed: int = 0) -> np.ndarray:
    """A seeded sample of at most n query tokens u that have at least one bigram
    (c(v, u) > 0 for some v), sorted ids: the rows a sampled AUROC visits. Same counts,
    n and seed: same sample."""

    n = check_count(n, "number of sampled query tokens")
    counts.require_bigrams("bigram AUROC to compute")
    have = np.flatnonzero(np.diff(counts.by_next().indptr) > 0)
    g = np.random.default_rng(as_int(seed, "seed"))
    return np.sort(g.permutation(have)[: min(n, have.size)]).astype(np.int64)


def iter_sampled_auroc(layer, counts, n: int = 256, seed: int = 0,
                       sigma: SigmaChoice | None = None, *, heads=None,
                       budget_bytes: int | None = None) -> Job[BigramAUROC]:
    """Generator job: the bigram AUROC of the query tokens `bigram_row_sample(counts, n,
    seed)` only (NaN for every other row), from one pass over those rows against all V
    keys: cost ~ n V d' per head instead of V^2 d'. Each sampled row's value equals the
    whole-vocabulary pass's (`iter_bigram_auroc`); `head_means()` is then the mean AUROC
    over the sample. Not cached (seconds)."""
    rows = bigram_row_sample(counts, n, seed)
    res = yield from iter_auroc_pass(layer, counts, sigma, heads=heads, rows=rows,
                                     budget_bytes=budget_bytes)
    return res.extra


# --------------------------------------------------------------------------- jobs + cache


def _entry(layer, sigma: SigmaChoice, corpus_key: str, heads) -> Entry:
    spec = json.dumps([FORMAT, model_identity(layer), sigma.convention, list(sigma.positions),
                       corpus_key, list(heads)])
    V = layer.n_vocab
    return Entry("auroc", hashlib.sha256(spec.encode()).hexdigest(), FORMAT,
                 {"auroc": ((len(heads), V), "f"), "positives": ((V,), "i"),
                  "weight": ((V,), "i")})


def iter_bigram_auroc(layer, counts, sigma: SigmaChoice | None = None, *, heads=None,
                      use_cache: bool = True, budget_bytes: int | None = None
                      ) -> Job[BigramAUROC]:
    """Generator job: the bigram AUROC of every query token for the heads `heads` (all by
    default), from the disk cache (model, sigma, corpus, heads) or from one A4 pass, which
    also caches that pass's head statistics."""
    sigma = sigma or SigmaChoice()
    hs = check_heads(layer, heads)
    entry = _entry(layer, sigma, counts.key, hs)
    if use_cache:
        cached = entry.load(lambda a, _: BigramAUROC(list(hs), sigma, a["auroc"],
                                                     a["positives"], a["weight"], counts.key))
        if cached is not None:
            yield Progress(1.0, "bigram AUROC (cached)")
            return cached
    res = yield from iter_auroc_pass(layer, counts, sigma, heads=hs, budget_bytes=budget_bytes)
    entry.save(entry.arrays_of(res.extra))
    save_stats(layer, res.stats)
    return res.extra


def bigram_auroc(layer, counts, sigma: SigmaChoice | None = None, *, on_progress=None,
                 **kwargs) -> BigramAUROC:
    """`iter_bigram_auroc` run to completion."""
    return run(iter_bigram_auroc(layer, counts, sigma, **kwargs), on_progress)


# --------------------------------------------------------------------------- one token


@dataclass
class ROCCurve:
    """ROC of one query token per head: fpr[i], tpr[i] (float64 arrays from (0, 0) to
    (1, 1), one point per distinct score threshold) and the area under each."""

    query: int
    heads: list[int]
    sigma: SigmaChoice
    fpr: list[np.ndarray]
    tpr: list[np.ndarray]
    auroc: np.ndarray  # [h]
    positives: int
    weight: int


def roc_curve(layer, counts, query: int, sigma: SigmaChoice | None = None,
              heads=None) -> ROCCurve:
    """ROC curve of query token u for each head: keys sorted by decreasing T_ee(u, v);
    tpr = weighted share of positives (weights c(v, u)), fpr = share of negatives at or
    above each threshold; equal scores form one step (a diagonal segment), so the area
    under the curve is the Mann-Whitney AUROC with ties counted one half."""
    sigma = sigma or SigmaChoice()
    u = check_token(layer, query)
    hs = check_heads(layer, heads)
    pos = PositiveSets.from_counts(counts, layer)
    m = int(pos.m[u])
    if m == 0:
        raise InputError(f"Token {u} is never preceded by any token in the corpus: it has "
                         "no bigram, so no ROC curve.")
    V = layer.n_vocab
    lo, hi = int(pos.indptr[u]), int(pos.indptr[u + 1])
    with torch.inference_mode():
        ids = torch.tensor([u], device=layer.device)
        R = row_factor(layer, sigma, "keys", hs, ids)  # [h, 1, d']
        S = torch.bmm(R, column_factor(layer, sigma, "keys", hs))[:, 0].double().cpu()
    w = np.zeros(V)
    w[pos.keys[lo:hi].cpu().numpy()] = pos.weights[lo:hi].cpu().numpy()
    neg = (w == 0).astype(np.float64)
    fprs, tprs, areas = [], [], []
    for r in range(len(hs)):
        s = S[r].numpy()
        order = np.argsort(-s, kind="stable")
        s_sorted = s[order]
        last = np.flatnonzero(np.r_[s_sorted[1:] != s_sorted[:-1], True])
        tp = np.r_[0.0, np.cumsum(w[order])[last]] / pos.W[u]
        fp = np.r_[0.0, np.cumsum(neg[order])[last]] / max(1.0, neg.sum())
        fprs.append(fp)
        tprs.append(tp)
        areas.append(float(np.sum((fp[1:] - fp[:-1]) * (tp[1:] + tp[:-1]) * 0.5)))
    return ROCCurve(u, hs, sigma, fprs, tprs, np.array(areas), m, int(pos.W[u]))


# --------------------------------------------------------------------------- on a corpus


@dataclass(frozen=True)
class NoBigram:
    """The ROC curve's query token never follows another token in the corpus."""

    query: int


def iter_corpus_auroc(layer, corpus, sigma: SigmaChoice | None = None) -> Job[BigramAUROC]:
    """`iter_bigram_auroc` of every head with the bigram counts of the corpus at `corpus`
    (`iter_layer_counts`, the first tenth of the progress)."""
    counts = yield from iter_layer_counts(layer, corpus, 0.0, 0.1)
    return (yield from rescaled(iter_bigram_auroc(layer, counts, sigma), 0.1, 1.0))


def iter_corpus_roc(layer, corpus, query: int, head: int,
                    sigma: SigmaChoice | None = None) -> Job[ROCCurve | NoBigram]:
    """`roc_curve` of query token `query` and one head with the corpus's bigram counts;
    `NoBigram` when the token never follows another token there."""
    counts = yield from iter_layer_counts(layer, corpus)
    b = counts.by_next()
    if b.indptr[query + 1] == b.indptr[query]:
        return NoBigram(query)
    return roc_curve(layer, counts, query, sigma, heads=[head])


def head_means_table(result: BigramAUROC, no_bigram: str = "skip") -> Table:
    """head,mean_auroc,query_tokens,no_bigram: per head the mean AUROC over the query
    tokens that `no_bigram` counts (`BigramAUROC.head_means`) and how many they are."""
    means, used = result.head_means(no_bigram)
    return (["head", "mean_auroc", "query_tokens", "no_bigram"],
            [(h, float(m), int(n), no_bigram)
             for h, m, n in zip(result.heads, means.tolist(), used.tolist())])


def roc_table(curve: ROCCurve) -> Table:
    """head,query_id,fpr,tpr: the points of the ROC curve of the curve's first head."""
    return (["head", "query_id", "fpr", "tpr"],
            [(curve.heads[0], curve.query, float(f), float(t))
             for f, t in zip(curve.fpr[0].tolist(), curve.tpr[0].tolist())])
