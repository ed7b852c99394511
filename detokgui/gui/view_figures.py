"""A view's plot as a vector figure: the SVG and PDF that a `PlotFrame` exports are the
matplotlib figure `dg.plot` draws from the same table (`api.plots.DRAWERS`, by the
frame's `analysis`), in the exported figures' look, not a copy of the widget.

The table and the view's conventions are read on the GUI thread (`figure_request`); the
figure is drawn and written anywhere (`write_figure`, a job of the panel's runner when
the export starts from a menu). The figure's footer names the model (with its family,
shapes and temperature), the view and the conventions of the drawn result as the
window's PNG footer does; the file's metadata (SVG <title> and Dublin Core description,
PDF Title and Subject) hold the same lines.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from detokgui.core.base.atomic import write_bytes
from detokgui.core.base.tables import Table

VECTOR_FORMATS = ("svg", "pdf")

#: matplotlib's style (`figures.style.style`) changes its process-wide rcParams while a
#: figure is drawn and saved: two exports at once on two worker threads take turns.
_DRAWING = threading.Lock()


@dataclass(frozen=True)
class FigureRequest:
    """What a vector export draws: the frame's table (rows read), the analysis whose
    drawer draws it, the layer (its name goes into the DataFrame's attrs as `frame`
    puts it) and the view's attrs; `title` and `description` for the file's metadata,
    `provenance` the record put into it."""

    table: Table
    analysis: str
    layer: object
    attrs: dict
    title: str
    description: str
    provenance: dict | None = None  # the record the file carries (`gui.sharing`)


def panel_of(widget):
    """The panel `widget` sits in (the first parent with `export_footer`), or None."""
    owner = widget.parent()
    while owner is not None and not hasattr(owner, "export_footer"):
        owner = owner.parent()
    return owner


def figure_request(frame) -> FigureRequest | None:
    """The figure of `frame`'s table now (GUI thread), or None when it shows no data."""
    table = frame.table_fn() if frame.table_fn is not None else None
    if table is None:
        return None
    header, rows = table
    panel = panel_of(frame)
    footer = frame.footer()
    return FigureRequest((list(header), list(rows)), frame.analysis,
                         getattr(panel, "layer", None), view_attrs(panel, frame.analysis),
                         " — ".join([frame.name, *footer[1:2]]), " · ".join(footer),
                         frame.provenance() if hasattr(frame, "provenance") else None)


def view_attrs(panel, analysis: str) -> dict:
    """The DataFrame attrs a view's figure is drawn with, as `dg`'s analyses set them:
    the model as the footers name it, the view, the conventions of the drawn result
    (`Panel.result_conventions`, shown in the footer) and what the drawer reads from
    attrs (the query position i, the token sigma, a log axis, the result's source and
    convention label, per analysis a few more: `EXTRA_ATTRS`)."""
    if panel is None:
        return {}
    from detokgui.figures.labels import model_text

    attrs: dict = {"view": panel.title, "conventions": list(panel.result_conventions())}
    if panel.layer is not None:
        attrs["model"] = model_text(panel.layer)
    res = panel.result if "" in panel.channels else None
    for name in ("i", "label", "source"):
        value = getattr(res, name, None)
        if isinstance(value, (int, str)) and not isinstance(value, bool):
            attrs[name] = value
    sigma = getattr(res, "sigma", None)
    if isinstance(getattr(sigma, "convention", None), str):
        attrs["sigma"] = sigma.convention
    options = getattr(getattr(panel, "options", None), "value", None)
    for name in ("log", "scaled"):
        if isinstance(getattr(options, name, None), bool):
            attrs[name] = getattr(options, name)
    extra = EXTRA_ATTRS.get(analysis)
    if extra is not None:
        attrs.update(extra(panel))
    return attrs


def _frequency_attrs(panel) -> dict:
    fs = panel.result
    return {"rho": {int(h): float(r) for h, r in zip(fs.heads, fs.rho_t_e.tolist())}}


def _compare_attrs(panel) -> dict:
    state = panel.state
    attrs = {}
    if state.layer_b is not None:
        from detokgui.figures.labels import model_text

        attrs["model_b"] = model_text(state.layer_b)
    if state.matching is not None:
        attrs["no_match"] = state.matching.rule()
    return attrs


def _sinks_attrs(panel) -> dict:
    return {"show": panel.options.value.show}


#: attrs a drawer reads that a view's result does not hold under a common name
EXTRA_ATTRS: dict[str, Callable] = {
    "frequency": _frequency_attrs, "compare": _compare_attrs, "pattern_pair": _compare_attrs,
    "sinks": _sinks_attrs,
}


def draw(req: FigureRequest):
    """The matplotlib Figure of `req` (`api.plots.plot` of its DataFrame)."""
    from detokgui.api.frames import frame
    from detokgui.api.plots import plot

    df = frame(req.table, req.analysis, req.layer if req.layer is not None else _Unnamed(),
               **req.attrs)
    return plot(df)


class _Unnamed:
    """The layer of a frame outside a panel (no model): the figure names none."""

    name = ""


def figure_bytes(req: FigureRequest, fmt: str) -> bytes:
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


def write_figure(req: FigureRequest, path: str | Path, fmt: str) -> None:
    """Write the figure of `req` to `path` as `fmt` ("svg" or "pdf"); the file appears
    whole or not at all."""
    write_bytes(path, figure_bytes(req, fmt))


def export_job(req: FigureRequest, path: str, fmt: str) -> OSError | None:
    """A job body: `write_figure`, returning the OSError of a failed write (shown as a
    warning, as a failed PNG or CSV export is) instead of raising it."""
    try:
        write_figure(req, path, fmt)
    except OSError as exc:
        return exc
    return None
