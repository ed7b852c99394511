"""What every `detokgui export` command shares: the registry, model loading, and the checks
of output paths, text and heads. Each failure is a `CliError` with a one-line message."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

EXPORTS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable]] = {}


def export_command(name: str, help: str, arguments: Callable[[argparse.ArgumentParser], None]):
    """Register `detokgui export NAME`; the decorated function takes (args, layer)."""

    def register(fn):
        EXPORTS[name] = (help, arguments, fn)
        return fn

    return register


class CliError(Exception):
    """Bad command-line input, reported as one line."""


def load_layer(args):
    from detokgui.core import Layer0

    return Layer0.from_pretrained(args.model, device=args.device)


def out_path(args, allowed: tuple[str, ...]) -> Path:
    out = Path(args.out)
    if out.suffix.lower() not in allowed:
        raise CliError(f"--out must end in {' or '.join(allowed)}, not {out.name!r}")
    if out.parent and not out.parent.exists():
        raise CliError(f"the folder {out.parent} does not exist")
    return out


def tokens_of(layer, text: str) -> list[int]:
    from detokgui.core.errors import InputError

    if layer.tokenizer is None:
        raise InputError(f"{layer.name} has no tokenizer files, so text cannot be tokenized.")
    if not text or not text.strip():
        raise InputError("The text is empty.")
    return layer.tokenizer.encode(text)


def head_arg(layer, head):
    if head is None:
        return None
    if not 0 <= head < layer.n_heads:
        raise CliError(f"--head {head} is outside 0..{layer.n_heads - 1}")
    return [head]
