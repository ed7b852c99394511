"""`detokgui export counts|stats|auroc|frequency|neighbours`: corpus counts (C4) and the
whole-vocabulary token statistics (A4-A7). `auroc` and `frequency` print their summary
lines (mean AUROC, Spearman rho per head) before the `wrote` line.

The commands that count a corpus take it as --corpus (files, folders, glob patterns, or
counts files) or --counts (counts files written by `export counts --out FILE.npz`), with
--text-column, --workers and --scheduler saying how it is read and counted
(docs/large-corpora.md). On a terminal the count shows a tqdm bar with its rate and the
time left; Ctrl+C stops it within a second, keeping the pieces already counted."""

from __future__ import annotations

import argparse
import sys

from detokgui.cli.common import (
    CliError,
    export_command,
    head_arg,
    head_option,
    out_path,
    single_token,
)
from detokgui.help_texts import CORPUS_PATHS

SIGMA_HELP = "sigma per token: mean over positions (default) or none (raw, without LayerNorm)"


def _with_progress(call, *args, **kwargs):
    """A call of the library's that takes `progress=`: a tqdm bar on stderr when it is a
    terminal (a corpus count or a pass over V x V scores takes minutes), else none."""
    return call(*args, progress=sys.stderr.isatty(), **kwargs)


def _counts_file(value: str) -> str:
    if not value.lower().endswith(".npz"):
        raise argparse.ArgumentTypeError(f"{value!r} is not a counts file (.npz)")
    return value


def _corpus_arg(p):
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--corpus", nargs="+", metavar="PATH", help=CORPUS_PATHS)
    group.add_argument("--counts", nargs="+", metavar="FILE", dest="corpus", type=_counts_file,
                       help="counts files (.npz, written by export counts --out FILE.npz) "
                            "instead of a corpus")
    counting_args(p)


def counting_args(p):
    """--text-column, --workers, --scheduler: how a corpus is read and counted."""
    p.add_argument("--text-column", metavar="NAME", default=None,
                   help="the column of parquet and arrow files, and the field of jsonl "
                        "lines, that holds the text (default: text)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes that count the corpus (default: one per core; 1: in "
                        "this process); the counts are the same whatever N")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="count the corpus on the Dask cluster whose scheduler is at ADDRESS "
                        "(tcp://host:port) instead of local processes (pip install "
                        "detokgui[cluster])")


def counting(args) -> dict:
    """The counting options of the command line, as the library takes them."""
    if args.workers is not None and args.workers < 1:
        raise CliError(f"--workers must be at least 1, not {args.workers}")
    return {"text_column": args.text_column, "workers": args.workers,
            "scheduler": args.scheduler}


def _head_sigma_out_args(p):
    head_option(p)
    p.add_argument("--sigma", choices=("mean", "none"), default="mean", help=SIGMA_HELP)
    p.add_argument("--out", required=True, help="CSV file")


# --------------------------------------------------------------------------- counts


def _counts_args(p):
    _corpus_arg(p)
    p.add_argument("--bigrams", action="store_true",
                   help="write bigram counts prev_id,next_id,count instead of token counts")
    p.add_argument("--out", required=True,
                   help="CSV file, or a counts file (.npz: unigram and bigram counts with "
                        "the tokenizer's identity, V, the input files' hashes and detokgui's "
                        "version, which --counts and --corpus accept)")


@export_command("counts", "corpus token counts: token_id,token,count "
                "(--bigrams: prev_id,next_id,count; --out FILE.npz: a counts file)",
                _counts_args, outputs=(".csv", ".npz"))
def export_counts(args, layer):
    from detokgui.api.corpus import corpus_counts, write_counts_file
    from detokgui.core.base.tables import write_csv
    from detokgui.core.corpus.tables import bigrams_table, counts_table

    out = out_path(args, (".csv", ".npz"))
    npz = out.suffix.lower() == ".npz"
    if npz and args.bigrams:
        raise CliError("--bigrams writes a CSV; a counts file (.npz) holds the bigrams anyway")
    c = _with_progress(corpus_counts, layer, args.corpus, **counting(args))
    if c.pieces_cached and c.pieces_counted:
        print(f"detokgui export counts: note: {c.pieces_cached} of "
              f"{c.pieces_cached + c.pieces_counted} pieces of the corpus were counted by an "
              "earlier run (kept in the cache)", file=sys.stderr)
    if npz:
        write_counts_file(layer, c, out)
        print(f"{c.n_tokens:,} tokens in {c.n_documents:,} documents of {len(c.files)} "
              f"file{'s' * (len(c.files) != 1)}, {c.n_distinct_bigrams:,} distinct bigrams "
              f"(V = {c.n_vocab})")
        return None
    table = bigrams_table(c) if args.bigrams else counts_table(layer.tokenizer, c)
    return write_csv(out, table)


