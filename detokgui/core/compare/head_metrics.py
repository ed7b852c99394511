"""Per-head summary numbers of one layer 0: what a comparison of two models (`core.compare.pair`)
and a training series put side by side. Each is read off an existing analysis, so that it
equals what that analysis's view shows (docs/math/notation.md for the symbols):

    prev_token_mass    a_{n-1}: the weight the B4 positional pattern puts on the previous
                       position, with the pattern a = mean over the sampled query tokens u of
                       softmax_{j<=n}((T_ep + T_pp + T_p) / tau) at n = min(399, L-1), key
                       sigma = vocabulary mean (`positional.iter_classify_heads`'s
                       mean_pattern: the "contextual circuit" figure's numbers)
    recent4_mass       sum_{j > n-4} a_j, the same pattern's weight on the last 4 positions
                       (the query's own included): the classification's recent_weight
    head_class         the B4 class as a code: HEAD_CLASS_CODES (0 duplicate-token,
                       1 detokenization, 2 contextual, 3 other); labels in `HeadMetrics.labels`
    median_self_rank   median over the sampled u of 1 + #{v != u: T_ee(u,v) > T_ee(u,u)}
                       (key sigma = mean over positions; the lower middle value of an even
                       sample): the classification's self_rank_median
    mean_bigram_auroc  mean over a seeded sample of query tokens u with at least one bigram
                       of AUROC(u, h) (A5; `auroc.iter_sampled_auroc`); needs a corpus
    spearman_te_count  Spearman rho(count(v), T_e(v)) over the tokens the corpus contains,
                       T_e(v) = b^QK_h e_v^T / s_v, s_v = mean over positions (A6;
                       `frequency.frequency_stats`); needs a corpus
    bqk_norm           |b^QK_h| = ||bq_h Wk_h^T||_2, the query-bias/key vector that makes the
                       self-assertion terms T_e = b^QK e^T / s and T_p = b^QK p^T / s

The three sampled metrics use `n_queries` query tokens drawn with `seed`
(`sample.random_token_sample` for the pattern and self-ranks, `auroc.bigram_row_sample`
for the AUROC). Corpus-dependent metrics are NaN without counts.
"""

from __future__ import annotations

import numpy as np
import torch

from detokgui.core.base.checks import as_int, check_count
from detokgui.core.base.progress import Job, Progress, rescaled
from detokgui.core.position_side.positional import HEAD_LABELS, iter_classify_heads
from detokgui.core.token_side.auroc import iter_sampled_auroc
from detokgui.core.token_side.frequency import frequency_stats

#: The metrics, in the order tables list them.
HEAD_METRICS = ("prev_token_mass", "recent4_mass", "head_class", "median_self_rank",
                "mean_bigram_auroc", "spearman_te_count", "bqk_norm")
#: Metrics that need corpus counts (NaN without).
CORPUS_METRICS = ("mean_bigram_auroc", "spearman_te_count")
#: head_class codes: the index of the label in `positional.HEAD_LABELS`.
HEAD_CLASS_CODES = {label: code for code, label in enumerate(HEAD_LABELS)}
#: Default number of sampled query tokens.
DEFAULT_QUERIES = 256
_METRICS_KEY = "head_metrics"

METRIC_LABELS = {
    "prev_token_mass": "previous-token mass of the positional pattern",
    "recent4_mass": "mass of the positional pattern on the last 4 positions",
    "head_class": "head class (0 duplicate-token, 1 detokenization, 2 contextual, 3 other)",
    "median_self_rank": "median self-rank of the sampled query tokens",
    "mean_bigram_auroc": "mean bigram AUROC over sampled query tokens",
    "spearman_te_count": "Spearman rho(T_e, corpus count)",
    "bqk_norm": "|b^QK|",
}


def class_label(code: float) -> str:
    """The head class of a head_class code ("" for NaN)."""
    if code is None or not np.isfinite(code):
        return ""
    return HEAD_LABELS[int(code)]


