"""`detokgui export figures`: every figure of the paper and of the layer-0 studies that
detokgui can compute, as PNG/SVG/PDF with CSV data and an index.md, in one folder."""

from __future__ import annotations

import sys
import time

from detokgui.cli.common import export_command
from detokgui.figures.defaults import DEFAULT_MAX_TEXTS
from detokgui.help_texts import CORPUS_PATHS


def _figures_args(p):
    p.add_argument("--out", required=True,
                   help="folder for the figures (created if missing; an existing folder gets "
                        "the new files only once all are done)")
    p.add_argument("--corpus", nargs="+", default=[], metavar="PATH",
                   help=CORPUS_PATHS + " for the corpus figures (without: those are listed "
                        "as skipped in index.md)")
    p.add_argument("--format", default="png,svg,pdf",
                   help="comma-separated formats: png, svg, pdf (default: all three)")
    p.add_argument("--heads", nargs="+", type=int, metavar="H",
                   help="heads for the figures that show the paper's chosen heads (default: "
                        "the paper's, e.g. 1 and 7)")
    p.add_argument("--max-texts", type=int, default=None, metavar="N",
                   help="corpus windows read by the text figures (observed attention, KL "
                        f"contributions; default {DEFAULT_MAX_TEXTS}); counts use the whole "
                        "corpus")
    p.add_argument("--dpi", type=int, default=None, metavar="N",
                   help="PNG resolution in dots per inch (default 300; the figures are drawn "
                        "at their printed size)")
    p.add_argument("--no-data", action="store_true",
                   help="write no CSV data files (e.g. for a gallery of images)")
    p.add_argument("--only", nargs="+", metavar="KEY",
                   help="export only these figures (file stems as listed in index.md)")
    p.add_argument("--compare", metavar="MODEL",
                   help="a second model B (hub name, folder, 'demo'): adds the comparison "
                        "figure (head similarity with the matching, matched heads' metrics)")
    p.add_argument("--series", nargs="+", default=[], metavar="CKPT",
                   help="checkpoints of a training series (folders, NAME@REV, or a folder of "
                        "step-* checkpoints) for the series figure (as export series); "
                        "without --model the other figures are of its last checkpoint")
    p.add_argument("--steps", nargs="+", type=int, metavar="S",
                   help="the training step of each --series checkpoint (default: from the "
                        "names, e.g. step-000128, else 0..n-1)")


class _StderrProgress:
    """One line per figure on stderr, and at most one a second within a long figure."""

    def __init__(self):
        self.figure = None
        self.last = 0.0

    def __call__(self, p) -> None:
        head = p.message.split("]", 1)[0] if p.message.startswith("[") else None
        now = time.monotonic()
        if head is not None and head != self.figure:
            self.figure = head
        elif now - self.last < 1.0:
            return
        self.last = now
        print(f"{p.fraction:4.0%} {p.message}", file=sys.stderr, flush=True)


def _series_end(args) -> str | None:
    """Without --model, the figures of a --series are of its last checkpoint (the trained
    model), not of gpt2."""
    if not args.series:
        return None
    from detokgui.core.compare.series import expand_checkpoints, series_steps

    names, folder_steps = expand_checkpoints(args.series)
    steps = series_steps(names, args.steps if args.steps is not None else folder_steps)
    last = names[max(range(len(names)), key=steps.__getitem__)]
    print(f"note: no --model: the figures other than the series are of its last checkpoint, "
          f"{last}", file=sys.stderr)
    return last


def _check_figures(args, shape):
    from detokgui.cli.common import CliError

    if args.steps and not args.series:
        raise CliError("--steps needs --series")
    if args.series:
        from detokgui.core.compare.series import expand_checkpoints, series_steps

        names, folder_steps = expand_checkpoints(args.series)
        series_steps(names, args.steps if args.steps is not None else folder_steps)


@export_command(
    "figures", "the paper's figures and the layer-0 studies' figures (PNG/SVG/PDF + CSV + "
    "index.md) into a folder", _figures_args, outputs=(), check=_check_figures,
    default_model=_series_end,
)
def export_figures_command(args, layer):
    from detokgui.figures.export import export_figures

    max_texts = DEFAULT_MAX_TEXTS if args.max_texts is None else args.max_texts
    other = None
    if args.compare is not None:
        from detokgui.cli.compare import load_b

        other = load_b(args)
    report = export_figures(layer, args.out, args.format, args.corpus, args.heads, args.only,
                            on_progress=_StderrProgress(), max_texts=max_texts,
                            dpi=args.dpi, data=not args.no_data, compare=other,
                            series=args.series, series_steps=args.steps)
    print(f"{len(report.built)} figures, {len(report.skipped)} skipped "
          f"(see {report.out / 'index.md'})")
