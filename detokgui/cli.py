"""Headless commands: `detokgui export <what> ...` writes data (CSV) and figures without
opening a window. Every failure is one line on stderr and a non-zero exit."""

from __future__ import annotations

import argparse
import os
import sys
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


def _head_arg(layer, head):
    if head is None:
        return None
    if not 0 <= head < layer.n_heads:
        raise CliError(f"--head {head} is outside 0..{layer.n_heads - 1}")
    return [head]


def _topk_args(p):
    p.add_argument("--query", required=True, help="text whose LAST token is the query token")
    p.add_argument("--k", type=int, default=10, help="how many keys per head (default 10)")
    p.add_argument("--head", type=int, default=None, help="only this head (default: all)")
    p.add_argument("--sigma", choices=("mean", "none"), default="mean",
                   help="sigma per token: mean over positions (default) or none (raw)")
    p.add_argument("--out", required=True, help="CSV file")


@export_command("topk", "top-k keys by T_ee for a query token: head,rank,key_id,key_token,score",
                _topk_args)
def export_topk(args, layer):
    from detokgui.core.affinity import SigmaChoice, topk_keys
    from detokgui.core.tables import topk_table, write_csv

    out = _out_path(args, (".csv",))
    if args.k < 1:
        raise CliError("--k must be at least 1")
    query = _tokens_of(layer, args.query)[-1]
    result = topk_keys(layer, query, args.k, SigmaChoice(args.sigma), _head_arg(layer, args.head))
    return write_csv(out, topk_table(layer, result))


def _heatmap_args(p):
    p.add_argument("--tokens", required=True, help="text whose tokens are compared pairwise")
    p.add_argument("--head", type=int, default=0, help="head (default 0)")
    p.add_argument("--sigma", choices=("mean", "none"), default="mean",
                   help="sigma per token: mean over positions (default) or none (raw)")
    p.add_argument("--out", required=True, help="file ending in .csv, .png or .svg")


@export_command("heatmap", "T_ee between all pairs of a text's tokens, as CSV, PNG or SVG",
                _heatmap_args)
def export_heatmap(args, layer):
    from detokgui.core.affinity import SigmaChoice, affinity_block
    from detokgui.core.tables import heatmap_table, write_csv

    out = _out_path(args, (".csv", ".png", ".svg"))
    heads = _head_arg(layer, args.head)
    ids = _tokens_of(layer, args.tokens)
    values = affinity_block(layer, ids, ids, SigmaChoice(args.sigma), heads)
    if out.suffix.lower() == ".csv":
        return write_csv(out, heatmap_table(layer, values, heads, ids, ids))
    from detokgui.gui.figures import heatmap_figure

    heatmap_figure(layer, values[0].cpu().numpy(), ids, heads[0], SigmaChoice(args.sigma), out)
    return None


def _bias_args(p):
    p.add_argument("--position", required=True, type=int,
                   help="query position i (0-based, below n_positions)")
    p.add_argument("--sigma", choices=("mean", "max", "min", "none"), default="mean",
                   help="sigma per position: vocabulary mean (default), max, min, or none (raw)")
    p.add_argument("--out", required=True, help="CSV file")


@export_command(
    "bias", "positional bias at query position i: head,j,t_p,t_pp,total,softmax", _bias_args
)
def export_bias(args, layer):
    from detokgui.core.checks import check_position
    from detokgui.core.tables import bias_table, write_csv

    out = _out_path(args, (".csv",))
    return write_csv(out, bias_table(layer, check_position(layer, args.position), args.sigma))


def _neurons_args(p):
    p.add_argument("--scaled", action="store_true",
                   help="divide P[j] by the vocabulary-mean sigma at j (LayerNorm-scaled)")
    p.add_argument("--out", required=True, help="CSV file")


@export_command(
    "neurons", "position-embedding dimensions: dim,norm,slope,r2,period,group", _neurons_args
)
def export_neurons(args, layer):
    from detokgui.core.tables import neurons_table, write_csv

    out = _out_path(args, (".csv",))
    return write_csv(out, neurons_table(layer, scaled=args.scaled))


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
