"""B5 Position-embedding statistics (the paper's Fig 6 right, Fig 7): the variance of each
position embedding over its d dimensions (in GPT-2 the first position stands out high and
the last low), and T_pp without LayerNorm for the last query positions L-5 .. L-1 (the
"undertrained last position" view), per visible head."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import QSplitter, QVBoxLayout

from detokgui.core.base.plot_axes import data_range, log_ticks, stable_range
from detokgui.core.position_side import positional, titles
from detokgui.core.position_side.tables import last_positions_table, position_variance_table
from detokgui.gui.head_controls import HeadChooser, state_heads
from detokgui.gui.option_rows import OptionRow, check, custom, option, spin
from detokgui.gui.panels.base import Panel
from detokgui.gui.plots import PlotFrame, add_plot, set_log_y, set_title
from detokgui.gui.position import PositionMarker, connect_position_clicks, position_at
from detokgui.gui.small_multiples import SmallMultiples

DEFAULT_COUNT = 5
LAST_COLOR = "#d62728"  # the last position, L-1
EARLIER = pg.ColorMap([0.0, 1.0], [(120, 168, 210), (8, 48, 107)])  # light -> dark blue


def position_colors(n: int) -> list[str]:
    """Colours of the lines for the last n query positions: blues, light to dark, and
    red for the last one."""
    out = [EARLIER.map(k / max(1, n - 2), mode="qcolor").name() for k in range(n - 1)]
    return out + [LAST_COLOR]


@dataclass(frozen=True)
class Options:
    heads: str = option("selected", custom(HeadChooser))
    count: int = option(DEFAULT_COUNT, spin(  # last query positions L-count .. L-1
        1, 32, "How many of the last query positions (L-n .. L-1) to plot", label="Last",
        after="positions"))
    log: bool = option(True, check("Log variance", "Plot the variance on a logarithmic axis"))


@dataclass(frozen=True)
class Request:
    serial: int
    count: int
    heads: tuple[int, ...]


@dataclass
class StatsResult:
    variance: np.ndarray  # [L]
    last: positional.LastPositionsPP


class PositionStatsPanel(Panel):
    title = "Position embedding"
    view_name = "position-stats"
    tooltip = "Variance of each position embedding, and raw T_pp at the last positions (B5)"

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        lay = QVBoxLayout(self)

        self.options = OptionRow("position-stats", Options, self)
        self.heads_box = self.options.widget("heads")
        lay.addLayout(self.options.row("heads", "count", "log"))

        self.var_frame = PlotFrame("Position embedding variance", self._variance_table,
                                   analysis="position_variance")
        self.var_plot = add_plot(self.var_frame, controls=False, grid="xy", bottom="position j",
                                 left="Var_k P[j, k]")
        self.var_curve = self.var_plot.plot(pen=pg.mkPen("#1f77b4", width=1), antialias=True)
        self.var_ends = self.var_plot.plot(pen=None, symbol="o", symbolSize=8, antialias=True,
                                           symbolBrush=LAST_COLOR, symbolPen=None)
        self.end_labels = [pg.TextItem(color="k", anchor=(0, 1)), pg.TextItem(color="k", anchor=(1, 1))]
        for t in self.end_labels:
            self.var_plot.addItem(t, ignoreBounds=True)
        # room above the highest point for its label (with the default 2% it ran off the top)
        self.var_plot.getViewBox().setDefaultPadding(0.25)
        self.marker = PositionMarker(state, movable=True, when_visible=self.when_visible,
                                     hoverPen=pg.mkPen("k", width=2))
        self.marker.setToolTip("Query position i: drag it, or click the plot")
        self.var_plot.addItem(self.marker, ignoreBounds=True)
        self.var_frame.setMinimumHeight(160)

        self.pp_frame = PlotFrame("Raw T_pp at the last positions", self._last_table,
                                  analysis="last_positions")
        self.grid = SmallMultiples(self.pp_frame, state, x_label="key position j")

        split = QSplitter(Qt.Vertical)
        split.addWidget(self.var_frame)
        split.addWidget(self.pp_frame)
        split.setSizes([380, 520])
        lay.addWidget(split, 1)
        self.status.setToolTip("Hover over a plot to read its values; click to choose the "
                               "query position")
        lay.addWidget(self.status)

        self.options.changed.connect(self.refresh)
        self.options.widget("log").toggled.connect(self._draw_variance)
        connect_position_clicks(self.var_plot.scene(), self._variance_position,
                                state.set_query_position)
        connect_position_clicks(self.pp_frame.view.scene(),
                                lambda p: self.grid.position(p, self._n_positions()),
                                state.set_query_position)
        self.var_plot.scene().sigMouseMoved.connect(self._hover_variance)
        self.pp_frame.view.scene().sigMouseMoved.connect(self._hover_pp)
        self._draw_variance()  # the axis: linear or log

    def plot_frames(self):
        return [self.var_frame, self.pp_frame]

    def _n_positions(self) -> int:
        return self.layer.n_positions if self.layer is not None else 0

    def _variance_position(self, scene_pos) -> int | None:
        return position_at(self.var_plot.getViewBox(), scene_pos, self._n_positions())

    # ------------------------------------------------------------------ compute

    def request(self):
        opts = self.options.value
        return Request(self.serial, opts.count, tuple(state_heads(opts.heads, self.state)))

    @staticmethod
    def compute(layer, req: Request) -> StatsResult:
        return StatsResult(variance=positional.position_variance(layer),
                           last=positional.raw_pp_last_positions(layer, req.count,
                                                                 list(req.heads)))

    def draw(self, result: StatsResult | None) -> None:
        self._draw_variance()
        self._draw_last()

    # ------------------------------------------------------------------ draw

    @Slot()
    def _draw_variance(self, *_) -> None:
        log = self.options.value.log
        set_log_y(self.var_plot, log, "Var_k P[j, k]")
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
            t.setText(f"j = {e}: {var[e]:.3g} ({var[e] / med:.2g}× median)")
            y = np.log10(max(var[e], 1e-30)) if log else var[e]
            t.setPos(e, y)
        self.var_plot.getAxis("left").setTicks(
            log_ticks(float(var.min()), float(var.max())) if log else None)
        self.var_plot.setXRange(-0.5, L - 0.5, padding=0.01)
        self.var_plot.enableAutoRange(y=True)
        set_title(self.var_plot, titles.variance_title(self.layer.d))

    def _draw_last(self) -> None:
        res = self.result
        if res is None:
            return
        last = res.last
        L = self.layer.n_positions
        colors = position_colors(len(last.positions))
        grid = self.grid
        grid.set_heads(last.heads)
        grid.set_ranges((-0.5, L - 0.5), stable_range(None, *data_range([last.values], 0, L)))
        for k, i in enumerate(last.positions):  # a series per query position, all heads
            name = f"q{k}"
            curve = grid.curves.get(name) or grid.add_series(name, None)
            curve.setPen(pg.mkPen(colors[k], width=1))
            curve.setZValue(2 if k == len(last.positions) - 1 else 1)  # the last on top
            grid.set_series(name, np.arange(i + 1), last.values[:, k, : i + 1])
            grid.show_series(name, True)
        for k in range(len(last.positions), len(grid.curves)):
            grid.show_series(f"q{k}", False)
        self.grid.set_title(titles.last_positions_title(last.positions, colors))
        self.status.setText(f"{titles.variance_note(res.variance)} · hover to read values, "
                            "click to choose the query position")

    # ------------------------------------------------------------------ hover & export

    def _hover_variance(self, pos) -> None:
        res = self.result
        j = self._variance_position(pos)
        if res is not None and j is not None:
            self.status.setText(f"position j = {j}: Var_k P[j, k] = {res.variance[j]:.4g}")

    def _hover_pp(self, pos) -> None:
        res = self.result
        hit = self.grid.position_at(pos, self._n_positions())
        if res is not None and hit is not None and hit[0] in res.last.heads:
            self.status.setText(titles.last_positions_hover(res.last, *hit))

    def _variance_table(self):
        return None if self.result is None else position_variance_table(self.layer)

    def _last_table(self):
        if self.result is None:
            return None
        last = self.result.last
        return last_positions_table(self.layer, len(last.positions), last.heads)
