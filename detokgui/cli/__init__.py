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
import sys

from detokgui.cli.common import EXPORTS, CliError, load_layer, prepare
from detokgui.core.default_model import DEFAULT_MODEL, cli_default_problem

COMMAND_MODULES = ("tokens", "position", "figures", "corpus", "text", "compare", "series")


def _register_commands() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(f"detokgui.cli.{name}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="detokgui export",
        description="Export detokgui data without opening a window.",
    )
    _register_commands()
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    for name, command in EXPORTS.items():
        p = sub.add_parser(name, help=command.help, description=command.help)
        if command.one_model:
            p.add_argument("--model", default=None,
                           help="hub name (NAME or NAME@REVISION) or local folder of a GPT-2, "
                           "GPT-Neo or OPT model, 'demo' (the trained demo model shipped with "
                           "detokgui) or 'random-demo' (default gpt2)")
            p.add_argument("--device", choices=("cpu", "cuda"), default=None,
                           help="default: CUDA when available, else CPU")
        command.arguments(p)
    return parser


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
    from detokgui.core.errors import DetokError

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
