"""Headless commands: `detokgui export <what> ...` writes data (CSV) and figures without
opening a window. Every failure is one line on stderr and a non-zero exit; what the core
logs for a person (a damaged cache entry discarded, a run without the cache) is one line
on stderr too.

Each command lives in the module of its area and registers itself with `export_command`;
`COMMAND_MODULES` lists those modules.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import re
import shutil
import sys

from detokgui.cli.common import EXPORTS, CliError, load_layer, prepare, record_provenance
from detokgui.core.model.sources.default_model import DEFAULT_MODEL, cli_default_problem

COMMAND_MODULES = ("tokens", "position", "figures", "corpus", "text", "compare", "series",
                   "report", "composition")


def _register_commands() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(f"detokgui.cli.{name}")


def build_parser() -> argparse.ArgumentParser:
    """The `detokgui export` parser. The commands and the columns each writes are listed
    in the descriptions, wrapped by `wrap_help` (at spaces, and inside a column list after
    its commas), not by argparse, which breaks a long column list inside a name."""
    _register_commands()
    width = help_width()
    parser = argparse.ArgumentParser(
        prog="detokgui export",
        description="\n".join(wrap_help("Export detokgui data without opening a window.",
                                         width)) + "\n\n" + command_list(width),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True,
                                parser_class=_CommandParser,
                                help="one of the commands above; detokgui export WHAT --help "
                                     "for its options")
    for name, command in EXPORTS.items():
        p = sub.add_parser(name, description="\n".join(wrap_help(command.help, width)),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        if command.one_model:
            p.add_argument("--model", default=None,
                           help="hub name (NAME or NAME@REVISION) or local folder of a GPT-2, "
                           "GPT-Neo or OPT model, 'demo' (the trained demo model shipped with "
                           "detokgui) or 'random-demo' (default gpt2)")
            p.add_argument("--device", choices=("cpu", "cuda"), default=None,
                           help="default: CUDA when available, else CPU")
        command.arguments(p)
    return parser


class _CommandParser(argparse.ArgumentParser):
    """The parser of one export command: a column list in an option's help
    (head_a,head_b,metric,...) is given a space after each comma (`spaced_lists`), so that
    argparse, which wraps option help itself, breaks it between names, never inside one."""

    def add_argument(self, *args, **kwargs):
        return super().add_argument(*args, **_spaced_help(kwargs))

    def add_argument_group(self, *args, **kwargs):
        return _SpacedGroup(super().add_argument_group(*args, **kwargs))

    def add_mutually_exclusive_group(self, **kwargs):
        return _SpacedGroup(super().add_mutually_exclusive_group(**kwargs))


class _SpacedGroup:
    """An argument group whose options' help is spaced as `_CommandParser`'s."""

    def __init__(self, group):
        self.group = group

    def add_argument(self, *args, **kwargs):
        return self.group.add_argument(*args, **_spaced_help(kwargs))

    def __getattr__(self, name):
        return getattr(self.group, name)


def _spaced_help(kwargs: dict) -> dict:
    if isinstance(kwargs.get("help"), str):
        kwargs = {**kwargs, "help": spaced_lists(kwargs["help"])}
    return kwargs


def spaced_lists(text: str) -> str:
    """"a,b,c" -> "a, b, c" in every word that is a list of names (two commas or more and
    a letter); other commas (1,000) are left as they are."""
    return " ".join(re.sub(r",(?=[^,])", ", ", word)
                    if word.count(",") >= 2 and re.search(r"[A-Za-z_]", word) else word
                    for word in text.split(" "))


def help_width() -> int:
    """The width help is laid out in: the terminal's, less 2, as argparse's own."""
    return max(20, shutil.get_terminal_size().columns - 2)


def wrap_help(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` characters, broken at spaces; a word longer than
    a line (a column list such as head,j,t_p,t_pp,...) is broken after its commas, never
    inside a column name. A piece that alone is longer than a line stays whole."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        pieces = [word] if len(word) <= width else re.findall(r"[^,]+,?|,", word)
        for k, piece in enumerate(pieces):
            sep = " " if k == 0 and line else ""
            if line and len(line) + len(sep) + len(piece) > width:
                lines.append(line)
                line = piece
            else:
                line += sep + piece
    if line:
        lines.append(line)
    return lines


def command_list(width: int) -> str:
    """"commands:" and one entry per export command: its name and its help (what it
    writes, with the CSV columns), wrapped in a column beside the names."""
    names = max(len(name) for name in EXPORTS) + 4
    out = wrap_help("commands (WHAT) and the columns of the CSV each writes:", width)
    for name, command in EXPORTS.items():
        lines = wrap_help(command.help, max(20, width - names))
        out.append(f"  {name:<{names - 2}}{lines[0]}")
        out += [" " * names + line for line in lines[1:]]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """`detokgui export ...`; argv excludes the word `export`."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    _quiet_libraries()
    args = build_parser().parse_args(argv)
    command = EXPORTS[args.what]
    args.model_given = getattr(args, "model", None) is not None
    if command.one_model and not args.model_given:
        args.model = DEFAULT_MODEL
    with _log_lines(f"detokgui export {args.what}"):
        return _run(args, command)


def _run(args, command) -> int:
    from detokgui.core.base.errors import DetokError

    try:
        if command.default_model is not None and not args.model_given:
            chosen = command.default_model(args)
            if chosen is not None:
                args.model, args.model_given = chosen, True
        prepare(args, command)  # bad options, paths and texts fail before the model loads
        layer = None
        if command.one_model:
            if args.device == "cuda":
                import torch

                if not torch.cuda.is_available():
                    raise CliError("--device cuda was asked for but no CUDA device is "
                                   "available")
            if not args.model_given:
                problem = cli_default_problem(args.model)
                if problem is not None:
                    raise CliError(problem)
            layer = load_layer(args)
        n = command.run(args, layer)
        record_provenance(args, layer)
    except (DetokError, CliError) as exc:
        print(f"detokgui export {args.what}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        where = exc.filename or getattr(args, "out", None) or ""
        print(f"detokgui export {args.what}: error: {exc.strerror or exc}: {where}".rstrip(": "),
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"detokgui export {args.what}: interrupted", file=sys.stderr)
        return 130
    if isinstance(n, int):
        print(f"wrote {args.out} ({n} rows)")
    else:
        print(f"wrote {args.out}")
    return 0


class _StderrLines(logging.Handler):
    def __init__(self, prefix: str):
        super().__init__()
        self.prefix = prefix

    def emit(self, record: logging.LogRecord) -> None:
        print(f"{self.prefix}: {record.levelname.lower()}: {record.getMessage()}",
              file=sys.stderr)


@contextlib.contextmanager
def _log_lines(prefix: str):
    """The `detokgui` logger's records as `PREFIX: warning: message` lines on stderr."""
    logger = logging.getLogger("detokgui")
    handler = _StderrLines(prefix)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def _quiet_libraries() -> None:
    import warnings

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    # e.g. "Could not save font_manager cache" on a full disk: the export's error says it
    logging.getLogger("matplotlib").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=UserWarning)
