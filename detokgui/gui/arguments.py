"""The window's command line (`detokgui [options]`): its options, defined once here and
used both by `gui.launch` (which starts the window) and by `detokgui --help`, which must
answer without loading Qt or torch. Plain argparse and strings only: importing this
module loads nothing else of detokgui but `help_texts`."""

from __future__ import annotations

import argparse
import textwrap

from detokgui.help_texts import CORPUS_PATHS

#: The --view names: the side panel's, then the tabs' in order (`gui.panels`; a test
#: checks that this list is theirs, as `gui.launch.view_names` reads it from the panels).
VIEW_NAMES = (
    "tokens", "topk", "heatmap", "bias", "pattern", "slopes", "position-stats", "neurons",
    "sentence", "empirical", "kl", "sinks", "contextual", "ov", "layer1", "headstats",
    "auroc", "frequency", "neighbours", "matching", "compare-topk", "compare-pattern",
    "compare-classes", "compare-stats", "series",
)

#: The commands `detokgui` runs instead of opening the window (`app.main` dispatches on
#: the first word), one line each for `detokgui --help`.
COMMANDS = (
    ("export", ("write data (CSV) and figures without opening a window; "
                "`detokgui export --help` lists them")),
    ("download", ("write a hub model's layer 0 into a folder to carry to an offline "
                  "machine and open there with --model FOLDER; `detokgui download --help`")),
    ("provenance", ("print what made an exported PNG, SVG, PDF, CSV or HTML report (model, "
                    "commit, conventions, corpus, session, date); `detokgui provenance --help`")),
)


DESCRIPTION = ("Explore the first attention layer of GPT-2, GPT-Neo and OPT models from the "
               "weights alone: `detokgui [options]` opens the window.")
WIDTH = 79


def _commands_text() -> str:
    """The epilog: each command and its line, wrapped under its name."""
    names = [f"detokgui {name}" for name, _ in COMMANDS]
    col = max(len(n) for n in names) + 4
    lines = ["commands (instead of opening the window):"]
    for name, (_, text) in zip(names, COMMANDS, strict=True):
        lines.append(textwrap.fill(text, WIDTH, initial_indent=f"  {name:<{col - 2}}",
                                   subsequent_indent=" " * col))
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The parser of `detokgui [SESSION_FILE] [options]` (the window); its help lists the
    commands (`COMMANDS`) too."""
    p = argparse.ArgumentParser(
        prog="detokgui",
        description=textwrap.fill(DESCRIPTION, WIDTH),
        epilog=_commands_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the epilog's columns
    )
    p.add_argument("session", nargs="?", metavar="SESSION_FILE",
                   help="a session saved with File > Save session… (models, A/B pair, "
                   "selection, corpus, view, every view's options): restore it, as File > "
                   "Open session… does")
    p.add_argument("--model", default=None,
                   help="hub name (NAME or NAME@REVISION: a branch, tag or commit), local "
                   "checkpoint folder (one written by `detokgui download` too), 'demo' (a "
                   "small trained model shipped with detokgui) or 'random-demo' (random "
                   "weights); default gpt2, or the demo model with a note when gpt2 is not "
                   "downloaded yet")
    p.add_argument("--compare", metavar="MODEL",
                   help="also open MODEL (hub name, NAME@REVISION, folder, 'demo' or "
                   "'random-demo') as model B to compare with, as Model > Compare with… does")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None,
                   help="default: CUDA when available, else CPU")
    p.add_argument("--corpus", nargs="+", metavar="PATH",
                   help="open this corpus at start, as the Corpus menu does: " + CORPUS_PATHS)
    p.add_argument("--text-file", metavar="PATH",
                   help="open this text file in the Tokens view at start, as File > Open text "
                   "file does (any size)")
    p.add_argument("--screenshot", metavar="PATH",
                   help="load the model, draw, save a PNG of the window to PATH and exit")
    p.add_argument("--view", metavar="NAME", choices=VIEW_NAMES,
                   help="the view to show first (with --screenshot: the one drawn): "
                        + ", ".join(VIEW_NAMES))
    p.add_argument("--timeout", type=float, default=300.0,
                   help="with --screenshot: give up after this many seconds (default 300)")
    return p
