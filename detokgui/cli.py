"""Headless commands: `detokgui export <what> ...` writes data (CSV) and figures without
opening a window. Every failure is one line on stderr and a non-zero exit."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable

EXPORTS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable]] = {}


def export_command(name: str, help: str, arguments: Callable[[argparse.ArgumentParser], None]):
    """Register `detokgui export NAME`; the decorated function takes (args, layer)."""

    def register(fn):
        EXPORTS[name] = (help, arguments, fn)
        return fn

    return register


class CliError(Exception):
    """Bad command-line input, reported as one line."""


def _load(args):
    from detokgui.core import Layer0

    return Layer0.from_pretrained(args.model, device=args.device)


def _out_path(args, allowed: tuple[str, ...]) -> Path:
    out = Path(args.out)
    if out.suffix.lower() not in allowed:
        raise CliError(f"--out must end in {' or '.join(allowed)}, not {out.name!r}")
    if out.parent and not out.parent.exists():
        raise CliError(f"the folder {out.parent} does not exist")
    return out


def _tokens_of(layer, text: str) -> list[int]:
    from detokgui.core.errors import InputError

    if layer.tokenizer is None:
        raise InputError(f"{layer.name} has no tokenizer files, so text cannot be tokenized.")
    if not text or not text.strip():
        raise InputError("The text is empty.")
    return layer.tokenizer.encode(text)


# --------------------------------------------------------------------------- commands


def _terms_args(p):
    p.add_argument("--text", required=True, help="text to decompose (at most n_positions tokens)")
    p.add_argument("--out", required=True, help="CSV file")


@export_command("terms", "six terms and attention for a text: head,i,j,term,value", _terms_args)
def export_terms(args, layer):
    from detokgui.core.tables import terms_table, write_csv

    out = _out_path(args, (".csv",))
    return write_csv(out, terms_table(layer, _tokens_of(layer, args.text)))


def _sigma_args(p):
    p.add_argument("--out", required=True, help="CSV file")


@export_command("sigma", "sigma(e_v + p_j) over the vocabulary: position,mean,min,max", _sigma_args)
def export_sigma(args, layer):
    from detokgui.core.tables import sigma_summary_table, write_csv

    out = _out_path(args, (".csv",))
    return write_csv(out, sigma_summary_table(layer))


# --------------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="detokgui export",
        description="Export detokgui data without opening a window.",
    )
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    for name, (help_text, arguments, _) in EXPORTS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--model", default="gpt2", help="hub name or local folder (default gpt2)")
        p.add_argument("--device", choices=("cpu", "cuda"), default=None,
                       help="default: CUDA when available, else CPU")
        arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    """`detokgui export ...`; argv excludes the word `export`."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    _quiet_libraries()
    args = build_parser().parse_args(argv)
    from detokgui.core.errors import DetokError

    _, _, fn = EXPORTS[args.what]
    try:
        if args.device == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise CliError("--device cuda was asked for but no CUDA device is available")
        layer = _load(args)
        n = fn(args, layer)
    except (DetokError, CliError) as exc:
        print(f"detokgui export {args.what}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"detokgui export {args.what}: error: {exc.strerror or exc}: "
              f"{exc.filename or ''}".rstrip(": "), file=sys.stderr)
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
    warnings.filterwarnings("ignore", category=UserWarning)
