"""A window view's plot as a vector figure: the SVG or PDF of a table that a plot of the
window shows, drawn by `dg.plot`'s drawer of the same table (`api.plots.DRAWERS`) in the
exported figures' look, with the file's metadata (SVG <title> and Dublin Core
description, PDF Title and Subject) and provenance record.

The window reads the table and the view's conventions on its GUI thread into a request
(`gui.view_figures.FigureRequest`: table, analysis, layer, attrs, title, description,
provenance); the figure is drawn and written anywhere, a job of the panel's runner when
the export starts from a menu.
"""

from __future__ import annotations

import io
import threading
from pathlib import Path

from detokgui.core.base.atomic import write_bytes

#: matplotlib's style (`figures.style.style`) changes its process-wide rcParams while a
#: figure is drawn and saved: two exports at once on two worker threads take turns.
_DRAWING = threading.Lock()


def draw(req):
    """The matplotlib Figure of `req` (`api.plots.plot` of its DataFrame)."""
    from detokgui.api.frames import frame
    from detokgui.api.plots import plot

    df = frame(req.table, req.analysis, req.layer if req.layer is not None else _Unnamed(),
               **req.attrs)
    return plot(df)


class _Unnamed:
    """The layer of a frame outside a panel (no model): the figure names none."""

    name = ""


def figure_bytes(req, fmt: str) -> bytes:
    """The figure of `req` as an SVG or PDF document, saved as `export figures` saves
    (`figures.style.save`: printed size, fonts as outlines / embedded, no dates), with
    the title and the footer's lines in its metadata and the request's provenance
    record."""
    from detokgui.figures import style

    meta = ({"Title": req.title, "Description": req.description} if fmt == "svg"
            else {"Title": req.title, "Subject": req.description})
    buf = io.BytesIO()
    with _DRAWING, style.style():
        fig = draw(req)
        style.save(fig, buf, fmt, metadata=meta, provenance=req.provenance)
    return buf.getvalue()


def write_figure(req, path: str | Path, fmt: str) -> None:
    """Write the figure of `req` to `path` as `fmt` ("svg" or "pdf"); the file appears
    whole or not at all."""
    write_bytes(path, figure_bytes(req, fmt))


def export_job(req, path: str, fmt: str) -> OSError | None:
    """A job body: `write_figure`, returning the OSError of a failed write (shown as a
    warning, as a failed PNG or CSV export is) instead of raising it."""
    try:
        write_figure(req, path, fmt)
    except OSError as exc:
        return exc
    return None
