"""A training series as a DataFrame (`detokgui export series`): the per-head metrics of
`core.compare.head_metrics` for every checkpoint, one checkpoint per worker process (or Dask
task), cached per checkpoint (`core.compare.series`)."""

from __future__ import annotations

from detokgui.api.jobs import ProgressArg, run_job


def series(checkpoints, steps=None, *, corpus=None, queries: int = 256, seed: int = 0,
           scheduler=None, workers: int | None = None, progress: ProgressArg = True):
    """checkpoint,step,head,metric,value for every head of every checkpoint (folders, hub
    names, NAME@REV, or a series folder of step-* checkpoints); `steps` one per
    checkpoint (default: from names like step-000128, else 0..n-1). `corpus` ("sample" or
    paths) adds mean_bigram_auroc and spearman_te_count (NaN without). `scheduler`: a
    Dask scheduler address or distributed.Client (default: a local process pool of
    `workers` processes). `queries` query tokens per head (seeded by `seed`) for the
    sampled metrics, as in `head_metrics`. attrs: the steps, n_queries, seed."""
    from detokgui.api.accessor import Result
    from detokgui.api.arguments import corpus_paths
    from detokgui.core.compare.series import COLUMNS, iter_series

    paths = corpus_paths(corpus) if corpus is not None else None
    result = run_job(iter_series(checkpoints, steps, corpus=paths, n_queries=queries,
                                 seed=seed, scheduler=scheduler, workers=workers),
                     "training series", progress)
    df = Result.from_records(list(result.rows()), columns=list(COLUMNS))
    df.attrs.update({"analysis": "series", "model": "series",
                     "checkpoints": list(result.checkpoints), "steps": list(result.steps),
                     "n_queries": int(result.n_queries), "seed": int(result.seed),
                     "corpus": list(paths) if paths else None})
    return df
