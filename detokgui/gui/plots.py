"""Shared plotting: pyqtgraph set-up, an exportable plot frame, a heatmap with colour bar,
hover and click, and PNG / SVG / PDF / CSV export.

PNG is the widget as drawn on screen; SVG and PDF are the matplotlib figure of the plot's
table (`gui.view_figures`, the figure `dg.plot` draws); CSV is the table.
"""

from __future__ import annotations

import html
import math
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import (
    QBuffer,
    QCoreApplication,
    QEvent,
    QIODevice,
    QObject,
    QPoint,
    QPointF,
    QRectF,
    QSize,
    Qt,
    Signal,
    Slot,
)
from PySide6.QtGui import (
    QAction,
    QColor,
    QFont,
    QFontMetrics,
    QFontMetricsF,
    QImage,
    QPainter,
)
from PySide6.QtWidgets import (
    QApplication,
    QGraphicsItem,
    QGraphicsView,
    QMainWindow,
    QMenu,
    QMessageBox,
    QVBoxLayout,
    QWidget,
)

from detokgui.core.base import plot_axes
from detokgui.core.base.atomic import write_bytes
from detokgui.core.base.provenance import PNG_KEY, to_json
from detokgui.core.base.tables import Table, write_csv
from detokgui.core.model.conventions import DIVERGING_COLOURS, INK_COLOUR, PAPER_COLOUR
from detokgui.gui.colorbar import ColorBar
from detokgui.gui.options import ask_save_path
from detokgui.gui.plot_title import PlotTitle
from detokgui.gui.sharing import view_record
from detokgui.gui.view_figures import (
    VECTOR_FORMATS,
    FigureRequest,
    export_job,
    figure_request,
    panel_of,
)

EXPORT_FORMATS = ("png", "svg", "pdf", "csv")
#: File > Export current view: each format's shortcut
EXPORT_SHORTCUTS = {"png": "Ctrl+Shift+P", "svg": "Ctrl+Shift+S", "pdf": "Ctrl+Shift+E",
                    "csv": "Ctrl+Shift+C"}
HEAD_COLORS = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939",
]


#: The figures' colours of the query σ's lines (`figures.style.SIGMA_COLOURS`, matplotlib's
#: C0, C1, C2), and grey for none (raw, without LayerNorm).
SIGMA_COLORS = {"mean": HEAD_COLORS[0], "max": HEAD_COLORS[1], "min": HEAD_COLORS[2],
                "none": "#4d4d4d"}


def head_color(h: int) -> str:
    return HEAD_COLORS[h % len(HEAD_COLORS)]


def diverging_colormap() -> pg.ColorMap:
    """The colours of every signed heatmap, `conventions.DIVERGING_COLOURS` evenly spaced:
    red < 0 < blue, white at the middle, as the figures and `dg` plots draw them (use
    symmetric levels to centre on 0)."""
    n = len(DIVERGING_COLOURS)
    return pg.ColorMap(np.linspace(0.0, 1.0, n), [QColor(c) for c in DIVERGING_COLOURS])


def plain_axes(item: pg.PlotItem) -> pg.PlotItem:
    """Turn off pyqtgraph's SI multipliers ("(x0.001)" in an axis label, ticks scaled to
    match) on every axis of a PlotItem: ticks show the real values, as everywhere else in
    detokgui; axes, their labels and the title in INK_COLOUR. Returns `item`.

    Also keep each axis, its label and the plot's title as a pixmap of the screen
    (Qt's DeviceCoordinateCache), redrawn only when their range or text changes: a page
    shown again, or a plot whose curves change, then copies them instead of laying out
    and drawing their text again (a tenth of a tab switch's GUI time with 12 heads:
    docs/performance.md). Exports draw them afresh at their own scale: Qt uses the cache
    only for the screen."""
    for name in ("left", "bottom", "top", "right"):
        ax = item.getAxis(name)
        ax.enableAutoSIPrefix(False)
        ax.setPen(INK_COLOUR)
        ax.setTextPen(INK_COLOUR)
        ax.setCacheMode(QGraphicsItem.DeviceCoordinateCache)
        ax.label.setCacheMode(QGraphicsItem.DeviceCoordinateCache)
    item.titleLabel.setAttr("color", INK_COLOUR)
    item.titleLabel.item.setCacheMode(QGraphicsItem.DeviceCoordinateCache)
    return item


