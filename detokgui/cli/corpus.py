"""`detokgui export counts|stats|auroc|frequency|neighbours`: corpus counts (C4) and the
whole-vocabulary token statistics (A4-A7). `auroc` and `frequency` print their summary
lines (mean AUROC, Spearman rho per head) before the `wrote` line."""

from __future__ import annotations

import sys

from detokgui.cli.common import CliError, export_command, head_arg, out_path, tokens_of
from detokgui.help_texts import CORPUS_PATHS

SIGMA_HELP = "sigma per token: mean over positions (default) or none (raw, without LayerNorm)"


def _progress():
    """Progress on stderr when it is a terminal (a pass over V x V scores takes minutes)."""
    if not sys.stderr.isatty():
        return None

    def show(p):
        print(f"\r{p.fraction:4.0%} {p.message[:70]:70s}", end="", file=sys.stderr, flush=True)

    return show


def _counts(args, layer):
    from detokgui.api.corpus import corpus_counts

    counts = corpus_counts(layer, args.corpus, progress=_progress() or False)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    return counts


def _corpus_arg(p):
    p.add_argument("--corpus", required=True, nargs="+", metavar="PATH",
                   help=CORPUS_PATHS)


def _head_sigma_out_args(p):
    p.add_argument("--head", type=int, default=None, help="only this head (default: all)")
    p.add_argument("--sigma", choices=("mean", "none"), default="mean", help=SIGMA_HELP)
    p.add_argument("--out", required=True, help="CSV file")


def _single_token(layer, text: str, what: str) -> int:
    ids = tokens_of(layer, text)
    if len(ids) != 1:
        raise CliError(f"{what} {text!r} is {len(ids)} tokens; give a single token")
    return ids[0]


# --------------------------------------------------------------------------- counts


def _counts_args(p):
    _corpus_arg(p)
    p.add_argument("--bigrams", action="store_true",
                   help="write bigram counts prev_id,next_id,count instead of token counts")
    p.add_argument("--out", required=True, help="CSV file")


@export_command("counts", "corpus token counts: token_id,token,count "
                "(--bigrams: prev_id,next_id,count)", _counts_args)
def export_counts(args, layer):
    from detokgui.core.corpus_tables import bigrams_table, counts_table
    from detokgui.core.tables import write_csv

    out = out_path(args, (".csv",))
    counts = _counts(args, layer)
    table = bigrams_table(counts) if args.bigrams else counts_table(layer.tokenizer, counts)
    return write_csv(out, table)


# --------------------------------------------------------------------------- stats


def _stats_args(p):
    _head_sigma_out_args(p)


@export_command("stats", "per head and query token over all keys: head,query_id,query_token,"
                "self_rank,variance,top1_id,top1_token,top1_score", _stats_args)
def export_stats(args, layer):
    from detokgui.core.affinity import SigmaChoice
    from detokgui.core.corpus_tables import stats_table
    from detokgui.core.tables import write_csv
    from detokgui.core.vocab_stats import head_stats

    out = out_path(args, (".csv",))
    st = head_stats(layer, SigmaChoice(args.sigma), heads=head_arg(layer, args.head),
                    on_progress=_progress())
    return write_csv(out, stats_table(layer, st))


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
    from detokgui.core.affinity import SigmaChoice
    from detokgui.core.auroc import NO_BIGRAM_LABELS, bigram_auroc
    from detokgui.core.corpus_tables import auroc_table
    from detokgui.core.tables import write_csv

    out = out_path(args, (".csv",))
    heads = head_arg(layer, args.head)
    counts = _counts(args, layer)
    res = bigram_auroc(layer, counts, SigmaChoice(args.sigma), heads=heads,
                       on_progress=_progress())
    n = write_csv(out, auroc_table(layer, res, args.no_bigram))
    means, used = res.head_means(args.no_bigram)
    for h, m, k in zip(res.heads, means.tolist(), used.tolist()):
        print(f"head {h}: mean AUROC {m:.6f} over {k} query tokens")
    print(f"({NO_BIGRAM_LABELS[args.no_bigram]}; sigma: {SigmaChoice(args.sigma).label()})")
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
    from detokgui.core.affinity import SigmaChoice
    from detokgui.core.corpus_tables import frequency_table
    from detokgui.core.frequency import ZERO_COUNT_LABELS, frequency_stats
    from detokgui.core.tables import write_csv

    out = out_path(args, (".csv",))
    counts = _counts(args, layer)
    fs = frequency_stats(layer, counts, SigmaChoice(args.sigma), head_arg(layer, args.head),
                         args.zero_counts)
    n = write_csv(out, frequency_table(layer, fs))
    for h, r in zip(fs.heads, fs.rho_t_e.tolist()):
        print(f"head {h}: Spearman rho(count, T_e) {r:.6f} over {fs.n_used} tokens")
    print(f"token-embedding variance: Spearman rho(count, Var(e)) {fs.rho_variance:.6f} "
          f"over {fs.n_used} tokens")
    print(f"({ZERO_COUNT_LABELS[args.zero_counts]})")
    return n


# --------------------------------------------------------------------------- neighbours


def _neighbours_args(p):
    p.add_argument("--token", required=True, help="the query token (text of one token)")
    p.add_argument("--minus", default=None, metavar="TEXT",
                   help="analogy: subtract this token (token - minus + plus)")
    p.add_argument("--plus", default=None, metavar="TEXT", help="analogy: add this token")
    p.add_argument("--k", type=int, default=10, help="how many neighbours (default 10)")
    p.add_argument("--centred", action="store_true",
                   help="subtract the mean token embedding first")
    p.add_argument("--out", required=True, help="CSV file")


@export_command("neighbours", "nearest tokens by cosine in the token embedding: "
                "rank,token_id,token,cosine", _neighbours_args)
def export_neighbours(args, layer):
    from detokgui.core.corpus_tables import neighbours_table
    from detokgui.core.neighbours import analogy, nearest_tokens
    from detokgui.core.tables import write_csv

    out = out_path(args, (".csv",))
    if args.k < 1:
        raise CliError("--k must be at least 1")
    u = _single_token(layer, args.token, "--token")
    if (args.minus is None) != (args.plus is None):
        raise CliError("an analogy needs both --minus and --plus")
    if args.minus is None:
        nb = nearest_tokens(layer, u, args.k, args.centred)
    else:
        b = _single_token(layer, args.minus, "--minus")
        c = _single_token(layer, args.plus, "--plus")
        nb = analogy(layer, u, b, c, args.k, args.centred)
    return write_csv(out, neighbours_table(layer, nb))
