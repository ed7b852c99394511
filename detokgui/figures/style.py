"""One look for every exported figure: printed sizes of the paper's layout, font sizes that
stay readable at column width, embedded fonts, and the few drawing helpers the figures
share (bands, in-panel titles, panel letters, the footer that states the conventions).

Figures are drawn at their printed size (NAACL two-column layout: text width 16.0 cm, one
column 7.7 cm), so a LaTeX document includes them unscaled and 6-7 pt text stays 6-7 pt.
Only `matplotlib.figure.Figure` is used, never pyplot: no global figure registry, no GUI
backend, safe on a worker thread.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Iterator

import matplotlib
import numpy as np
from matplotlib.colors import LinearSegmentedColormap, TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from detokgui.core.base import plot_axes
from detokgui.core.model.conventions import DIVERGING_COLOURS

CM = 1 / 2.54
TEXT_IN = 16.0 * CM  # \textwidth (figure*, appendix)
COLUMN_IN = 7.7 * CM  # one column of the two-column main text

FONT_PT = 7.0
SMALL_PT = 6.0
FOOTER_PT = 4.5
LINE_WIDTH = 0.8
BAND_ALPHA = 0.25
#: One colour per vocabulary summary of the query sigma (mean, max, min), as in the paper.
SIGMA_COLOURS = {"mean": "C0", "max": "C1", "min": "C2"}

RC = {
    "font.family": "DejaVu Sans",
    "font.size": FONT_PT,
    "axes.titlesize": FONT_PT,
    "axes.labelsize": FONT_PT,
    "xtick.labelsize": SMALL_PT,
    "ytick.labelsize": SMALL_PT,
    "legend.fontsize": SMALL_PT,
    "figure.titlesize": FONT_PT,
    "mathtext.fontset": "dejavusans",
    "axes.linewidth": 0.5,
    "axes.xmargin": 0.0,
    "xtick.major.width": 0.5,
    "ytick.major.width": 0.5,
    "xtick.major.size": 2.0,
    "ytick.major.size": 2.0,
    "xtick.major.pad": 1.5,
    "ytick.major.pad": 1.5,
    "lines.linewidth": LINE_WIDTH,
    "legend.frameon": False,
    "legend.handlelength": 1.5,
    "legend.columnspacing": 1.0,
    "legend.handletextpad": 0.4,
    "image.cmap": "viridis",
    # TrueType (Type 42) fonts embedded in PDF/PS; text as outlines in SVG: every file
    # renders identically without the fonts installed.
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "svg.fonttype": "path",
    "svg.hashsalt": "detokgui",  # stable element ids: re-exports diff cleanly
    "savefig.dpi": 300,
}

#: Metadata without dates, so that the same weights give byte-identical PDF/SVG files.
METADATA = {
    "pdf": {"Creator": "detokgui", "Producer": "detokgui (matplotlib)", "CreationDate": None},
    "svg": {"Creator": "detokgui", "Date": None},
    "png": {"Software": "detokgui (matplotlib)"},
}


@contextlib.contextmanager
def style() -> Iterator[None]:
    """Everything drawn and saved inside uses the shared look."""
    with matplotlib.rc_context(RC):
        yield


def text_width_in(text: str, size_pt: float) -> float:
    """Printed width of `text` in DejaVu Sans at `size_pt`, in inches."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    w, _, _ = TextToPath().get_text_width_height_descent(
        text, FontProperties(family="DejaVu Sans", size=size_pt), ismath=False)
    return w / 72.0


def wrap_parts(parts, width_in: float, size_pt: float = FOOTER_PT) -> list[str]:
    """Join the parts (of a footer, a title) with " · " into as few lines of text at
    `size_pt` as fit the figure's width."""
    room = 0.95 * width_in - 0.05  # Agg hinting widens small text at low dpi
    return plot_axes.wrap_parts(parts, lambda text: text_width_in(text, size_pt) <= room)


def new_figure(width_in: float, height_in: float, nrows: int = 1, ncols: int = 1,
               footer=(), **subplots_kw) -> tuple[Figure, np.ndarray]:
    """A figure `width_in` wide whose axes (a 2-D array, laid out by the constrained layout
    engine) take `height_in`, plus a band below them for the footer: small grey lines that
    name the model, heads, positions and the conventions shown (`footer`: the parts, joined
    with " · " and wrapped). The paper's figures have no such line; an exported figure must
    say which convention it uses."""
    lines = wrap_parts(["detokgui", *footer], width_in) if footer else []
    band_in = len(lines) * FOOTER_PT * 1.25 / 72.0 + (2.0 / 72.0 if lines else 0.0)
    total = height_in + band_in
    fig = Figure(figsize=(width_in, total), layout="constrained")
    band = band_in / total
    fig.get_layout_engine().set(w_pad=1 / 72, h_pad=1 / 72, wspace=0.02, hspace=0.02,
                                rect=(0.0, band, 1.0, 1.0 - band))
    if lines:
        fig.text(0.005, band / 2, "\n".join(lines), fontsize=FOOTER_PT, color="0.35",
                 ha="left", va="center", linespacing=1.15)
    return fig, fig.subplots(nrows, ncols, squeeze=False, **subplots_kw)


