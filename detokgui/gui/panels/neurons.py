"""B6 Position-embedding neuron browser ("layer 0 by hand"): every residual dimension k of
the position embedding P as a curve P[:, k] over positions, a sortable table of the
dimensions (L2 norm, linear-fit slope and R², dominant FFT period, group), the selected
dimensions overlaid, and how much the position-heavy dimensions overlap the token
embedding's top SVD directions."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Slot
from PySide6.QtWidgets import (
    QLabel,
    QMessageBox,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QVBoxLayout,
)
from superqt.utils import signals_blocked

from detokgui.core.base.tables import write_csv
from detokgui.core.position_side import neurons
from detokgui.core.position_side.neurons import GROUP_RULES, NEURON_GROUPS, summary_text
from detokgui.core.position_side.tables import neuron_curves_table, neurons_table
from detokgui.gui.adaptive_splitter import AdaptiveSplitter
from detokgui.gui.controls import bare_column
from detokgui.gui.option_rows import OptionRow, check, combo, option, spin
from detokgui.gui.options import ask_save_path
from detokgui.gui.panels.base import Panel
from detokgui.gui.panels.neuron_overlap import OverlapView, entry_size, fit_legend, legend
from detokgui.gui.panels.neuron_table import NeuronTable
from detokgui.gui.plots import (
    PlotFrame,
    add_plot,
    failure_message,
    head_color,
    notify,
    set_label,
    set_title,
)
from detokgui.gui.position import PositionMarker, connect_position_clicks, position_at

DEFAULT_SELECTION = 5  # top dims by norm shown when nothing is selected
MAX_CURVES = 64  # drawn at most; the rest of a larger selection is listed as left out
MAX_LEGEND = 12
LEGEND_BESIDE_MIN_PLOT = 260  # pixels the curves keep beside a legend column
SIDE_BY_SIDE_MIN_WIDTH = 900  # pixels the panel needs for the plots beside the table
OVERLAP_DEBOUNCE_MS = 250
@dataclass(frozen=True)
class Options:
    group: str = option("all", combo(
        [(g, g) for g in ("all", *NEURON_GROUPS)],
        "Show only the dimensions of one group in the table.\n\n" + GROUP_RULES, label="Group"))
    scaled: bool = option(False, check(
        "scaled by σ",
        "Off: the raw curves P[j, k].\nOn: P[j, k] / σ̄_j with σ̄_j = mean over the vocabulary "
        "of σ(e_v + p_j),\nthe LayerNorm scale the first layer sees on average at position j.\n"
        "Table, curves and the position-heavy dims of the overlap plot all follow this."))
    fits: bool = option(False, check("linear fits",
                                     "Draw each selected curve's least-squares line (dashed)"))
    # the overlap view's row (the spin boxes' ranges are set per model)
    centre: bool = option(False, check(
        "centre E", "SVD of the mean-removed token embedding E - mean_v e_v "
                    "(otherwise the first direction is mostly the mean token)"))
    r: int = option(10, spin(1, 1, "How many of the token embedding's top right singular "
                                   "vectors to show (0 = largest singular value)",
                             label="SVD directions r"))
    m: int = option(20, spin(1, 1, "The m dimensions of P with the largest curve norm "
                                   "(raw or scaled)", label="position-heavy dims m"))


@dataclass(frozen=True)
class Request:
    serial: int
    scaled: bool


@dataclass(frozen=True)
class OverlapRequest:
    serial: int
    r: int
    m: int
    scaled: bool
    centre: bool


class NeuronBrowserPanel(Panel):
    title = "PE neurons"
    view_name = "neurons"
    tooltip = ("Position-embedding dimensions as curves over positions: fits, periods, groups "
               "and their overlap with the token embedding's SVD directions (B6)")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        self.selected: list[int] = []  # dims selected in the table, in table order
        self.plotted: list[int] = []  # dims whose curves are on the plot
        self.curve_items: dict[int, pg.PlotDataItem] = {}
        self.fit_items: list[pg.PlotDataItem] = []
        self._pool: list[tuple[pg.PlotDataItem, pg.PlotDataItem]] = []  # (curve, fit)
        self._more_item = pg.PlotDataItem([], [], pen=pg.mkPen(None), antialias=True)  # "… and n more"
        lay = QVBoxLayout(self)

        self.options = OptionRow("neurons", Options, self)
        self.top_button = QPushButton(f"Top {DEFAULT_SELECTION} by norm")
        self.top_button.setToolTip(f"Select the {DEFAULT_SELECTION} highest-norm dimensions "
                                   "of the shown group")
        self.export_table_button = QPushButton("Export table…")
        self.export_table_button.setToolTip(
            "Save the statistics of all d dimensions (dim, norm, slope, r2, period, group)\n"
            "as CSV — the same table as `detokgui export neurons`")
        lay.addLayout(self.options.row(("group", "scaled", "fits", self.top_button,
                                        self.export_table_button)))

        # the table beside the plots; above them, side by side, in a narrow panel
        split = AdaptiveSplitter(SIDE_BY_SIDE_MIN_WIDTH)
        # ---- left: the table
        self.table = NeuronTable()
        self.records = self.table.records
        left, ll = bare_column()
        ll.addWidget(self.table, 1)
        self.status.setWordWrap(True)
        self.status.setToolTip(GROUP_RULES)
        ll.addWidget(self.status)
        left.setMinimumWidth(300)
        split.addWidget(left)

        # ---- right: curves over overlap
        right = QSplitter(Qt.Vertical)
        top, tl = bare_column()
        self.curve_frame = PlotFrame("PE neuron curves", self._curves_table,
                                     analysis="neuron_curves")
        self.curve_plot = add_plot(self.curve_frame, grid="xy", bottom="position j")
        # Legends sit beside / under their plots (not over the curves), in the exported image too.
        self.legend = legend()
        self.curve_frame.view.addItem(self.legend, row=0, col=1)
        self.curve_frame.view.ci.layout.setAlignment(self.legend, Qt.AlignTop | Qt.AlignLeft)
        self._legend_beside = True
        # the legend moves under a narrow plot
        self.curve_frame.view.sigDeviceRangeChanged.connect(self._fit_legend)
        self.curve_frame.view.ci.layout.setColumnStretchFactor(0, 1)
        self.marker = PositionMarker(
            state, movable=True, live=False, when_visible=self.when_visible,
            pen=pg.mkPen("#444", width=1, style=Qt.DashLine),
            hoverPen=pg.mkPen("#d62728", width=2), label="i={value:.0f}",
            labelOpts={"position": 0.96, "color": "#444", "fill": (255, 255, 255, 200)})
        self.marker.setZValue(10)
        self.curve_plot.addItem(self.marker, ignoreBounds=True)
        self.curve_frame.setToolTip("Click (or drag the dashed line) to set the query position i")
        self.curve_frame.setMinimumHeight(160)
        tl.addWidget(self.curve_frame, 1)
        self.hover = QLabel(" ")
        self.hover.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.hover.setToolTip("Values of the shown curves at the position under the mouse")
        tl.addWidget(self.hover)
        right.addWidget(top)
        self.overlap_view = OverlapView(self.options)
        right.addWidget(self.overlap_view)
        right.setSizes([520, 360])
        split.addWidget(right)
        split.setStretchFactor(0, 0)
        split.setStretchFactor(1, 1)
        split.setSizes([400, 1000])
        split.turn_crosswise(right, beside=([400, 1000], None), above=([300, 400], None))
        lay.addWidget(split, 1)

        ov = self.overlap_view
        self._opts = self.options.value
        self.table.set_group(self._opts.group)
        self.add_channel("overlap", self._overlap_request,
                         lambda layer, q: neurons.iter_embedding_overlap(
                             layer, q.r, q.m, q.scaled, q.centre),
                         lambda res: ov.draw(res, self.layer is not None), status=ov.info,
                         label="PE-token SVD overlap")
        # r and m are debounced: the first overlap of a model runs the Gram pass over E
        # (~0.6 s at GPT-2-small size); each new request cancels the one before.
        self.overlap_timer = QTimer(self, singleShot=True, interval=OVERLAP_DEBOUNCE_MS)
        self.overlap_timer.timeout.connect(self.refresh)
        ov.r_spin.valueChanged.connect(self.overlap_timer.start)
        ov.m_spin.valueChanged.connect(self.overlap_timer.start)
        self.options.changed.connect(self._options_changed)
        self.top_button.clicked.connect(
            lambda: self.table.select_dims(self.table.default_dims(DEFAULT_SELECTION)))
        self.export_table_button.clicked.connect(self._export_table_dialog)
        self._draw_curves_when_visible = self.when_visible(self._draw_curves)
        self.table.dimsSelected.connect(self._dims_selected)
        connect_position_clicks(self.curve_frame.view.scene(), self._curve_position,
                                state.set_query_position)
        self.curve_frame.view.scene().sigMouseMoved.connect(self._curve_hover)

    def plot_frames(self):
        return [self.curve_frame, self.overlap_view.frame]

    @property
    def stats(self) -> neurons.NeuronStats | None:
        return self.result[1] if self.result is not None else None

    @property
    def curves(self) -> np.ndarray | None:
        """[L, d] as drawn (raw or scaled)."""
        return self.result[0] if self.result is not None else None

    @property
    def overlap(self) -> neurons.EmbeddingOverlap | None:
        return self.channel("overlap").result

    # ------------------------------------------------------------------ options

    def model_changed(self, layer) -> None:
        self.table.set_stats(None)
        if layer is not None:
            ov = self.overlap_view
            with signals_blocked(ov.r_spin), signals_blocked(ov.m_spin):
                ov.set_dims(layer.d)
            self.options.apply()
        self.draw(None)
        self.overlap_view.draw(None, layer is not None)

    @Slot(object)
    def _options_changed(self, opts: Options) -> None:
        old, self._opts = self._opts, opts
        changed = {f.name for f in fields(opts) if getattr(old, f.name) != getattr(opts, f.name)}
        if "group" in changed:
            self.table.set_group(opts.group)
        if changed - {"group", "fits", "r", "m"}:  # r and m wait for overlap_timer
            self.refresh()
        if "fits" in changed:
            self._draw_curves()

    # ------------------------------------------------------------------ compute

    def request(self):
        return Request(self.serial, self.options.value.scaled)

    @staticmethod
    def compute(layer, req: Request):
        curves = neurons.position_curves(layer, req.scaled)
        return curves, neurons.curve_stats(curves, req.scaled)

    def _overlap_request(self):
        o, d = self.options.value, self.layer.d
        return OverlapRequest(self.serial, min(o.r, d), min(o.m, d), o.scaled, o.centre)

    def draw(self, result) -> None:
        """The table and the selected dims' curves."""
        st = self.stats
        with signals_blocked(self.table):  # its dimsSelected would draw the curves too
            self.table.set_stats(st)
        self.selected = self.table.selected()
        self._draw_curves_when_visible()
        if st is None:
            return
        group = self.options.widget("group")
        group.setItemText(0, f"all ({len(st.group)})")
        for i, g in enumerate(NEURON_GROUPS, start=1):
            group.setItemText(i, f"{g} ({st.group.count(g)})")
        self.status.setText(summary_text(st))

    @Slot(list)
    def _dims_selected(self, dims: list[int]) -> None:
        self.selected = dims
        # a model switch empties the table of a hidden panel too: clearing its curves and
        # legend (~250 ms of relayout) waits until the panel is shown
        self._draw_curves_when_visible()

    # ------------------------------------------------------------------ draw: curves

    def _draw_curves(self) -> None:
        self._on_show.pop(self._draw_curves, None)  # drawn now, not again when shown
        plot = self.curve_plot
        st, curves = self.stats, self.curves
        scaled = bool(st.scaled) if st is not None else self.options.value.scaled
        set_label(plot, "left", "P[j, k] / σ̄_j" if scaled else "P[j, k]")
        dims = self.selected[:MAX_CURVES] if st is not None and curves is not None else []
        fits = self.options.value.fits
        x = np.arange(curves.shape[0], dtype=np.float64) if dims else None
        self.curve_items, self.fit_items = {}, []
        # the n-th curve is always the n-th item of a pool, in the n-th colour: a new
        # selection gives the items new data (adding and removing items cost ~35 ms)
        for n, k in enumerate(dims):
            curve, fit = self._pool_items(n)
            curve.setData(x, curves[:, k])
            curve.setVisible(True)
            self.curve_items[k] = curve
            fit.setVisible(fits)
            if fits:
                fit.setData(x, st.intercept[k] + st.slope[k] * x)
                self.fit_items.append(fit)
        for curve, fit in self._pool[len(dims):]:
            curve.setVisible(False)
            fit.setVisible(False)
        entries = [(self._pool[n][0], f"dim {k} · {st.group[k]}")
                   for n, k in enumerate(dims[:MAX_LEGEND])]
        if dims and len(self.selected) > MAX_LEGEND:
            more = len(self.selected) - MAX_LEGEND
            entries.append((self._more_item, f"… and {more} more" + (
                f" ({len(self.selected) - MAX_CURVES} not drawn)"
                if len(self.selected) > MAX_CURVES else "")))
        self._set_legend(entries)
        self.plotted = list(dims)
        if st is None or curves is None:
            set_title(plot, "Position-embedding curves" if self.layer is None else "")
            return
        what = "scaled by σ̄_j" if scaled else "raw"
        set_title(plot, f"Position embedding ({what})" if dims else "Select dimensions in the table")
        plot.enableAutoRange()

    def _pool_items(self, n: int) -> tuple[pg.PlotDataItem, pg.PlotDataItem]:
        """The n-th (curve, fitted line) pair of the plot, made when first needed."""
        while len(self._pool) <= n:
            color = head_color(len(self._pool))
            # hairlines: Qt strokes a 1024-point antialiased curve of width 1.5 some 20x
            # slower (~45 ms per curve), which froze the first showing
            curve = pg.PlotDataItem(pen=pg.mkPen(color, width=1), antialias=True)
            fit = pg.PlotDataItem(pen=pg.mkPen(color, width=1, style=Qt.DashLine), antialias=True)
            for item in (curve, fit):
                item.setVisible(False)
                self.curve_plot.addItem(item)
            self._pool.append((curve, fit))
        return self._pool[n]

    def _set_legend(self, entries: list[tuple[pg.PlotDataItem, str]]) -> None:
        """The legend lists `entries` (item, text): only the texts change when the items
        are those it lists."""
        leg = self.legend
        if [sample.item for sample, _ in leg.items] != [item for item, _ in entries]:
            leg.clear()
            for item, text in entries:
                leg.addItem(item, text)
        else:
            for (_, label), (_, text) in zip(leg.items, entries):
                if label.text != text:
                    label.setText(text)
        self._fit_legend()

    def _fit_legend(self, *_) -> None:
        """Size the legend to its entries (a grid layout would squeeze it): a column beside
        the plot, or, when that would leave the curves under LEGEND_BESIDE_MIN_PLOT pixels,
        rows under it (a narrow window showed the legend and no curves)."""
        leg = self.legend
        entry, _ = entry_size(leg)
        width = self.curve_frame.view.width()
        beside = width - entry >= LEGEND_BESIDE_MIN_PLOT
        columns = 1 if beside else int((width - 16) // max(entry, 1))
        grid = self.curve_frame.view.ci
        if beside != self._legend_beside:
            self._legend_beside = beside
            grid.removeItem(leg)
            row, col = (0, 1) if beside else (1, 0)
            grid.addItem(leg, row=row, col=col)
            grid.layout.setAlignment(leg, Qt.AlignTop | Qt.AlignLeft)
        fit_legend(leg, columns)

    def _curve_position(self, scene_pos) -> int | None:
        if self.layer is None:
            return None
        return position_at(self.curve_plot.getViewBox(), scene_pos, self.layer.n_positions)

    def _curve_hover(self, pos) -> None:
        j = self._curve_position(pos)
        if j is None or self.curves is None or not self.plotted:
            self.hover.setText(" ")
            return
        vals = ", ".join(f"dim {k} = {self.curves[j, k]:.4g}" for k in self.plotted[:8])
        more = " …" if len(self.plotted) > 8 else ""
        self.hover.setText(f"j = {j}: {vals}{more}  (click to set the query position)")

    # ------------------------------------------------------------------ export

    def _curves_table(self):
        if self.stats is None or not self.plotted:
            return None
        return neuron_curves_table(self.layer, self.plotted, self.stats.scaled)

    def export_table(self, path) -> int:
        """Write the statistics of all d dimensions as CSV (rows written), its provenance
        record beside it."""
        if self.layer is None:
            raise ValueError("No model is loaded.")
        from detokgui.gui.sharing import panel_record

        return write_csv(path, neurons_table(self.layer, self.options.value.scaled),
                         panel_record(self, "neurons"))

    def _export_table_dialog(self) -> None:
        name = "pe_neurons_scaled.csv" if self.options.value.scaled else "pe_neurons.csv"
        path = ask_save_path(self, "Export the neuron table as CSV", name, "csv")
        if path is None:
            return
        try:
            n = self.export_table(path)
        except (OSError, ValueError) as exc:
            QMessageBox.warning(self, "Export failed", failure_message(exc, path))
            return
        notify(self, f"Saved the neuron table ({n} rows) to {path}")