class BarLabels(QObject):
    """The token labels of a horizontal bar chart's bars (one per row y = 0, 1, ...) on
    its left axis, thinned to one per text line of the plot's height (the `keep`-th always
    shown), again whenever the plot is resized: twenty bars in a short plot wrote their
    labels over one another."""

    def __init__(self, plot: pg.PlotItem):
        super().__init__(plot)
        self.plot = plot
        self.labels: list[str] = []
        self.keep: int | None = None
        plot.getViewBox().sigResized.connect(self._update)

    def set(self, labels: Sequence[str], keep: int | None = None) -> None:
        self.labels, self.keep = list(labels), keep
        self._update()

    @Slot()
    def _update(self, *_) -> None:
        axis = self.plot.getAxis("left")
        metrics = QFontMetrics(axis.style.get("tickFont") or QApplication.font())
        step = plot_axes.label_step(len(self.labels), self.plot.getViewBox().height() or 300,
                                    metrics.height() + 1)
        axis.setTicks([plot_axes.category_ticks(self.labels, step, 0.0, self.keep), []])


def set_label(plot: pg.PlotItem, side: str, text: str) -> None:
    """plot.setLabel(side, text), skipped when the axis already says so (a new label
    costs a relayout of the plot)."""
    if plot.getAxis(side).labelText != text:
        plot.setLabel(side, text)


def frame_of(item: pg.GraphicsObject | pg.GraphicsWidget) -> PlotFrame | None:
    """The PlotFrame whose view shows `item`, or None."""
    scene = item.scene()
    for view in scene.views() if scene is not None else ():
        if isinstance(view.parentWidget(), PlotFrame):
            return view.parentWidget()
    return None


def set_title(plot: pg.PlotItem, html: str) -> None:
    """The title of the plot frame `plot` is in (`PlotFrame.set_title`: wrapped to the
    frame's width, blank hides it)."""
    frame = frame_of(plot)
    if frame is not None:
        frame.set_title(html)


def fit_label(plot: pg.PlotItem, side: str, texts: Sequence[str]) -> None:
    """Label an axis with the first of `texts` (longest first) that fits its length, the
    last when none does: a narrow plot gets a short title instead of one cut at both ends."""
    axis = plot.getAxis(side)
    length = axis.width() if side in ("top", "bottom") else axis.height()
    metrics = QFontMetricsF(axis.label.font())
    margin = 2 * axis.label.document().documentMargin()
    text = next((t for t in texts if metrics.horizontalAdvance(t) + margin <= length), texts[-1])
    set_label(plot, side, text)


def set_log_y(plot: pg.PlotItem, log: bool, label: str) -> None:
    """A logarithmic (or linear) y axis whose label says which: ticks show the values
    themselves (1, 10, 100), never exponents with a multiplier. No-op when already so."""
    text = f"{label} (log scale)" if log else label
    axis = plot.getAxis("left")
    if axis.logMode == log and axis.labelText == text:
        return
    # pyqtgraph works out an SI prefix (unused here) from 10**range while the range is
    # still the linear one: 10**5000 overflowed, with a RuntimeWarning. The axes keep what
    # plain_axes and add_plot set (no SI prefix, a grid axis uncached).
    with np.errstate(over="ignore"):
        plot.setLogMode(y=log)
        plot.setLabel("left", text)


def add_plot(frame: PlotFrame, *args, bottom: str = "", left: str = "", grid: str = "",
             alpha: float = 0.25, controls: bool = True, mouse: bool = True,
             invert_y: bool = False, **kw) -> pg.PlotItem:
    """A PlotItem in `frame` (GraphicsLayout.addPlot arguments) with plain axes.

    bottom / left: axis labels; grid: the axes with grid lines ("x", "y" or "xy") at
    opacity `alpha`, painted directly under the plot's clip rather than kept as pixmaps
    (`plain_axes`); controls=False: no context menu and no auto-range button; mouse=False:
    no pan or zoom (a view the panel sets itself); invert_y: y grows downwards (rows)."""
    plot = plain_axes(frame.view.addPlot(*args, **kw))
    if not controls:
        plot.setMenuEnabled(False)
        plot.hideButtons()
    if invert_y:
        plot.invertY(True)
    if not mouse:
        plot.getViewBox().setMouseEnabled(False, False)
    if grid:
        plot.showGrid(x="x" in grid, y="y" in grid, alpha=alpha)
        # pyqtgraph draws the grid with the axes, translucent, across the plot: Qt's raster
        # engine draws such lines far faster under a clip, and draws an axis kept as a
        # pixmap into it unclipped (docs/performance.md)
        plot.setFlag(QGraphicsItem.ItemClipsChildrenToShape)
        for name in ("left", "bottom"):
            plot.getAxis(name).setCacheMode(QGraphicsItem.NoCache)
    if bottom:
        plot.setLabel("bottom", bottom)
    if left:
        plot.setLabel("left", left)
    return plot


