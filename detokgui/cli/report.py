"""`detokgui export report`: one self-contained HTML file about a model (optionally A/B and
a corpus) to open in a browser without a network or a server (`figures.report`)."""

from __future__ import annotations

import sys

from detokgui.cli.common import CliError, export_command
from detokgui.figures.defaults import DEFAULT_K, DEFAULT_MAX_TEXTS, DEFAULT_PAGE_MB
from detokgui.help_texts import CORPUS_PATHS


def _report_args(p):
    p.add_argument("--out", required=True, help="the HTML file (written only when complete)")
    p.add_argument("--model-b", "--compare", dest="compare", metavar="MODEL",
                   help="a second model B (hub name, folder, 'demo'): its card, the head "
                        "matching on A's head cards and the comparison figures")
    corpus = p.add_mutually_exclusive_group()
    corpus.add_argument("--corpus", nargs="+", default=[], metavar="PATH",
                        help=CORPUS_PATHS + " for the corpus figures, the token table's "
                             "rows (the most frequent first) and the bigram partners")
    corpus.add_argument("--counts", nargs="+", metavar="FILE", dest="corpus",
                        help="counts files (.npz, written by export counts --out FILE.npz) "
                             "instead of a corpus")
    p.add_argument("--k", type=int, default=DEFAULT_K,
                   help=f"keys per head and token in the token search (default {DEFAULT_K})")
    p.add_argument("--page-mb", type=float, default=DEFAULT_PAGE_MB, metavar="MB",
                   help=f"size budget of the page (default {DEFAULT_PAGE_MB:g}): the token "
                        "search's table gets what the figures leave, all tokens when they "
                        "fit, else the most frequent that do; the page says which")
    p.add_argument("--table-mb", type=float, default=None, metavar="MB",
                   help="size budget of the token table alone, instead of --page-mb's share")
    p.add_argument("--max-texts", type=int, default=None, metavar="N",
                   help=f"corpus windows read by the text figures (default {DEFAULT_MAX_TEXTS})")
    p.add_argument("--no-figures", action="store_true",
                   help="leave the figures out (a quicker, smaller page)")


def _check_report(args, shape):
    if args.k < 1:
        raise CliError(f"--k must be at least 1, not {args.k}")
    for flag in ("page_mb", "table_mb"):
        value = getattr(args, flag)
        if value is not None and not value > 0:
            raise CliError(f"--{flag.replace('_', '-')} must be more than 0, not {value:g}")
    if args.max_texts is not None and args.max_texts < 1:
        raise CliError(f"--max-texts must be at least 1, not {args.max_texts}")
    from detokgui.figures.report import check_out

    check_out(args.out)


@export_command("report", "one self-contained HTML page: the model card, the figures, a "
                "card per head and a token search (no network needed to open it)",
                _report_args, outputs=(".html", ".htm"), check=_check_report)
def export_report(args, layer):
    from detokgui.cli.figures import _StderrProgress
    from detokgui.figures.report import write_report

    other = None
    if args.compare is not None:
        from detokgui.cli.compare import load_b

        other = load_b(args)
    result = write_report(layer, args.out, on_progress=_StderrProgress(), compare=other,
                          corpus=args.corpus, k=args.k, page_mb=args.page_mb,
                          table_mb=args.table_mb,
                          figures=not args.no_figures,
                          max_texts=args.max_texts or DEFAULT_MAX_TEXTS)
    print(f"{result.bytes / 1e6:.1f} MB; token table: {result.table.order}; "
          f"{len(result.figures)} figures, {len(result.skipped)} not drawn", file=sys.stderr)