def panel_title(ax, text: str) -> None:
    """A label inside the upper-left corner of the axes, as in the paper."""
    ax.text(0.02, 0.97, text, transform=ax.transAxes, va="top", ha="left", fontsize=SMALL_PT,
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.7, "pad": 0.3})


def panel_letter(ax, letter: str) -> None:
    """A bold panel letter (A, B, ...) above the upper-left corner."""
    ax.text(0.0, 1.02, letter, transform=ax.transAxes, va="bottom", ha="left",
            fontweight="bold")


def plot_band(ax, x, mean, lo=None, hi=None, color=None, label=None):
    """A line with a translucent band (lo..hi) in the same colour; returns the line."""
    (line,) = ax.plot(x, mean, color=color, label=label)
    if lo is not None and hi is not None:
        ax.fill_between(x, lo, hi, color=line.get_color(), alpha=BAND_ALPHA, linewidth=0)
    return line


def diverging_colormap() -> LinearSegmentedColormap:
    """The colour map of every signed heatmap, built from `conventions.DIVERGING_COLOURS`
    (red < 0 < blue, the paper's RdBu), as the window builds its own."""
    return LinearSegmentedColormap.from_list("detokgui-diverging", DIVERGING_COLOURS, N=256)


def diverging_heatmap(fig: Figure, ax, values: np.ndarray, bar_title: str) -> None:
    """`values` [rows, columns] as an image in the diverging colours (red < 0 < blue, the
    colour scale symmetric, -max|v| .. max|v|), its colour bar on top titled `bar_title`:
    the paper's T_ee heatmaps (Fig 2-B, 12). Callers put `COLOUR_SIGN_NOTE` in the
    footer."""
    m = float(np.abs(values).max()) or 1.0
    # "nearest" resamples the cells at the output's dpi in SVG and PDF too: viewers that
    # smooth a scaled embedded image (Qt, librsvg) would blur "none"'s one pixel per cell.
    im = ax.imshow(values, cmap=diverging_colormap(), norm=TwoSlopeNorm(0.0, -m, m),
                   interpolation="nearest", aspect="auto")
    cb = fig.colorbar(im, ax=ax, location="top", fraction=0.06, pad=0.02, aspect=25)
    cb.locator = MaxNLocator(nbins=4, symmetric=True)
    cb.update_ticks()
    cb.ax.tick_params(labelsize=FOOTER_PT + 0.5, length=1.5, pad=1)
    cb.outline.set_linewidth(0.3)
    cb.ax.set_title(bar_title, pad=2)


def hide_unused(axes: np.ndarray, used: int) -> None:
    for ax in axes.flat[used:]:
        ax.set_visible(False)


def grid_shape(n: int, ncols: int) -> tuple[int, int]:
    ncols = max(1, min(ncols, n))
    return -(-n // ncols), ncols


def top_legend(fig: Figure, ax, ncols: int | None = None, fontsize: float | None = None) -> None:
    """The legend of `ax` in one row above all panels."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=ncols or len(labels),
               fontsize=fontsize)


def save(fig: Figure, path, fmt: str, dpi: int | None = None,
         metadata: dict | None = None, provenance: dict | None = None) -> None:
    """Write the figure at its printed size (no tight bounding box) in one format to a
    file name or a binary file object; `dpi` for raster output (default
    RC["savefig.dpi"]); `metadata` adds to METADATA (e.g. a Title); `provenance`, a record
    (`core.model.provenance`), goes into the file (`core.base.provenance`: a PNG text
    chunk, the PDF information dictionary, the SVG's <metadata>)."""
    from detokgui.core.base.provenance import matplotlib_metadata, svg_with

    # fontTools warns about DejaVu's zero font timestamps while subsetting for PDF.
    logging.getLogger("fontTools").setLevel(logging.ERROR)
    extra = {"dpi": dpi} if dpi else {}
    meta = {**(METADATA.get(fmt) or {}), **(metadata or {}),
            **matplotlib_metadata(fmt, provenance)} or None
    if fmt == "svg" and provenance is not None:
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, metadata=meta, **extra)
        data = svg_with(buf.getvalue(), provenance)
        if hasattr(path, "write"):
            path.write(data)
        else:
            with open(path, "wb") as f:
                f.write(data)
        return
    with warnings.catch_warnings():
        # the PDF information dictionary may hold entries of its own (PDF 1.7, 14.3.3);
        # matplotlib warns of any it does not know
        warnings.filterwarnings("ignore", message="Unknown infodict keyword",
                                category=UserWarning)
        fig.savefig(path, format=fmt, metadata=meta, **extra)