# --------------------------------------------------------------------------- export


FOOTER_PT = 7.0  # the footer of an exported plot: small grey lines below it
FOOTER_GREY = QColor(89, 89, 89)  # the figures' "0.35"
FOOTER_MARGIN = 6.0


def _footer_font() -> QFont:
    font = QFont()
    font.setPointSizeF(FOOTER_PT)
    return font


def footer_lines(parts: Sequence[str], width: float) -> list[str]:
    """The footer's parts joined with " · " and wrapped to `width` pixels
    (`core.base.plot_axes.wrap_parts`), as the exported figures' footer."""
    metrics = QFontMetricsF(_footer_font())
    room = width - 2 * FOOTER_MARGIN
    return plot_axes.wrap_parts(parts, lambda text: metrics.horizontalAdvance(text) <= room)


def _paint_footer(painter: QPainter, top: float, lines: Sequence[str]) -> None:
    """The footer's lines from `top` down."""
    font = _footer_font()
    metrics = QFontMetricsF(font)
    painter.save()
    painter.setPen(FOOTER_GREY)
    painter.setFont(font)
    for k, line in enumerate(lines):
        baseline = top + FOOTER_MARGIN + k * metrics.lineSpacing() + metrics.ascent()
        painter.drawText(QPointF(FOOTER_MARGIN, baseline), line)
    painter.restore()


def render_png(widget: QWidget, scale: float = 2.0, footer: Sequence[str] = (),
               provenance: dict | None = None) -> bytes:
    """`widget` drawn at `scale` times its on-screen size (800 x 600 when it has none yet),
    as PNG bytes: a high-DPI rendering, with lines, markers and text in the same
    proportions as on screen; `footer`'s parts in small grey lines below it
    (`footer_lines`). A plot view is drawn from its scene; a widget holding one (a
    PlotFrame: its title above the view) is drawn child by child. `provenance`: a record
    (`gui.sharing.view_record`) in the PNG's text chunk `core.base.provenance.PNG_KEY`."""
    size = widget.size()
    if size.width() < 10 or size.height() < 10:
        size = QSize(800, 600)
        widget.resize(size)
    lines = footer_lines(footer, size.width())
    height = size.height()
    if lines:
        height += len(lines) * QFontMetricsF(_footer_font()).lineSpacing() + 2 * FOOTER_MARGIN
    img = QImage(round(size.width() * scale), round(height * scale), QImage.Format_ARGB32)
    img.setDevicePixelRatio(scale)
    img.fill(QColor("white"))
    painter = QPainter(img)
    painter.setRenderHint(QPainter.Antialiasing)
    painter.setRenderHint(QPainter.TextAntialiasing)
    if isinstance(widget, QGraphicsView):
        _render_view(painter, widget, QPoint(0, 0))
    else:
        for child in widget.findChildren(QWidget, options=Qt.FindDirectChildrenOnly):
            if not child.isVisible():
                continue
            if isinstance(child, QGraphicsView):
                _render_view(painter, child, child.pos())
            else:
                child.render(painter, child.pos(), renderFlags=QWidget.RenderFlag.DrawChildren)
    _paint_footer(painter, size.height(), lines)
    painter.end()
    if footer:  # the footer also as the PNG's text, for programs (and tests) that read it
        img.setText("Description", " · ".join(footer))
    img.setDevicePixelRatio(1.0)
    return png_bytes(img, provenance)


def _render_view(painter: QPainter, view: QGraphicsView, at: QPoint) -> None:
    """What `view` shows, drawn from its scene at `at` (vector: sharp at any scale)."""
    source = view.mapToScene(view.viewport().rect()).boundingRect()
    view.scene().render(painter, QRectF(at.x(), at.y(), view.width(), view.height()), source)


def png_bytes(image: QImage, provenance: dict | None = None) -> bytes:
    """`image` encoded as PNG, with `provenance` (a record) in its text chunk `PNG_KEY`."""
    if provenance is not None:
        image.setText(PNG_KEY, to_json(provenance))
    buf = QBuffer()
    buf.open(QIODevice.WriteOnly)
    if not image.save(buf, "PNG"):
        raise OSError("the PNG image could not be encoded")
    return bytes(buf.data())