class HeadMetrics(dict):
    """{metric: array [H]} in HEAD_METRICS order (a dict), with the class labels, the
    query position n of the pattern metrics and the sample sizes used."""

    def __init__(self, values: dict[str, np.ndarray], labels: list[str], n: int,
                 n_queries: int, n_auroc_queries: int):
        super().__init__(values)
        self.labels = labels
        self.n = n
        self.n_queries = n_queries
        self.n_auroc_queries = n_auroc_queries

    @property
    def n_heads(self) -> int:
        return len(self.labels)

    def copy(self) -> HeadMetrics:
        """A copy whose arrays and labels can be changed without touching this one."""
        return HeadMetrics({m: v.copy() for m, v in self.items()}, list(self.labels), self.n,
                           self.n_queries, self.n_auroc_queries)


def iter_head_metrics(layer, *, counts=None, n_queries: int = DEFAULT_QUERIES, seed: int = 0
                      ) -> Job[HeadMetrics]:
    """Generator job: every metric of HEAD_METRICS for every head of `layer` (arrays of
    shape (H,), float64). `counts`: the `corpus.CorpusCounts` of a corpus with this
    model's tokenizer, or None (then the corpus metrics are NaN). Cancellable between
    yields; kept on the layer per corpus (its counts' key), n_queries and seed."""

    n_queries = check_count(n_queries, "number of sampled query tokens")
    seed = as_int(seed, "seed")
    key = (_METRICS_KEY, None if counts is None else counts.key, n_queries, seed)
    kept = yield from layer.cached_job(key, lambda: _iter_head_metrics(
        layer, counts=counts, n_queries=n_queries, seed=seed))
    return kept.copy()


def _iter_head_metrics(layer, *, counts, n_queries: int, seed: int) -> Job[HeadMetrics]:

    H = layer.n_heads
    with_corpus = counts is not None
    cls = yield from rescaled(iter_classify_heads(layer, sample=n_queries, seed=seed),
                              0.0, 0.6 if with_corpus else 0.95)
    n = cls.n
    values = {m: np.full(H, np.nan) for m in HEAD_METRICS}
    values["prev_token_mass"] = (cls.mean_pattern[:, n - 1].astype(np.float64) if n >= 1
                                 else np.zeros(H))
    values["recent4_mass"] = np.asarray(cls.recent_weight, dtype=np.float64)
    values["head_class"] = np.array([HEAD_CLASS_CODES[lab] for lab in cls.labels],
                                    dtype=np.float64)
    values["median_self_rank"] = np.asarray(cls.self_rank_median, dtype=np.float64)
    with torch.inference_mode():
        values["bqk_norm"] = torch.linalg.vector_norm(layer.bQK.double(), dim=1).cpu().numpy()
    n_auroc = 0
    if with_corpus:

        yield Progress(0.6, "Spearman rho(T_e, count)")
        values["spearman_te_count"] = np.asarray(frequency_stats(layer, counts).rho_t_e,
                                                 dtype=np.float64)
        res = yield from rescaled(iter_sampled_auroc(layer, counts, n_queries, seed),
                                  0.62, 0.99)
        means, used = res.head_means("skip")
        values["mean_bigram_auroc"] = np.asarray(means, dtype=np.float64)
        n_auroc = int(used.max()) if used.size else 0
    yield Progress(1.0, "head metrics")
    return HeadMetrics({m: values[m] for m in HEAD_METRICS}, list(cls.labels), n,
                       len(cls.tokens), n_auroc)


def head_metrics_table(metrics: HeadMetrics):
    """head,metric,value (tidy rows, HEAD_METRICS order per head) and label for head_class."""
    def rows():
        for h in range(metrics.n_heads):
            for m in HEAD_METRICS:
                v = float(metrics[m][h])
                yield (h, m, v, metrics.labels[h] if m == "head_class" else "")

    return ["head", "metric", "value", "label"], rows()
