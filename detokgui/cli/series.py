"""`detokgui export series`: per-head metrics over a training series, one checkpoint per
worker task (a local process pool, or a Dask cluster with --scheduler): tidy rows
checkpoint,step,head,metric,value. The command loads no model itself (no --model)."""

from __future__ import annotations

import sys

from detokgui.cli.common import CliError, at_least, export_command
from detokgui.help_texts import CORPUS_PATHS


def _series_args(p):
    p.add_argument("--models", required=True, nargs="+", metavar="CKPT",
                   help="checkpoints of the series: folders, hub names or NAME@REV; a series "
                        "folder (step-* sub-folders, as scripts/train_series.py writes) "
                        "stands for its checkpoints")
    p.add_argument("--steps", nargs="+", type=int, metavar="S",
                   help="the training step of each checkpoint (default: read from names "
                        "such as step-000128 or NAME@step128, else 0..n-1)")
    p.add_argument("--corpus", nargs="+", default=None, metavar="PATH",
                   help=CORPUS_PATHS + " for mean_bigram_auroc and spearman_te_count "
                        "(without: those are NaN)")
    p.add_argument("--queries", type=int, default=256, metavar="N",
                   help="sampled query tokens per checkpoint (default 256)")
    p.add_argument("--seed", type=int, default=0, help="seed of the query samples (default 0)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on an existing Dask distributed cluster (tcp://HOST:PORT; "
                        "needs pip install detokgui[cluster]); default: a local process pool")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="local worker processes (default: the cores, at most one per "
                        "checkpoint)")
    p.add_argument("--out", required=True, help="CSV file")


def _check_series(args, shape):
    from detokgui.core.compare.series import expand_checkpoints, series_steps

    at_least(args.queries, "--queries")
    if args.workers is not None:
        at_least(args.workers, "--workers")
        if args.scheduler:
            raise CliError("--workers is for the local pool; a Dask cluster has its own workers")
    if args.scheduler:
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise CliError("--scheduler needs dask.distributed: pip install "
                           "detokgui[cluster]") from None
    names, folder_steps = expand_checkpoints(args.models)
    series_steps(names, args.steps if args.steps is not None else folder_steps)


def _stderr_progress(p) -> None:
    """One line on stderr per finished checkpoint."""
    if "checkpoints:" in p.message:
        print(f"{p.fraction:4.0%} {p.message}", file=sys.stderr, flush=True)


@export_command(
    "series", "per-head metrics over a training series: checkpoint,step,head,metric,value "
    "(metrics: prev_token_mass, recent4_mass, head_class, median_self_rank, "
    "mean_bigram_auroc, spearman_te_count, bqk_norm)", _series_args,
    check=_check_series, one_model=False,
)
def export_series(args, layer):
    from detokgui.core.base.progress import run
    from detokgui.core.base.tables import write_csv
    from detokgui.core.compare.series import iter_series

    result = run(iter_series(args.models, args.steps, corpus=args.corpus,
                             n_queries=args.queries, seed=args.seed,
                             scheduler=args.scheduler, workers=args.workers),
                 _stderr_progress)
    return write_csv(args.out, result.table())
