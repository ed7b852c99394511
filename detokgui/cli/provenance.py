"""`detokgui provenance FILE...`: print the provenance record an exported file carries (a
PNG's text chunk, an SVG's <metadata>, a PDF's information dictionary, a CSV's
NAME.csv.json sidecar, an HTML report's <head>; `core.base.provenance`). A file without
one gets one line saying so, and the exit status is 1; a file that cannot be read, 2."""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="detokgui provenance",
        description="Print what made a file detokgui exported: detokgui's version, the "
                    "model (name, family, commit, the SHA-256 of its layer-0 tensors), the "
                    "analysis, its conventions and options, the corpus, the session and "
                    "the date. PNG, SVG and PDF carry it inside; a CSV beside it, in "
                    "NAME.csv.json.")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="exported PNG, SVG, PDF, CSV or HTML report")
    p.add_argument("--json", action="store_true",
                   help="print only the record, as JSON (one file)")
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        return _print_records(build_parser().parse_args(argv))
    except BrokenPipeError:  # `detokgui provenance FILE | head`: the reader has had enough
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _print_records(args) -> int:
    from detokgui.core.base.errors import InputError
    from detokgui.core.base.provenance import describe, read_provenance, to_json

    status = 0
    for k, name in enumerate(args.files):
        try:
            record = read_provenance(name)
        except InputError as exc:
            print(f"detokgui provenance: error: {exc}", file=sys.stderr)
            status = 2
            continue
        if record is None:
            print(f"{name}: no detokgui provenance record"
                  + (" (a CSV's record is its NAME.csv.json sidecar: there is none)"
                     if name.lower().endswith(".csv") else ""))
            status = max(status, 1)
            continue
        if args.json:
            print(to_json(record, indent=2))
            continue
        if len(args.files) > 1:
            print(("\n" if k else "") + f"{name}:")
        print(describe(record))
    return status
