"""B5 Position-embedding statistics (the paper's Fig 6 right, Fig 7): the variance of each
position embedding over its d dimensions (in GPT-2 the first position stands out high and
the last low), and T_pp without LayerNorm for the last query positions L-5 .. L-1 (the
"undertrained last position" view), per visible head."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSettings, Qt, Signal, Slot
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QSpinBox, QSplitter, QVBoxLayout

from detokgui.core.positional import LastPositionsPP, position_variance, raw_pp_last_positions
from detokgui.core.tables import last_positions_table, position_variance_table
from detokgui.gui.panels.base import Panel
from detokgui.gui.panels.position_common import (
    HeadCell,
    HeadChooser,
    HeadGrid,
    connect_position_clicks,
    data_range,
    stable_range,
)
from detokgui.gui.plots import PlotFrame

DEFAULT_COUNT = 5
LAST_COLOR = "#d62728"  # the last position, L-1
EARLIER = pg.ColorMap([0.0, 1.0], [(120, 168, 210), (8, 48, 107)])  # light -> dark blue


def position_colors(n: int) -> list[str]:
    """Colours of the lines for the last n query positions: blues, light to dark, and
    red for the last one."""
    out = [EARLIER.map(k / max(1, n - 2), mode="qcolor").name() for k in range(n - 1)]
    return out + [LAST_COLOR]


def log_ticks(lo: float, hi: float) -> list[list[tuple[float, str]]]:
    """Ticks of a log10 axis over [lo, hi] (lo > 0): labelled at 1, 2 and 5 x 10^k,
    unlabelled at the other integers (pyqtgraph labels all of 2..9 and they overlap)."""
    lo = max(lo, 1e-30)
    hi = max(hi, lo)
    major, minor = [], []
    for k in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in range(1, 10):
            v = m * 10.0 ** k
            if lo / 1.5 <= v <= hi * 1.5:
                (major if m in (1, 2, 5) else minor).append((math.log10(v), f"{v:g}" if m in (1, 2, 5) else ""))
    return [major, minor]


@dataclass
class StatsResult:
    variance: np.ndarray  # [L]
    last: LastPositionsPP


def compute_stats(layer, count: int, heads: list[int]) -> StatsResult:
    return StatsResult(variance=position_variance(layer),
                       last=raw_pp_last_positions(layer, count, heads))


class PositionStatsPanel(Panel):
    title = "Position embedding"
    view_name = "position-stats"
    tooltip = "Variance of each position embedding, and raw T_pp at the last positions (B5)"

    drawn = Signal()

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        self.request = None
        self.pending = None
        self.result: StatsResult | None = None
        self._serial = 0
        settings = QSettings()
        lay = QVBoxLayout(self)

        row = QHBoxLayout()
        self.heads_box = HeadChooser("position-stats")
        row.addWidget(self.heads_box)
        row.addSpacing(12)
        row.addWidget(QLabel("Last"))
        self.count = QSpinBox()
        self.count.setRange(1, 32)
        self.count.setValue(settings.value("position-stats/count", DEFAULT_COUNT, type=int))
        self.count.setToolTip("How many of the last query positions (L-n .. L-1) to plot")
        row.addWidget(self.count)
        row.addWidget(QLabel("positions"))
        row.addSpacing(12)
        self.log = QCheckBox("Log variance")
        self.log.setChecked(settings.value("position-stats/log", True, type=bool))
        self.log.setToolTip("Plot the variance on a logarithmic axis")
        row.addWidget(self.log)
        row.addStretch(1)
        lay.addLayout(row)

        self.var_frame = PlotFrame("Position embedding variance", self._variance_table)
        self.var_plot = self.var_frame.view.addPlot()
        self.var_plot.setMenuEnabled(False)
        self.var_plot.hideButtons()
        self.var_plot.showGrid(x=True, y=True, alpha=0.25)
        self.var_plot.setLabel("bottom", "position j")
        self.var_plot.setLabel("left", "Var_k P[j, k]")
        self.var_plot.getAxis("left").enableAutoSIPrefix(False)
        self.var_curve = self.var_plot.plot(pen=pg.mkPen("#1f77b4", width=1))
        self.var_ends = self.var_plot.plot(pen=None, symbol="o", symbolSize=8,
                                           symbolBrush=LAST_COLOR, symbolPen=None)
        self.end_labels = [pg.TextItem(color="k", anchor=(0, 1)), pg.TextItem(color="k", anchor=(1, 1))]
        for t in self.end_labels:
            self.var_plot.addItem(t, ignoreBounds=True)
        self.marker = pg.InfiniteLine(angle=90, movable=True,
                                      pen=pg.mkPen((0, 0, 0, 170), width=1, style=Qt.DashLine),
                                      hoverPen=pg.mkPen("k", width=2))
        self.marker.setToolTip("Query position i: drag it, or click the plot")
        self.var_plot.addItem(self.marker, ignoreBounds=True)
        self.var_frame.setMinimumHeight(160)

        self.pp_frame = PlotFrame("Raw T_pp at the last positions", self._last_table)
        self.grid = HeadGrid(self.pp_frame, "", self._build_cell)
        connect_position_clicks(self.grid, self._n_positions, self.state.set_query_position)

        split = QSplitter(Qt.Vertical)
        split.addWidget(self.var_frame)
        split.addWidget(self.pp_frame)
        split.setSizes([380, 520])
        lay.addWidget(split, 1)
        self.status = QLabel(" ")
        self.status.setToolTip("Hover over a plot to read its values; click to choose the query position")
        lay.addWidget(self.status)

        self.heads_box.changed.connect(self.refresh)
        self.count.valueChanged.connect(self._count_changed)
        self.log.toggled.connect(self._log_changed)
        self.var_plot.scene().sigMouseClicked.connect(self._variance_clicked)
        self.var_plot.scene().sigMouseMoved.connect(self._hover_variance)
        self.pp_frame.view.scene().sigMouseMoved.connect(self._hover_pp)
        self.marker.sigDragged.connect(self._marker_dragged)
        state.modelChanged.connect(self._model_changed)
        state.headChanged.connect(self._head_changed)
        state.queryPositionChanged.connect(self._show_position)
        jobs.cancelled.connect(self._job_cancelled)
        self.var_plot.setLogMode(y=self.log.isChecked())
        if state.layer is not None:
            self._model_changed(state.layer)

    def plot_frames(self):
        return [self.var_frame, self.pp_frame]

    def _n_positions(self) -> int:
        return self.layer.n_positions if self.layer is not None else 0

    # ------------------------------------------------------------------ state

    @Slot(object)
    def _model_changed(self, layer) -> None:
        self._serial += 1
        self.result = None
        self.refresh()

    @Slot()
    def _head_changed(self, *_):
        self.refresh()  # a no-op unless the selected head is shown

    @Slot(str)
    def _job_cancelled(self, key: str) -> None:
        if key == self.job_key():
            self.pending = None

    @Slot()
    def _count_changed(self, *_):
        QSettings().setValue("position-stats/count", self.count.value())
        self.refresh()

    @Slot()
    def _log_changed(self, *_):
        QSettings().setValue("position-stats/log", self.log.isChecked())
        self.var_plot.setLogMode(y=self.log.isChecked())
        self._draw_variance()

    @Slot(int)
    def _show_position(self, i: int) -> None:
        if self.marker.value() != i:
            self.marker.blockSignals(True)
            self.marker.setValue(i)
            self.marker.blockSignals(False)

    @Slot()
    def _marker_dragged(self, *_):
        L = self._n_positions()
        if L:
            self.state.set_query_position(int(max(0, min(L - 1, round(self.marker.value())))))

    def _variance_clicked(self, ev) -> None:
        if ev.button() != Qt.LeftButton or ev.double() or self.layer is None:
            return
        vb = self.var_plot.getViewBox()
        if not vb.sceneBoundingRect().contains(ev.scenePos()):
            return
        j = round(vb.mapSceneToView(ev.scenePos()).x())
        self.state.set_query_position(max(0, min(self.layer.n_positions - 1, j)))
        ev.accept()

    # ------------------------------------------------------------------ compute

    def heads(self) -> list[int]:
        layer = self.layer
        return self.heads_box.heads(self.state.head, layer.n_heads) if layer else []

    @Slot()
    def refresh(self, *_) -> None:
        layer = self.layer
        if layer is None:
            return
        heads, count = self.heads(), self.count.value()
        request = (self._serial, count, tuple(heads))
        if request == self.request or request == self.pending:
            return
        self.pending = request
        self.status.setText("computing…")
        self.jobs.submit(self.job_key(), lambda: compute_stats(layer, count, heads),
                         lambda res, req=request: self._done(req, res),
                         label="Position embedding statistics", on_error=self._failed)

    def _failed(self, exc) -> None:
        self.pending = None
        self.status.setText(f"Position embedding statistics failed: {exc}")

    def _done(self, request, result: StatsResult) -> None:
        if request != self.pending:
            return  # made for an older selection
        self.pending = None
        self.request = request
        self.result = result
        self._draw_variance()
        self._draw_last()
        self.drawn.emit()

    # ------------------------------------------------------------------ draw

    def _draw_variance(self) -> None:
        res = self.result
        if res is None:
            return
        var = res.variance
        L = var.shape[0]
        j = np.arange(L)
        self.var_curve.setData(j, var)
        ends = [0, L - 1] if L > 1 else [0]
        self.var_ends.setData(ends, var[ends])  # log mode maps the points itself
        med = float(np.median(var)) or 1.0
        for t, e in zip(self.end_labels, [0, L - 1]):
            e = min(e, L - 1)
            t.setText(f"j = {e}: {var[e]:.3g} ({var[e] / med:.2g}× median)")
            y = np.log10(max(var[e], 1e-30)) if self.log.isChecked() else var[e]
            t.setPos(e, y)
        self.var_plot.getAxis("left").setTicks(
            log_ticks(float(var.min()), float(var.max())) if self.log.isChecked() else None)
        self.var_plot.setXRange(-0.5, L - 0.5, padding=0.01)
        self.var_plot.enableAutoRange(y=True)
        self.var_plot.setTitle(f"<b>B5</b> Variance of each position embedding p<sub>j</sub> "
                               f"over its {self.layer.d} dimensions", size="10pt")
        self.marker.setBounds((0, L - 1))
        self._show_position(self.state.query_position)

    def _build_cell(self, cell: HeadCell) -> None:
        cell.vb.setMouseEnabled(x=True, y=True)

    def _draw_last(self) -> None:
        res = self.result
        if res is None:
            return
        last = res.last
        L = self.layer.n_positions
        colors = position_colors(len(last.positions))
        self.grid.set_heads(last.heads)
        for r, h in enumerate(last.heads):
            cell = self.grid.cell(h)
            for k, i in enumerate(last.positions):
                name = f"q{k}"
                curve = cell.curves.get(name)
                if curve is None:
                    curve = cell.add_curve(name, None)
                last_one = k == len(last.positions) - 1
                curve.setPen(pg.mkPen(colors[k], width=1))  # hairlines: wider AA lines paint ~20x slower
                curve.setZValue(2 if last_one else 1)
                curve.setData(np.arange(i + 1), last.values[r, k, : i + 1])
                curve.setVisible(True)
            for k in range(len(last.positions), len(cell.curves)):
                cell.curves[f"q{k}"].setVisible(False)
        y = stable_range(None, *data_range([last.values], 0, L))
        self.grid.set_view((-0.5, L - 0.5), y)
        names = " ".join(f"<span style='color:{c}'>{'<b>' if k == len(colors) - 1 else ''}"
                         f"i = {i}{'</b>' if k == len(colors) - 1 else ''}</span>"
                         for k, (c, i) in enumerate(zip(colors, last.positions)))
        self.grid.set_title("<b>B5</b> raw T<sub>pp</sub>(i, j) = p<sub>i</sub>W<sup>QK</sup>"
                            f"p<sub>j</sub><sup>T</sup> (no LayerNorm), j ≤ i, for {names}")
        var = res.variance
        med = float(np.median(var)) or 1.0
        self.status.setText(
            f"Var(p_0) = {var[0]:.3g} ({var[0] / med:.2g}× the median), "
            f"Var(p_{L - 1}) = {var[-1]:.3g} ({var[-1] / med:.2g}× the median) · "
            "hover to read values, click to choose the query position")

    # ------------------------------------------------------------------ hover & export

    def _hover_variance(self, pos) -> None:
        res = self.result
        vb = self.var_plot.getViewBox()
        if res is None or not vb.sceneBoundingRect().contains(pos):
            return
        j = round(vb.mapSceneToView(pos).x())
        if 0 <= j < res.variance.shape[0]:
            self.status.setText(f"position j = {j}: Var_k P[j, k] = {res.variance[j]:.4g}")

    def _hover_pp(self, pos) -> None:
        res = self.result
        hit = self.grid.at(pos)
        if res is None or hit is None:
            return
        h, x = hit
        last = res.last
        if h not in last.heads:
            return
        r, j = last.heads.index(h), round(x)
        if not 0 <= j < last.values.shape[-1]:
            return
        vals = ", ".join(f"i = {i}: {last.values[r, k, j]:.4g}" for k, i in enumerate(last.positions)
                         if j <= i)
        self.status.setText(f"head {h} · j = {j}: raw T_pp {vals}")

    def _variance_table(self):
        if self.result is None or self.layer is None:
            return None
        return position_variance_table(self.layer)

    def _last_table(self):
        if self.result is None or self.layer is None:
            return None
        last = self.result.last
        return last_positions_table(self.layer, len(last.positions), last.heads)
