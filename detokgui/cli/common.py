"""What every `detokgui export` command shares: the registry, model loading, the checks
made before the model loads (output path, option values against config.json, texts read
from arguments, files or standard input), and the checks of text and heads after it.
Each failure is a `CliError` (or a core InputError / ModelLoadError) with a one-line
message."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace


@dataclass(frozen=True)
class ExportCommand:
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable  # (args, layer) -> rows written or None
    outputs: tuple[str, ...]  # allowed --out suffixes; () = --out is a folder
    check: Callable | None  # (args, shape) -> None; shape None when config.json is unknown
    one_model: bool = True  # False: the command loads its models itself (no --model)
    default_model: Callable | None = None  # (args) -> the model without --model, or None


EXPORTS: dict[str, ExportCommand] = {}


def export_command(name: str, help: str, arguments: Callable[[argparse.ArgumentParser], None],
                   outputs: tuple[str, ...] = (".csv",), check: Callable | None = None,
                   one_model: bool = True, default_model: Callable | None = None):
    """Register `detokgui export NAME`; the decorated function takes (args, layer).

    `check(args, shape)` runs before the model loads: it validates option values (against
    `shape`, the model's config.json when it can be read cheaply, else None) and reads
    texts, so that bad input fails at once, not after a minute of loading.

    `one_model=False`: the command takes no --model/--device and is called with layer
    None (e.g. `export series`, which loads each checkpoint in a worker process).

    `default_model(args)`: the model to use when --model is not given (None: gpt2, the
    default of every command); it runs before anything else is checked."""

    def register(fn):
        EXPORTS[name] = ExportCommand(help, arguments, fn, outputs, check, one_model,
                                      default_model)
        return fn

    return register


class CliError(Exception):
    """Bad command-line input, reported as one line."""


def load_layer(args):
    """The model of --model on --device; its load notes (padding rows left out, CUDA
    memory short, what the demo model is) as `note:` lines on stderr."""
    from detokgui.core import Layer0

    progress = DownloadLine()
    try:
        layer = Layer0.from_pretrained(args.model, device=args.device, progress=progress)
    finally:
        progress.end()
    for note in layer.notes:
        print(f"note: {note}", file=sys.stderr)
    if layer.revision:
        print(f"note: {layer.name} is commit {layer.revision[:10]}", file=sys.stderr)
    return layer


class DownloadLine:
    """Loading progress on stderr while a hub model downloads ("Downloading gpt2-xl layer
    0: 120 / 450 MB, 25 MB/s"): one line rewritten in place on a terminal, else a line
    every few seconds (a log file stays short)."""

    EVERY = 3.0

    def __init__(self):
        self.tty = sys.stderr.isatty()
        self.shown = False
        self.last = float("-inf")

    def __call__(self, fraction: float, message: str) -> None:
        import time

        if not message.startswith("Downloading"):
            return
        now = time.monotonic()
        if self.tty:
            print(f"\r{message[:78]:78s}", end="", file=sys.stderr, flush=True)
        elif now - self.last >= self.EVERY:
            print(message, file=sys.stderr, flush=True)
            self.last = now
        self.shown = True

    def end(self) -> None:
        if self.tty and self.shown:
            print(file=sys.stderr)


def model_shape(args):
    """The model's sizes from its config.json (a local folder, or a hub model already in
    the local cache), without reading any weights; None when there is no config to read.
    An object with n_positions, n_heads and n_vocab, as core.base.checks expects of a layer."""
    from detokgui.core.model.sources.checkpoint import peek_config

    shape = peek_config(args.model)
    if shape is None:
        return None
    return SimpleNamespace(n_positions=shape.n_positions, n_heads=shape.n_head,
                           n_vocab=token_count(args.model, shape.vocab_size))


def token_count(model: str, rows: int) -> int:
    """How many token ids the model will have once loaded: its tokenizer's size when the
    tokenizer files sit beside config.json (an OPT checkpoint's embedding has padding rows
    beyond them, which loading leaves out: an id among them is refused now, not after the
    weights are read), else the embedding's `rows`. The tokenizer read here is the one
    loading takes again (`core.model.tokens.recent_tokenizer`)."""
    from detokgui.core.base.errors import DetokError
    from detokgui.core.model.sources.checkpoint import config_file
    from detokgui.core.model.sources.demo import DEMO, demo_model_folder
    from detokgui.core.model.tokens import load_tokenizer

    cfg = config_file(str(demo_model_folder()) if model == DEMO else model)
    if cfg is None:
        return rows
    try:
        tok = load_tokenizer(cfg.parent, model, rows)
    except (DetokError, OSError, ValueError):
        return rows  # loading reports what is wrong with the tokenizer
    return min(rows, len(tok)) if tok is not None else rows


def prepare(args, command: ExportCommand) -> None:
    """Everything that can be checked before the model loads."""
    if command.outputs:
        out_path(args, command.outputs)
    else:
        out_folder(args)
    if getattr(args, "corpus", None):
        check_corpus(args)
    if command.check is not None:
        command.check(args, model_shape(args) if command.one_model else None)


def check_corpus(args) -> None:
    """The --corpus paths name corpus files: a missing path, a file of another type, or one
    that is not a regular file (a named pipe, a link to /dev/zero) is refused at once, before
    anything is read. What a folder holds besides corpus files is listed as skipped in one
    line on stderr."""
    from detokgui.core.corpus.documents import scan_corpus, skipped_line

    scan = scan_corpus(args.corpus)
    if scan.skipped:
        print(f"detokgui export {args.what}: note: {skipped_line(scan.skipped)}",
              file=sys.stderr)


def out_path(args, allowed: tuple[str, ...]) -> Path:
    out = Path(args.out)
    if out.suffix.lower() not in allowed:
        raise CliError(f"--out must end in {' or '.join(allowed)}, not {out.name!r}")
    if out.parent and not out.parent.exists():
        raise CliError(f"the folder {out.parent} does not exist")
    if out.is_dir():
        raise CliError(f"--out {out} is a folder; give a file name")
    return out


def out_folder(args) -> Path:
    """--out names a folder: it may exist (as a folder) or be created in an existing one."""
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {out} is not a folder")
    if not out.exists() and out.parent and not out.parent.exists():
        raise CliError(f"the folder {out.parent} does not exist")
    return out


# --------------------------------------------------------------------------- texts


def text_arguments(p: argparse.ArgumentParser, flag: str, help: str, repeat: bool = False,
                   file_help: str | None = None) -> None:
    """--FLAG TEXT (or - for standard input) and --FLAG-file PATH (or -); one is required.
    With `repeat`, --FLAG may be given several times and the file holds one text a line."""
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument(f"--{flag}", action="append" if repeat else "store",
                       help=f"{help}; '-' reads it from standard input")
    group.add_argument(f"--{flag}-file", metavar="PATH",
                       help=file_help or f"read the {flag} text from a UTF-8 file ('-': stdin)")


def _read_source(source: str, what: str) -> str:
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as exc:
        raise CliError(f"{what}: cannot read {source}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = "standard input" if source == "-" else source
        raise CliError(f"{what}: {where} is not UTF-8 text (byte {exc.start + 1})") from None


def read_texts(args, flag: str, lines: bool = False, file_flag: str | None = None,
               blank_ok: bool = False) -> list[str]:
    """The texts given by --FLAG (each may be '-') or by the file option (--FLAG-file
    unless `file_flag` names another); a file given for a repeatable flag (`lines`)
    holds one text per line (blank lines skipped). `blank_ok`: a text of white space
    only (a token such as "\\n") is allowed; an empty one never is."""
    from detokgui.core.base.checks import check_text

    file_flag = file_flag or f"{flag}-file"
    values = getattr(args, flag.replace("-", "_"))
    path = getattr(args, file_flag.replace("-", "_"))
    if path is not None:
        text = _read_source(path, f"--{file_flag}")
        texts = [t for t in text.splitlines() if t.strip()] if lines else [text]
        if not texts:
            raise CliError(f"--{file_flag} {path} holds no text")
    else:
        values = values if isinstance(values, list) else [values]
        texts = [_read_source("-", f"--{flag}") if v == "-" else v for v in values]
    where = f"--{file_flag} {path}" if path is not None else f"--{flag}"
    for t in texts:
        check_text(t, f"text of {where}")
        if not (t if blank_ok else t.strip()):
            raise CliError(f"the text of {where} is empty")
    return texts


def tokens_of(layer, text: str, blank_ok: bool = False) -> list[int]:
    """The token ids of a text, read as the library reads it
    (`detokgui.api.arguments.tokens_of`)."""
    from detokgui.api.arguments import tokens_of as read

    return read(layer, text, blank_ok)


def single_token(layer, text: str, flag: str) -> int:
    """The id of the one token `text` is, by the rule of the library and the window
    (`core.model.tokens.layer_token`): a text of several tokens is refused with its pieces and
    one-token spellings ("--query \"Korea\" is 2 tokens (K|orea), not one; did you mean
    \" Korea\"?"), never cut to one of them."""
    from detokgui.core.model.tokens import layer_token

    return layer_token(layer, text, flag)


# --------------------------------------------------------------------------- numbers


def head_option(p: argparse.ArgumentParser) -> None:
    """--head H: only head H in a command that writes rows per head (default: all);
    checked with `head_arg`."""
    p.add_argument("--head", type=int, default=None, help="only this head (default: all)")


def head_arg(layer, head):
    """[head] after checking it against the model (or its config); None = all heads."""
    if head is None:
        return None
    if head < 0 or (layer is not None and head >= layer.n_heads):
        top = f"0..{layer.n_heads - 1}" if layer is not None else "0 or more"
        raise CliError(f"--head {head} is outside {top}")
    return [head]


def at_least(value: int, flag: str, lo: int = 1) -> int:
    if value < lo:
        raise CliError(f"{flag} must be at least {lo}, not {value}")
    return value


# --------------------------------------------------------------------------- provenance

#: args entries that are bookkeeping of the parser, not options of the export
_NOT_OPTIONS = ("model_given", "what")


def cli_record(args, layer) -> dict:
    """The provenance record of an export command's output: the model (None for commands
    that load their own, e.g. `export series`, whose options name them), the command as
    `analysis`, and every option it was given (texts read from files included, as they
    were read) and the corpus's identity (`core.corpus.provenance`)."""
    from detokgui.core.corpus.provenance import corpus_identity
    from detokgui.core.model.provenance import provenance_record

    options = {k: v for k, v in vars(args).items() if k not in _NOT_OPTIONS}
    corpus = getattr(args, "corpus", None)
    return provenance_record(layer, analysis=f"export {args.what}", options=options,
                             corpus=corpus_identity(corpus) if corpus else None)


def record_provenance(args, layer) -> None:
    """Put the provenance record (`cli_record`) into or beside every file the command
    wrote (--out and a second file such as --metrics-out or composition's --behaviour): a
    PNG's text chunk, an SVG's <metadata>, a CSV's NAME.csv.json
    (`core.base.provenance.add_provenance`). Folders
    (`export figures`, whose files carry their own records) and other files (a counts
    .npz, which records its own inputs) are left as they are."""
    from detokgui.core.base.provenance import add_provenance

    outs = [getattr(args, name, None) for name in ("out", "metrics_out", "behaviour")]
    files = [Path(o) for o in outs
             if o and Path(o).suffix.lower() in (".csv", ".png", ".svg") and Path(o).is_file()]
    if not files:
        return
    record = cli_record(args, layer)
    for path in files:
        add_provenance(path, record)
