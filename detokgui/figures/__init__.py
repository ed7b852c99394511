"""Publication figures: the paper's figures and the layer-0 studies' key figures drawn with
matplotlib (no Qt, no pyplot), exported as PNG/SVG/PDF with their data as CSV and an
index (`export.iter_export_figures`). Figures register themselves in `registry.FIGURES`;
see `registry` for how to add one.

The names below are imported when first used: importing a module of the package
(`figures.defaults`, as the window's export dialogs do on the GUI thread) loads no
matplotlib."""

from __future__ import annotations

import importlib

_WHERE = {
    "FORMATS": "export", "ExportReport": "export", "FigureRecord": "export",
    "export_figures": "export", "iter_export_figures": "export",
    "FIGURES": "registry", "Drawn": "registry", "FigureContext": "registry",
    "FigureSkipped": "registry", "FigureSpec": "registry", "figure": "registry",
    "load_figures": "registry", "planned": "registry",
}
__all__ = [
    "FIGURES", "FORMATS", "Drawn", "ExportReport", "FigureContext", "FigureRecord",
    "FigureSkipped", "FigureSpec", "export_figures", "figure", "iter_export_figures",
    "load_figures", "planned",
]


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
