"""Files to hand on: `dg.save` writes a result (CSV, or its figure as PNG, SVG or PDF) with
its provenance record inside or beside it, `dg.provenance` reads a record back (what
`detokgui provenance FILE` prints; `core.base.provenance` holds the formats).

    df = dg.topk(layer, " Korea")
    dg.save(df, "topk.csv")          # topk.csv + topk.csv.json (the record)
    dg.save(df, "topk.pdf")          # the figure of df.dg.plot(), the record in the PDF
    dg.provenance("topk.pdf")["model"]["layer0_sha256"]
"""

from __future__ import annotations

import io
from pathlib import Path

from detokgui.core.base.errors import InputError

FIGURE_FORMATS = ("png", "svg", "pdf")


def save(result, path, *, heads=None, dpi: int | None = None,
         provenance: dict | None = None) -> Path:
    """Write `result` to `path` by its suffix and return the path:

    - a DataFrame of a `dg` analysis: .csv writes its rows (the columns of the matching
      `detokgui export` CSV) and NAME.csv.json beside it; .png/.svg/.pdf its figure
      (`dg.plot(result, heads=heads)`) with the record inside. The record is
      `result.attrs["provenance"]` (each analysis sets it);
    - a matplotlib Figure (`dg.figure`, `dg.plot`, your own): .png/.svg/.pdf with
      `provenance` inside when given (a record, e.g. a result's attrs["provenance"]).

    `dpi`: PNG resolution (default 300). The file appears whole or not at all."""
    from detokgui.core.base.atomic import write_bytes

    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    figure = _is_figure(result)
    if provenance is None and not figure:
        provenance = getattr(result, "attrs", {}).get("provenance")
    if fmt == "csv":
        if figure:
            raise InputError("A figure is saved as .png, .svg or .pdf, not .csv.")
        from detokgui.core.base.tables import write_csv

        rows = result.itertuples(index=False, name=None)
        write_csv(path, (list(map(str, result.columns)), rows), provenance=provenance)
        return path
    if fmt not in FIGURE_FORMATS:
        raise InputError(f"dg.save writes .csv, .png, .svg or .pdf, not {path.name!r}.")
    from detokgui.figures import style

    buf = io.BytesIO()
    with style.style():
        fig = result if figure else _plot(result, heads)
        style.save(fig, buf, fmt, dpi if fmt == "png" else None, provenance=provenance)
    write_bytes(path, buf.getvalue())
    return path


def _plot(df, heads):
    from detokgui.api.plots import plot

    return plot(df, heads=heads)


def _is_figure(value) -> bool:
    from matplotlib.figure import Figure

    return isinstance(value, Figure)


def provenance(path) -> dict | None:
    """The provenance record of a file detokgui wrote (PNG, SVG, PDF; a CSV through its
    NAME.csv.json), None when it has none; InputError when it cannot be read."""
    from detokgui.core.base.provenance import read_provenance

    return read_provenance(path)