class PlotFrame(QWidget):
    """A pyqtgraph GraphicsLayoutWidget that knows how to export itself.

    `table_fn()` returns the plot's data as a tidy table (header, rows) for CSV, or
    None when there is nothing to export yet; `analysis` names the drawer of
    `api.plots.DRAWERS` that draws that table as the SVG and PDF figure."""

    exported = Signal(str)  # path

    def __init__(self, name: str, table_fn: Callable[[], Table | None] | None = None,
                 parent=None, *, analysis: str | None = None):
        super().__init__(parent)
        self.name = name
        self.table_fn = table_fn
        self.analysis = analysis
        self.view = pg.GraphicsLayoutWidget()
        self.view.setBackground(PAPER_COLOUR)
        # Repaint one rectangle around what changed, not the exact region: a curve over
        # every cell and a moved marker make a region of many rectangles, and painting
        # through it took 2.7x as long as through their bounding rectangle.
        self.view.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.BoundingRectViewportUpdate)
        self.title: PlotTitle | None = None  # made by set_title
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.view)
        self.export_actions = [QAction(f"Export {f.upper()}…", self) for f in EXPORT_FORMATS]
        for fmt, act in zip(EXPORT_FORMATS, self.export_actions):
            act.triggered.connect(lambda _=False, f=fmt: self.export_dialog(f))
        # Replace pyqtgraph's own "Export..." (its SVG exporter is broken with PySide6 6.12):
        # plots with a ViewBox menu append these actions; elsewhere a right-click shows them.
        self.view.scene().contextMenu = self.export_actions
        self.view.setContextMenuPolicy(Qt.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._context_menu)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        # pyqtgraph sets a view box's new range when it paints, and the scene reports
        # that change later: the plot was painted twice when shown. Set it now.
        self.view.scene().prepareForPaint()
        QCoreApplication.sendPostedEvents(self.view.scene(), QEvent.Type.MetaCall)

    def set_title(self, html: str, align=Qt.AlignHCenter) -> None:
        """The plot's title (rich text) above it, wrapped onto more lines where the frame
        is narrow; blank hides it. (A pyqtgraph title is one line that sets the plot's
        least width: a long one was cut off at both ends, and the axes with it.) A new
        title of as many lines repaints the title only (`PlotTitle`)."""
        if self.title is None:
            if not html.strip():
                return
            self.title = PlotTitle()
            self.layout().insertWidget(0, self.title)
        self.title.setAlignment(align)
        self.title.setText(html)
        self.title.setVisible(bool(html.strip()))

    def title_text(self) -> str:
        return self.title.text() if self.title is not None else ""

    def _context_menu(self, pos) -> None:
        if QApplication.activePopupWidget() is not None:
            return  # a pyqtgraph ViewBox menu (which holds the export actions) is open
        menu = QMenu(self)
        menu.addActions(self.export_actions)
        menu.popup(self.view.mapToGlobal(pos))

    def footer(self) -> list[str]:
        """The parts of an exported image's footer: what the panel this plot belongs to
        says of itself (`Panel.export_footer`: the model and the conventions), as every
        exported figure's footer does; ["detokgui"] outside a panel."""
        owner = panel_of(self)
        return owner.export_footer() if owner is not None else ["detokgui"]

    def export(self, path: str | Path) -> int | None:
        """Write PNG, SVG, PDF or CSV by the file's suffix; CSV returns the row count. PNG
        is the plot as shown with `footer()` below it; SVG and PDF are the figure of its
        table (`view_figures`), whose footer says the same. Each carries `provenance()`
        (a CSV beside it, in NAME.csv.json)."""
        path = Path(path)
        fmt = path.suffix.lower().lstrip(".")
        rows = None
        if fmt == "png":  # the file appears whole or not at all
            write_bytes(path, render_png(self, footer=self.footer(), provenance=self.provenance()))
        elif fmt in VECTOR_FORMATS:
            from detokgui.figures.view_figure import write_figure  # matplotlib: only here

            write_figure(self.figure_request(), path, fmt)
        elif fmt == "csv":
            table = self.table_fn() if self.table_fn else None
            if table is None:
                raise ValueError(f"{self.name} has no data to export yet.")
            rows = write_csv(path, table, self.provenance())
        else:
            raise ValueError(f"Unknown export format {path.suffix!r}: use .png, .svg, .pdf "
                             "or .csv.")
        self.exported.emit(str(path))
        return rows

    def provenance(self) -> dict:
        """The provenance record of what this plot shows now (`gui.sharing.view_record`)."""
        return view_record(self)

    def figure_request(self) -> FigureRequest:
        """What the SVG and PDF exports draw now; ValueError when nothing is shown."""
        return figure_request(self)

    def has_data(self) -> bool:
        return self.table_fn is not None and self.table_fn() is not None

    def export_dialog(self, fmt: str) -> None:
        """Ask for a file name and export; nothing to export yet is said in the status bar
        (no dialog), a failed write in a warning, a written file in the status bar."""
        if not self.has_data():
            notify(self, f"{self.name}: nothing to export yet (no data is shown).")
            return
        stem = self.name.lower().replace(" ", "_").replace("/", "-")
        path = ask_save_path(self, f"Export {self.name} as {fmt.upper()}", f"{stem}.{fmt}", fmt)
        if path is None:
            return
        owner = panel_of(self)
        if fmt in VECTOR_FORMATS and owner is not None:
            self._export_in_background(owner.jobs, path, fmt)
            return
        try:
            self.export(path)
        except (OSError, ValueError) as exc:
            QMessageBox.warning(self, "Export failed", failure_message(exc, path))
            return
        notify(self, f"Saved {self.name} to {path}")

    def _export_in_background(self, jobs, path: str, fmt: str) -> None:
        """Draw and write the figure as a job, off the GUI thread (matplotlib drawing a
        grid of panels would stall the window); its table and conventions are read now."""
        try:
            req = self.figure_request()
        except ValueError as exc:
            QMessageBox.warning(self, "Export failed", failure_message(exc, path))
            return
        notify(self, f"Exporting {self.name} to {path}…")
        jobs.submit(f"export {path}", partial(export_job, req, path, fmt),
                    partial(self._written, path), label=f"Exporting {self.name}")

    def _written(self, path: str, error: OSError | None) -> None:
        if error is not None:
            QMessageBox.warning(self, "Export failed", failure_message(error, path))
            return
        self.exported.emit(path)
        notify(self, f"Saved {self.name} to {path}")


