"""`detokgui download NAME[@REV] --out FOLDER`: on a machine with network, write a hub
model's layer-0 checkpoint folder (config.json, the tokenizer files, a safetensors file
with only the layer-0 tensors, and `detokgui-source.json` saying which repository,
revision and commit it is) into FOLDER, to carry to a machine without network and open
there with `detokgui --model FOLDER` (`core.model.sources.hub.save_layer0`;
docs/offline.md). Progress on stderr as `export` shows it; every failure is one line on
stderr and a non-zero exit."""

from __future__ import annotations

import argparse
import os
import sys

PROG = "detokgui download"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Write a hub model's layer 0 (config.json, the tokenizer files and the "
        "layer-0 tensors only: gpt2's 0.2 of its 0.5 GB) into FOLDER, to carry to a machine "
        "without network and open there with `detokgui --model FOLDER`, `detokgui export ... "
        "--model FOLDER` or `dg.load(FOLDER)`. FOLDER/detokgui-source.json records the "
        "repository, the revision asked for and the commit it resolved to.",
    )
    p.add_argument("name", metavar="NAME[@REV]",
                   help="hub model name (gpt2, EleutherAI/gpt-neo-125m), optionally with a "
                   "branch, tag or commit after @ (myorg/run@step1000)")
    p.add_argument("--out", required=True, metavar="FOLDER",
                   help="the folder to write: new (in an existing folder) or empty")
    p.add_argument("--force", action="store_true",
                   help="replace FOLDER when it holds an earlier `detokgui download` (any "
                   "other non-empty folder is always refused)")
    return p


def main(argv: list[str] | None = None) -> int:
    """`detokgui download ...`; argv excludes the word `download`."""
    args = build_parser().parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from detokgui.cli.common import DownloadLine
    from detokgui.core.base.errors import DetokError
    from detokgui.core.model.sources import hub

    progress = DownloadLine()
    try:
        try:
            saved = hub.save_layer0(args.name, args.out, progress, replace=args.force)
        finally:
            progress.end()
    except DetokError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        where = exc.filename or args.out
        print(f"{PROG}: error: {exc.strerror or exc}: {where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; nothing was written to {args.out}", file=sys.stderr)
        return 130
    if not progress.shown:
        print(f"{PROG}: note: layer 0 of {args.name} was in detokgui's cache already; nothing "
              "was downloaded", file=sys.stderr)
    print(summary(saved))
    return 0


def summary(saved) -> str:
    """What was written: the folder, its size, the model and commit, and the command that
    opens it."""
    import shlex

    asked = f" ({saved.revision})" if saved.revision and saved.revision != saved.commit else ""
    folder = shlex.quote(str(saved.folder))
    return "\n".join([
        (f"wrote {saved.folder}: layer 0 of {saved.repo}{asked} at commit {saved.commit}, "
         f"{_size(saved.size)} in {len(saved.files)} files ({', '.join(saved.files)})"),
        ("open it (here, or on a machine without network after copying the folder): "
         f"detokgui --model {folder}"),
    ])


def _size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"
