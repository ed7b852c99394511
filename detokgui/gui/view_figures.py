"""A view's plot as a vector figure: the SVG and PDF that a `PlotFrame` exports are the
matplotlib figure `dg.plot` draws from the same table (`figures.view_figure`), not a copy
of the widget. Here the table and the view's conventions are read on the GUI thread
(`figure_request`): the figure's footer names the model (with its family, shapes and
temperature), the view and the conventions of the drawn result as the window's PNG
footer does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from detokgui.core.base.tables import Table
from detokgui.core.model.titles import model_text

VECTOR_FORMATS = ("svg", "pdf")


@dataclass(frozen=True)
class FigureRequest:
    """What a vector export draws (`figures.view_figure`): the frame's table (rows read),
    the analysis whose drawer draws it, the layer (its name goes into the DataFrame's
    attrs as `frame` puts it) and the view's attrs; `title` and `description` for the
    file's metadata, `provenance` the record put into it. Made here, not in
    `detokgui.figures`, whose import loads matplotlib: a view's export leaves that to
    the worker."""

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


def figure_request(frame) -> FigureRequest:
    """The figure of `frame`'s table now (GUI thread); ValueError when the frame has no
    figure (`analysis` None) or shows no data."""
    if frame.analysis is None:
        raise ValueError(f"{frame.name} has no figure to export as SVG or PDF: export PNG "
                         "or CSV.")
    table = frame.table_fn() if frame.table_fn is not None else None
    if table is None:
        raise ValueError(f"{frame.name} has no data to export yet.")
    header, rows = table
    panel = panel_of(frame)
    footer = frame.footer()
    return FigureRequest((list(header), list(rows)), frame.analysis,
                         getattr(panel, "layer", None), view_attrs(panel, frame.analysis),
                         " — ".join([frame.name, *footer[1:2]]), " · ".join(footer),
                         frame.provenance())


def view_attrs(panel, analysis: str) -> dict:
    """The DataFrame attrs a view's figure is drawn with, as `dg`'s analyses set them:
    the model as the footers name it, the view, the conventions of the drawn result
    (`Panel.result_conventions`, shown in the footer) and what the drawer reads from
    attrs (the query position i, the token sigma, a log axis, the result's source and
    convention label, per analysis a few more: `EXTRA_ATTRS`)."""
    if panel is None:
        return {}
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


def export_job(req: FigureRequest, path: str, fmt: str) -> OSError | None:
    """A job body (worker thread): `figures.view_figure.export_job`, imported there, with
    matplotlib, rather than on the GUI thread."""
    from detokgui.figures.view_figure import export_job as write

    return write(req, path, fmt)