# --------------------------------------------------------------------------- stats


def _stats_args(p):
    _head_sigma_out_args(p)


@export_command("stats", "per head and query token over all keys: head,query_id,query_token,"
                "self_rank,variance,top1_id,top1_token,top1_score", _stats_args)
def export_stats(args, layer):
    from detokgui.api.corpus import stats
    from detokgui.core.base.tables import write_csv

    out = out_path(args, (".csv",))
    return write_csv(out, _with_progress(stats.table, layer, heads=head_arg(layer, args.head),
                                         sigma=args.sigma).table)


# --------------------------------------------------------------------------- auroc


def _auroc_args(p):
    _corpus_arg(p)
    p.add_argument("--no-bigram", choices=("skip", "zero"), default="skip",
                   help="query tokens without any bigram: skip them (default) or score them "
                        "0 and include them in the mean (the authors' convention)")
    _head_sigma_out_args(p)


@export_command("auroc", "bigram AUROC per head and query token: head,query_id,query_token,"
                "auroc,positives,negatives; mean per head on stdout", _auroc_args)
def export_auroc(args, layer):
    from detokgui.api.corpus import auroc
    from detokgui.core.base.tables import write_csv

    out = out_path(args, (".csv",))
    res = _with_progress(auroc.table, layer, args.corpus, heads=head_arg(layer, args.head),
                         sigma=args.sigma, no_bigram=args.no_bigram, **counting(args))
    n = write_csv(out, res.table)
    c = res.conventions
    for h in c["heads"]:
        print(f"head {h}: mean AUROC {c['mean_auroc'][h]:.6f} over {c['mean_over'][h]} "
              "query tokens")
    print(f"({c['no_bigram_label']}; sigma: {c['sigma_label']})")
    return n


# --------------------------------------------------------------------------- frequency


def _frequency_args(p):
    _corpus_arg(p)
    p.add_argument("--zero-counts", choices=("exclude", "include"), default="exclude",
                   help="tokens absent from the corpus: leave them out of rho (default; they "
                        "have no log count) or include them tied at the lowest rank")
    _head_sigma_out_args(p)


@export_command("frequency", "T_e against corpus count: head,token_id,token,count,t_e; "
                "Spearman rho per head on stdout", _frequency_args)
def export_frequency(args, layer):
    from detokgui.api.corpus import frequency
    from detokgui.core.base.tables import write_csv

    out = out_path(args, (".csv",))
    res = _with_progress(frequency.table, layer, args.corpus,
                         heads=head_arg(layer, args.head), sigma=args.sigma,
                         zero_counts=args.zero_counts, **counting(args))
    n = write_csv(out, res.table)
    c = res.conventions
    for h in c["heads"]:
        print(f"head {h}: Spearman rho(count, T_e) {c['rho'][h]:.6f} over {c['tokens_used']} "
              "tokens")
    print(f"token-embedding variance: Spearman rho(count, Var(e)) {c['rho_variance']:.6f} "
          f"over {c['tokens_used']} tokens")
    print(f"({c['zero_counts_label']})")
    return n


# --------------------------------------------------------------------------- neighbours


def _neighbours_args(p):
    p.add_argument("--token", required=True,
                   help="the query token: a text that is exactly one token (' king' with its "
                        "leading space; '␣king' is read the same)")
    p.add_argument("--minus", default=None, metavar="TEXT",
                   help="analogy: subtract this token, one token as --token "
                        "(token - minus + plus)")
    p.add_argument("--plus", default=None, metavar="TEXT", help="analogy: add this token")
    p.add_argument("--k", type=int, default=10, help="how many neighbours (default 10)")
    p.add_argument("--centred", action="store_true",
                   help="subtract the mean token embedding first")
    p.add_argument("--out", required=True, help="CSV file")


@export_command("neighbours", "nearest tokens by cosine in the token embedding: "
                "rank,token_id,token,cosine", _neighbours_args)
def export_neighbours(args, layer):
    from detokgui.api.tokens import neighbours
    from detokgui.core.base.tables import write_csv

    out = out_path(args, (".csv",))
    if args.k < 1:
        raise CliError("--k must be at least 1")
    u = single_token(layer, args.token, "--token")
    if (args.minus is None) != (args.plus is None):
        raise CliError("an analogy needs both --minus and --plus")
    b = c = None
    if args.minus is not None:
        b = single_token(layer, args.minus, "--minus")
        c = single_token(layer, args.plus, "--plus")
    return write_csv(out, neighbours.table(layer, u, args.k, minus=b, plus=c,
                                           centred=args.centred).table)