def failure_message(exc: BaseException, path) -> str:
    """One line for a failed export: what went wrong and where; the previous file at
    `path`, if any, is unchanged (writes are atomic)."""
    if isinstance(exc, OSError):
        return f"Could not write {path}: {exc.strerror or exc}. Nothing was changed there."
    return str(exc)


def notify(widget: QWidget, text: str, timeout_ms: int = 10000) -> None:
    """A line in the status bar of `widget`'s main window (stderr when it has none)."""
    win = widget.window()
    if isinstance(win, QMainWindow):
        win.statusBar().showMessage(text, timeout_ms)
    else:
        print(text, file=sys.stderr)


# --------------------------------------------------------------------------- heatmap


class Heatmap(pg.PlotItem):
    """A matrix as an image with tick labels, a symmetric diverging colour bar, hover text,
    the outlined cell of the selection and clickable cells. Rows are queries (top to
    bottom), columns keys."""

    cellClicked = Signal(int, int)  # row, col

    def __init__(self, title: str = "", max_labels: int = 60, **kw):
        super().__init__(title=title, enableMenu=False, **kw)  # no plot or view box menu
        self.max_labels = max_labels
        self.hideButtons()
        plain_axes(self)
        for name in ("left", "bottom", "top"):  # the labels are thinned to fit (update_ticks)
            self.getAxis(name).setStyle(hideOverlappingLabels=False)
        vb = self.getViewBox()
        self.image = pg.ImageItem(axisOrder="row-major")
        vb.addItem(self.image)
        vb.invertY(True)
        vb.setAspectLocked(False)
        vb.setMouseEnabled(False, False)
        self.values = np.zeros((0, 0))
        self.row_labels: list[str] = []
        self.col_labels: list[str] = []
        self.colorbar: ColorBar | None = None
        self.highlight = pg.QtWidgets.QGraphicsRectItem()
        self.highlight.setPen(pg.mkPen("k", width=2))  # cosmetic: 2 px at any zoom
        self.highlight.setZValue(10)
        self.marked = (-1, -1)
        self.highlight.setVisible(False)
        vb.addItem(self.highlight)
        self.image.setColorMap(diverging_colormap())
        self.colorbar_label = ""
        vb.sigResized.connect(self.update_ticks)

    def set_colorbar_label(self, text: str) -> None:
        """What the colours mean (plain text), written along the colour bar."""
        self.colorbar_label = html.escape(text)  # an axis label is rich text: "<" is a tag
        if self.colorbar is not None:
            self.colorbar.getAxis("right").setLabel(self.colorbar_label)

    def attach_colorbar(self, layout: pg.GraphicsLayout, row: int, col: int,
                        rowspan: int = 1) -> None:
        """This map's colour bar (made on first use and kept) in `layout` at (row, col)."""
        if self.colorbar is None:
            self.colorbar = ColorBar(diverging_colormap(), label=self.colorbar_label)
            self.colorbar.setImageItem(self.image)
        layout.addItem(self.colorbar, row, col, rowspan=rowspan)

    def set_matrix(self, values: np.ndarray, row_labels: Sequence[str],
                   col_labels: Sequence[str], levels: tuple[float, float] | None = None) -> None:
        """Show `values` [rows, columns] on `levels` (default: symmetric about 0)."""
        values = np.asarray(values, dtype=np.float32)
        self.values = values
        self.row_labels = list(row_labels)
        self.col_labels = list(col_labels)
        levels = levels or plot_axes.symmetric_levels(values)
        self.image.setImage(values, levels=levels, autoLevels=False)
        self.image.setRect(QRectF(0, 0, values.shape[1], values.shape[0]))
        if self.colorbar is not None:
            self.colorbar.setLevels(levels)
        self.highlight.setVisible(False)
        self.marked = (-1, -1)
        self.setRange(xRange=(0, values.shape[1]), yRange=(0, values.shape[0]), padding=0)
        self.update_ticks()

    def cell_at(self, scene_pos: QPointF) -> tuple[int, int]:
        if not self.sceneBoundingRect().contains(scene_pos) or self.values.size == 0:
            return -1, -1
        p = self.getViewBox().mapSceneToView(scene_pos)
        r, c = math.floor(p.y()), math.floor(p.x())
        if 0 <= r < self.values.shape[0] and 0 <= c < self.values.shape[1]:
            return r, c
        return -1, -1

    def describe(self, r: int, c: int) -> str:
        if r < 0:
            return ""
        return (f"query {self.row_labels[r]!r}  key {self.col_labels[c]!r}  "
                f"value {self.values[r, c]:.4g}")

    def mark(self, r: int, c: int) -> None:
        """Outline cell (r, c); with only r (c = -1) its row, with only c its column;
        (-1, -1) hides the outline."""
        rows, cols = self.values.shape[:2] if self.values.ndim == 2 else (0, 0)
        r = r if 0 <= r < rows else -1
        c = c if 0 <= c < cols else -1
        old, self.marked = self.marked, (r, c)
        if r < 0 and c < 0:
            self.highlight.setVisible(False)
        else:
            x, w = (c, 1) if c >= 0 else (0, cols)
            y, h = (r, 1) if r >= 0 else (0, rows)
            self.highlight.setRect(QRectF(x, y, w, h))
            self.highlight.setVisible(True)
        if self.marked != old:
            self.update_ticks()  # the marked row and column keep their labels

    def mouseClickEvent(self, ev):
        if ev.button() == Qt.LeftButton:
            r, c = self.cell_at(ev.scenePos())
            if r >= 0:
                self.cellClicked.emit(r, c)
                ev.accept()
                return
        ev.ignore()

    def update_ticks(self, *_) -> None:
        """Tick labels thinned to what the view's size in pixels holds without overlap
        (`core.base.plot_axes.heatmap_ticks`; the marked row and column keep theirs)."""
        vb = self.getViewBox()
        metrics = QFontMetrics(self.getAxis("left").style.get("tickFont") or self.font())
        widest = max((metrics.horizontalAdvance(t) for t in self.col_labels), default=0) + 8
        left, bottom, top = plot_axes.heatmap_ticks(
            self.row_labels, self.col_labels, vb.height() or 400, vb.width() or 400,
            metrics.height() + 1, widest, self.max_labels or 0, self.marked)
        self.showAxis("top", top is not None)
        for name, ticks in (("left", left), ("bottom", bottom), ("top", top)):
            if ticks is not None:
                self.getAxis(name).setTicks([ticks, []])
        if left:
            # pyqtgraph widens the axis only on a later repaint; size it for the labels now.
            self.getAxis("left").setWidth(max(metrics.horizontalAdvance(t) for _, t in left) + 25)
