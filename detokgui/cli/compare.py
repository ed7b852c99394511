"""`detokgui export compare`: model A (--model) against model B (--compare): the similarity
of every pair of heads with the one-to-one matching, and the matched heads' metrics."""

from __future__ import annotations

import sys
from pathlib import Path

from detokgui.cli.common import CliError, at_least, export_command
from detokgui.help_texts import CORPUS_PATHS


def metrics_path(out: str) -> Path:
    """The default --metrics-out: beside --out, "-metrics" added to its stem
    (m.csv -> m-metrics.csv)."""
    p = Path(out)
    return p.with_name(f"{p.stem}-metrics{p.suffix}")


def load_b(args):
    """Model B of --compare on --device; its load notes as `note (B):` lines on stderr."""
    from detokgui.core import Layer0

    layer = Layer0.from_pretrained(args.compare, device=args.device)
    for note in layer.notes:
        print(f"note (B): {note}", file=sys.stderr)
    return layer


def _compare_args(p):
    p.add_argument("--compare", required=True, metavar="MODEL",
                   help="model B: hub name, local folder, 'demo' or 'random-demo'")
    p.add_argument("--out", required=True,
                   help="CSV: one row per pair of heads, head_a,head_b,similarity,positional,"
                        "affinity,assigned,threshold,p_value,p_adjusted,matched (matched 0 "
                        "for an assigned pair at or below its threshold: no match)")
    p.add_argument("--metrics-out", metavar="CSV",
                   help="CSV of the assigned heads' metrics: head_a,head_b,metric,value_a,"
                        "value_b,difference,matched (default: --out with '-metrics' added "
                        "to its name)")
    p.add_argument("--corpus", nargs="+", default=[], metavar="PATH",
                   help=CORPUS_PATHS + " for the corpus metrics (mean bigram AUROC, Spearman "
                        "rho(T_e, count)); without, they are empty (NaN)")
    p.add_argument("--queries", type=int, default=256, metavar="N",
                   help="query tokens sampled (shared by both vocabularies) for the top-10 key "
                        "agreement and the sampled metrics (default 256)")
    p.add_argument("--seed", type=int, default=0, help="seed of the query sample (default 0)")
    p.add_argument("--k", type=int, default=10,
                   help="top keys compared per query token (default 10)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="family-wise level of 'no match': with two unrelated models, the "
                        "chance that any pair of heads is called a match (default 0.05)")


def _check_compare(args, shape):
    at_least(args.queries, "--queries")
    at_least(args.k, "--k")
    if not 0.0 < args.alpha < 1.0:
        raise CliError(f"--alpha must be between 0 and 1, not {args.alpha:g}")
    if args.metrics_out is None:
        args.metrics_out = str(metrics_path(args.out))
    m = Path(args.metrics_out)
    if m.suffix.lower() != ".csv":
        raise CliError(f"--metrics-out must end in .csv, not {m.name!r}")
    if m.parent and not m.parent.exists():
        raise CliError(f"the folder {m.parent} does not exist")
    if m.resolve() == Path(args.out).resolve():
        raise CliError("--metrics-out must differ from --out")


@export_command(
    "compare", "model A (--model) against model B (--compare): head_a,head_b,similarity,"
    "positional,affinity,assigned,threshold,p_value,p_adjusted,matched per pair of heads, "
    "and the assigned heads' metrics (--metrics-out)", _compare_args, check=_check_compare,
)
def export_compare(args, layer):
    from detokgui.core.base.progress import run
    from detokgui.core.base.tables import write_csv
    from detokgui.core.compare.pair import Pair, iter_compare, matching_table, metric_pairs_table
    from detokgui.core.corpus.counts import corpus_counts

    other = load_b(args)
    counts_a = counts_b = None
    if args.corpus:
        counts_a = corpus_counts(args.corpus, layer.tokenizer, layer.n_vocab)
        counts_b = corpus_counts(args.corpus, other.tokenizer, other.n_vocab)
    pair = Pair(layer, other)
    res = run(iter_compare(pair, counts_a=counts_a, counts_b=counts_b,
                           n_queries=args.queries, seed=args.seed, k=args.k,
                           alpha=args.alpha))
    n = write_csv(args.out, matching_table(res.matching))
    k = write_csv(args.metrics_out, metric_pairs_table(res))
    m = res.matching
    print(f"tokens: {'same vocabulary (by id)' if pair.same_tokenizer else 'by string'}; "
          f"{len(m.queries.a)} shared query tokens, seed {m.seed}; query position n = {m.n}")
    print("assignment: " + ", ".join(f"{a}->{b}" + ("" if ok else " (no match)")
                                     for (a, b), ok in zip(m.assignment, m.matched)))
    print(f"matched: {sum(m.matched)} of {len(m.assignment)} assigned pairs; {m.rule()}")
    print(f"wrote {args.metrics_out} ({k} rows)")
    return n
