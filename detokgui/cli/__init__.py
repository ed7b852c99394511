"""Headless commands: `detokgui export <what> ...` writes data (CSV) and figures without
opening a window. Every failure is one line on stderr and a non-zero exit.

Each command lives in the module of its area and registers itself with `export_command`;
`COMMAND_MODULES` lists those modules.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from detokgui.cli.common import EXPORTS, CliError, load_layer, prepare

COMMAND_MODULES = ("tokens", "position", "figures", "corpus", "text")


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
        p.add_argument("--model", default="gpt2",
                       help="hub name, local folder, 'demo' (the trained demo model shipped "
                       "with detokgui) or 'random-demo' (default gpt2)")
        p.add_argument("--device", choices=("cpu", "cuda"), default=None,
                       help="default: CUDA when available, else CPU")
        command.arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    """`detokgui export ...`; argv excludes the word `export`."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    _quiet_libraries()
    args = build_parser().parse_args(argv)
    from detokgui.core.errors import DetokError

    command = EXPORTS[args.what]
    try:
        prepare(args, command)  # bad options, paths and texts fail before the model loads
        if args.device == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise CliError("--device cuda was asked for but no CUDA device is available")
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


def _quiet_libraries() -> None:
    import logging
    import warnings

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    # e.g. "Could not save font_manager cache" on a full disk: the export's error says it
    logging.getLogger("matplotlib").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=UserWarning)
