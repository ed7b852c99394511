"""Tidy tables (header + rows): what every CSV export writes, and the writer.

Token columns hold the token's real string (' Korea', with its leading space; the csv
module quotes it where needed), never the on-screen form ('␣Korea'). No torch here: every
CSV writer (CLI, API, figures, window) imports this module."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path

from detokgui.core.base.atomic import atomic_open
from detokgui.core.base.provenance import write_sidecar

Table = tuple[list[str], Iterable[Sequence]]

def fmt(x: float) -> str:
    return f"{x:.9g}"

def write_csv(path: str | Path, table: Table, provenance: dict | None = None) -> int:
    """Write a table as CSV with a header; returns the number of data rows. `provenance`:
    a record (`core.model.provenance.provenance_record`) written beside it as NAME.csv.json
    (`core.base.provenance.write_sidecar`) once the CSV is complete.

    The file appears whole or not at all (`core.base.atomic`): a failure while the rows are
    computed or written leaves the previous file at `path` and no partial file."""
    header, rows = table
    n = 0
    with atomic_open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        for row in rows:
            w.writerow([fmt(v) if isinstance(v, float) else v for v in row])
            n += 1
    if provenance is not None:
        write_sidecar(path, provenance)
    return n
