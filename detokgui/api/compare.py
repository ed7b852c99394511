"""Two models compared, and the per-head metrics a comparison or a training series puts side
by side (`detokgui export compare`; docs/math/compare.md):

    a, b = dg.load("demo"), dg.load("path/to/other")
    dg.compare(a, b)    # head_a,head_b,similarity,positional,affinity,assigned,threshold,
                        # p_value,matched
    dg.compare_metrics(a, b, corpus="sample")  # head_a,head_b,metric,value_a,value_b,
                                               # difference,matched
    dg.head_metrics(a, corpus="sample")  # head,metric,value,label

The matching and each model's metrics are kept on the layers (the matching per model B,
parameters and all), so `compare_metrics` after `compare` does not match again.
"""

from __future__ import annotations

from detokgui.api.frames import analysis, tabled
from detokgui.api.jobs import ProgressArg, run_job


def _layers(*layers) -> None:
    """InputError unless each argument is a loaded layer (`dg.load`)."""
    from detokgui.core import Layer0
    from detokgui.core.base.errors import InputError

    for name, x in zip("ab", layers):
        if not isinstance(x, Layer0):
            raise InputError(f"{name} must be a loaded model (dg.load(...)), not {x!r}.")


def _counts(layer, corpus, progress):
    if corpus is None:
        return None
    from detokgui.api.corpus import corpus_counts

    return corpus_counts(layer, corpus, progress)


def _labels(layer_b, m, pair) -> dict:
    return {"model_b": str(layer_b.name), "n": m.n, "queries": len(m.queries.a),
            "seed": m.seed, "k": m.k, "positional_weight": m.positional_weight,
            "same_tokenizer": bool(pair.same_tokenizer),
            "assignment": [list(p) for p in m.assignment],
            "matched": [list(p) for p in m.matched_pairs], "alpha": m.alpha,
            "no_match": m.rule()}


@analysis("compare")
def compare(a, b, *, queries: int = 256, seed: int = 0, k: int = 10,
            positional_weight: float = 0.5, alpha: float = 0.05, progress: ProgressArg = True):
    """The similarity of every head of model A (`a`, a loaded layer) to every head of
    model B, and the one-to-one matching (`export compare`; docs/math/compare.md):
    head_a,head_b,similarity,positional,affinity,assigned,threshold,p_value,matched.
    positional: overlap of the two heads' B4 positional patterns at the same relative
    positions; affinity: agreement of their top-`k` keys over `queries` query tokens both
    vocabularies share (drawn with `seed`); similarity = positional_weight x positional +
    (1 - positional_weight) x affinity. assigned: 1 for the pairs of the assignment;
    threshold: the similarity this pair of heads reaches when B's head is made unrelated
    (its pattern rotated over the key positions, its top keys paired with other query
    tokens), the (1 - alpha / (H_A H_B)) quantile of that null; p_value: the share of the
    null at or above the similarity; matched: 1 for an assigned pair above its threshold,
    0 for no match. attrs: "assignment" (every assigned pair), "matched" (those matched),
    "alpha", "no_match" (the rule in words, with the thresholds' range)."""
    from detokgui.core.compare.pair import Pair, iter_match_heads, matching_table

    _layers(a, b)
    pair = Pair(a, b)
    m = run_job(iter_match_heads(pair, n_queries=queries, seed=seed, k=k,
                                 positional_weight=positional_weight, alpha=alpha),
                "matching heads", progress)
    return tabled(matching_table(m), **_labels(b, m, pair))


@analysis("compare_metrics")
def compare_metrics(a, b, *, corpus=None, queries: int = 256, seed: int = 0, k: int = 10,
                    positional_weight: float = 0.5, alpha: float = 0.05,
                    progress: ProgressArg = True):
    """Each assigned pair of heads (see `compare`) with every head metric of both
    (`export compare --metrics-out`; `head_metrics`): head_a,head_b,metric,value_a,
    value_b,difference (= value_b - value_a),matched (0: no match, the two heads are no
    more alike than unrelated ones). corpus: "sample" or paths, counted with each model's
    own tokenizer, for the corpus metrics (NaN without)."""
    from detokgui.core.compare.pair import Pair, iter_compare, metric_pairs_table

    _layers(a, b)
    pair = Pair(a, b)
    ca = _counts(a, corpus, progress)
    cb = ca if b is a else _counts(b, corpus, progress)
    res = run_job(iter_compare(pair, counts_a=ca, counts_b=cb, n_queries=queries, seed=seed,
                               k=k, positional_weight=positional_weight, alpha=alpha),
                  "comparing heads", progress)
    return tabled(metric_pairs_table(res), **_labels(b, res.matching, pair),
                  corpus=None if ca is None else list(ca.files))


@analysis("head_metrics")
def head_metrics(layer, *, corpus=None, queries: int = 256, seed: int = 0,
                 progress: ProgressArg = True):
    """Every per-head metric of `core.compare.head_metrics.HEAD_METRICS` (docstring there for the
    formulas): head,metric,value,label (label: the class name on the head_class rows).
    corpus: "sample" or paths for mean_bigram_auroc and spearman_te_count (NaN
    without); `queries` sampled query tokens drawn with `seed`."""
    from detokgui.core.compare.head_metrics import (
        HEAD_CLASS_CODES,
        head_metrics_table,
        iter_head_metrics,
    )

    _layers(layer)
    c = _counts(layer, corpus, progress)
    res = run_job(iter_head_metrics(layer, counts=c, n_queries=queries, seed=seed),
                  "head metrics", progress)
    return tabled(head_metrics_table(res), n=res.n, queries=res.n_queries, seed=seed,
                  auroc_queries=res.n_auroc_queries, head_class_codes=HEAD_CLASS_CODES,
                  corpus=None if c is None else list(c.files))
