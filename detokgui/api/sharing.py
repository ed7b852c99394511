"""Files to hand on: `dg.save` writes a result (CSV, or its figure as PNG, SVG or PDF) with
its provenance record inside or beside it, `dg.provenance` reads a record back (what
`detokgui provenance FILE` prints; `core.base.provenance` holds the formats), and
`dg.open_session` opens a session the window saved (`core.base.session`).

    df = dg.topk(layer, " Korea")
    dg.save(df, "topk.csv")          # topk.csv + topk.csv.json (the record)
    dg.save(df, "topk.pdf")          # the figure of df.dg.plot(), the record in the PDF
    dg.provenance("topk.pdf")["model"]["layer0_sha256"]
    s = dg.open_session("work.detokgui.json")   # a session the window saved
    dg.topk(s.layer, s.selection["query_token"], k=s.options["topk"]["k"])
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

from detokgui.api.jobs import ProgressArg
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


@dataclass
class Session:
    """A session file opened in a notebook (`open_session`): the models loaded, the
    window's selection and options as plain values, and what could not be restored."""

    path: str
    layer: object | None  # model A (a Layer0), None when it did not open
    layer_b: object | None  # model B, None without one or when it did not open
    selection: dict  # head, head_b, query_token, key_token, query_position, token_set, sigma
    corpus: list[str] | None  # the corpus paths (None: none); `problems` says if one moved
    text_column: str
    view: str | None
    options: dict  # view name -> {option: value}, as the window's panels hold them
    problems: list[str] = field(default_factory=list)


def open_session(path, device=None, *, progress: ProgressArg = True) -> Session:
    """Open a session saved by the window (*File > Save session…*): its models loaded
    (`dg.load`, a hub model at the commit it was saved at), its selection, corpus, view
    and views' options as plain values. What cannot be restored (a model that does not
    open, a corpus that moved) is listed in `problems`, as the window's banner lists it;
    a file that is not a valid session raises InputError and loads nothing."""
    from detokgui.api.loading import load
    from detokgui.core.base.errors import ModelLoadError
    from detokgui.core.base.session import model_to_open, read_session

    data = read_session(path)
    problems: list[str] = []
    layers = {}
    for slot in ("a", "b"):
        entry = data["models"].get(slot)
        layers[slot] = None
        if entry is None:
            continue
        name = model_to_open(entry)
        try:
            layers[slot] = load(name, device, progress=progress)
        except ModelLoadError as exc:
            problems.append(f"model {slot.upper()}, {name}: {exc}")
    corpus = data.get("corpus")
    if corpus is not None:
        from detokgui.core.corpus.documents import SAMPLE_NAME
        from detokgui.core.model.sources.demo import sample_corpus

        corpus = {**corpus, "paths": [str(sample_corpus()) if p == SAMPLE_NAME and
                                      not Path(p).exists() else p for p in corpus["paths"]]}
        missing = [p for p in corpus["paths"] if not Path(p).exists()]
        if missing:
            problems.append(f"the corpus: {', '.join(missing)} moved or was deleted")
    return Session(str(path), layers["a"], layers["b"], dict(data["selection"]),
                   list(corpus["paths"]) if corpus else None,
                   (corpus or {}).get("text_column", "text"), data.get("view"),
                   dict(data["panels"]), problems)
