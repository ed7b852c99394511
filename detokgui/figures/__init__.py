"""Publication figures: the paper's figures and the layer-0 studies' key figures drawn with
matplotlib (no Qt, no pyplot), exported as PNG/SVG/PDF with their data as CSV and an
index (`export.iter_export_figures`). Figures register themselves in `registry.FIGURES`;
see `registry` for how to add one."""

from detokgui.figures.export import (
    FORMATS,
    ExportReport,
    FigureRecord,
    export_figures,
    iter_export_figures,
)
from detokgui.figures.registry import (
    FIGURES,
    Drawn,
    FigureContext,
    FigureSkipped,
    FigureSpec,
    figure,
    load_figures,
    planned,
)

__all__ = [
    "FIGURES", "FORMATS", "Drawn", "ExportReport", "FigureContext", "FigureRecord",
    "FigureSkipped", "FigureSpec", "export_figures", "figure", "iter_export_figures",
    "load_figures", "planned",
]
