"""B7 Key-position components ("layer 0 by hand"): for every query token u and head h, the
least-squares slope over key positions j of the raw e_u W^QK_h p_j^T — does this token,
as a query, prefer recent (slope > 0) or early (slope < 0) keys? A histogram over the
whole vocabulary, the tokens with the most positive and most negative slopes, and the
selected query token's curve over j with its fitted line."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSplitter, QVBoxLayout, QWidget

from detokgui.core.position_side import positional, titles
from detokgui.core.position_side.tables import slope_histogram_table, token_position_curve_table
from detokgui.gui.adaptive_splitter import AdaptiveSplitter
from detokgui.gui.controls import bare_column, wrapping_label
from detokgui.gui.option_rows import STRETCH, OptionRow, check, option, spin
from detokgui.gui.panels.base import Panel
from detokgui.gui.plots import PlotFrame, add_plot, head_color, set_log_y, set_title
from detokgui.gui.position import PositionMarker, connect_position_clicks, position_at
from detokgui.gui.records import Column, RecordsModel, TokenTableView

SIDE_BY_SIDE_MIN_WIDTH = 900  # pixels the panel needs for the plots beside the tables
SIDES = (("top", "Most positive slopes (prefer recent keys)"),
         ("bottom", "Most negative slopes (prefer early keys)"))


@dataclass(frozen=True)
class Options:
    k: int = option(20, spin(1, 500, "How many tokens each extremes table lists",
                             label="extremes"))
    bins: int = option(60, spin(5, 500, "Number of histogram bins", label="bins"))
    log: bool = option(False, check("Log counts", "Logarithmic count axis: shows the sparse "
                                                  "tails where the extreme tokens lie"))


@dataclass(frozen=True)
class SlopesRequest:
    serial: int
    k: int
    bins: int


@dataclass(frozen=True)
class CurveRequest:
    serial: int
    token: int


class KeyPositionPanel(Panel):
    title = "Key-position slopes"
    view_name = "slopes"
    tooltip = ("Per head, the slope over key positions j of e_u W^QK p_j^T for every query "
               "token u (B7): histogram and extreme tokens")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        lay = QVBoxLayout(self)

        self.head_label = QLabel()
        self.head_label.setTextFormat(Qt.RichText)
        self.options = OptionRow("slopes", Options, self)
        lay.addLayout(self.options.row(self.head_label, STRETCH, ("k", "bins", "log")))

        # the plots beside the extremes tables; above them, side by side, in a narrow panel
        split = AdaptiveSplitter(SIDE_BY_SIDE_MIN_WIDTH)
        plots = QSplitter(Qt.Vertical)
        self.hist_frame = PlotFrame("Token-position slopes histogram", self._hist_table,
                                    analysis="slope_histogram")
        self.hist_plot = add_plot(self.hist_frame, grid="xy", left="tokens",
                                  bottom="slope of e_u W^QK p_j^T over j (per position)")
        self.hist_frame.setToolTip("The red line marks the selected query token")
        # the items are made once, hidden, and given new data at each draw
        self.hist_curve = self.hist_plot.plot(stepMode="center", antialias=True)
        self.zero_line = pg.InfiniteLine(0, angle=90, pen=pg.mkPen("#888", style=Qt.DashLine))
        # the selected token's slope is named in the title: a label box on the line would
        # hide the histogram's peak
        self.marker = pg.InfiniteLine(angle=90, pen=pg.mkPen("#d62728", width=2))
        for line in (self.zero_line, self.marker):
            line.setVisible(False)
            self.hist_plot.addItem(line)
        plots.addWidget(self.hist_frame)
        self.curve_frame = PlotFrame("Query token vs key position", self._curve_table,
                                     analysis="position_curve")
        self.curve_plot = add_plot(self.curve_frame, grid="xy", bottom="key position j",
                                   left="raw e_u W^QK p_j^T")
        self.curve_frame.setToolTip("The selected query token's raw term over key positions "
                                    "and its least-squares line.\nClick a position to make it "
                                    "the query position.")
        self.curves = (  # raw, fit
            self.curve_plot.plot(antialias=True),
            self.curve_plot.plot(pen=pg.mkPen("k", width=1, style=Qt.DashLine), antialias=True))
        self.curves[1].setZValue(5)
        self.position_line = PositionMarker(state, pen=pg.mkPen("#888", width=1),
                                            when_visible=self.when_visible)
        self.position_line.setVisible(False)
        self.curve_plot.addItem(self.position_line, ignoreBounds=True)
        plots.addWidget(self.curve_frame)
        plots.setSizes([420, 320])
        split.addWidget(plots)

        tables = QWidget()
        tl = QHBoxLayout(tables)
        tl.setContentsMargins(0, 0, 0, 0)
        self.tables: dict[str, TokenTableView] = {}
        for side, text in SIDES:
            box, bl = bare_column()
            label = wrapping_label(f"<b>{text}</b>")
            bl.addWidget(label)
            t = TokenTableView(RecordsModel([
                Column("token", lambda r: r[1]),
                Column("id", lambda r: r[0], "d"),
                Column("slope", lambda r: r[2], ".4g",
                       tooltip=lambda r: f"{r[1]!r} (id {r[0]}): slope {r[2]:.6g} per position, "
                       f"head {self.state.head}. Click to select it as the query token."),
            ], token=lambda r: r[0]), stretch=0,
                tip="Click a token to select it as the query token")
            t.tokenActivated.connect(lambda tid, _k: self.state.set_query_token(tid))
            self.tables[side] = t
            bl.addWidget(t, 1)
            tl.addWidget(box)
        split.addWidget(tables)
        split.setSizes([640, 600])
        split.turn_crosswise(plots, beside=([640, 600], [420, 320]), above=([400, 400], [500, 500]))
        lay.addWidget(split, 1)
        lay.addWidget(self.status)

        self.add_channel("curve", self._curve_request,
                         lambda layer, req: positional.token_position_curve(layer, req.token),
                         self._draw_curve, label="Query token vs key position")
        self.options.changed.connect(self.refresh)
        self.options.widget("log").toggled.connect(self._draw_hist)
        connect_position_clicks(self.curve_frame.view.scene(), self._curve_position,
                                state.set_query_position)
        state.headChanged.connect(self.redraw)
        state.queryTokenChanged.connect(self.when_visible(self._show_query))

    def plot_frames(self):
        return [self.hist_frame, self.curve_frame]

    # ------------------------------------------------------------------ compute

    def request(self):
        o = self.options.value
        return SlopesRequest(self.serial, o.k, o.bins)

    @staticmethod
    def compute(layer, req: SlopesRequest) -> positional.SlopeOverview:
        return positional.slope_overview(layer, req.k, req.bins)

    def _curve_request(self):
        token = self.state.query_token
        if token < 0:
            return None
        return CurveRequest(self.serial, token)

    @property
    def curve(self) -> positional.TokenPositionCurve | None:
        return self.channel("curve").result

    # ------------------------------------------------------------------ draw

    def _head_text(self) -> None:
        self.head_label.setText(f"<b>Head {self.state.head}</b> (toolbar) · query token "
                                f"<b>{self.state.token_text(self.state.query_token)}</b>")

    def draw(self, data: positional.SlopeOverview | None) -> None:
        self._head_text()
        self._draw_hist()
        self._fill_tables()
        if self.channel("curve").pending is None:  # else drawn when it arrives
            self._draw_curve(self.curve)
        if data is not None:
            V = data.slopes.slopes.shape[0]
            self.status.setText(f"slopes of {V:,} query tokens x {len(data.slopes.heads)} "
                                "heads, least squares over all key positions j = 0..L-1")

    @Slot()
    def _show_query(self, *_) -> None:
        self._head_text()
        self._draw_marker()
        self._mark_rows()

    def head_slopes(self) -> np.ndarray | None:
        if self.result is None or self.state.head not in self.result.slopes.heads:
            return None
        return self.result.slopes.column(self.state.head)

    def histogram(self):
        """(counts, edges) of the selected head, as drawn."""
        return None if self.result is None else self.result.hists.get(self.state.head)

    @Slot()
    def _draw_hist(self, *_) -> None:
        plot = self.hist_plot
        hist = self.histogram()
        log = self.options.value.log
        set_log_y(plot, log, "tokens")
        self.zero_line.setVisible(hist is not None)
        if hist is None:
            self.hist_curve.setData([], [])
            self.marker.setVisible(False)
            set_title(plot, "")
            return
        counts, edges = hist
        h = self.state.head
        y = counts.astype(np.float64)
        if log:  # a step plot needs finite values: empty bins sit at the axis floor
            y = np.where(y > 0, y, 0.5)
        fill = pg.mkColor(head_color(h))
        fill.setAlpha(90)
        self.hist_curve.setData(edges, y, stepMode="center", fillLevel=np.log10(0.5) if log else 0,
                                pen=pg.mkPen(head_color(h), width=1.5), brush=fill, antialias=True)
        self._draw_marker()

    def _draw_marker(self) -> None:
        slopes = self.head_slopes()
        token = self.state.query_token
        hist = self.histogram()
        if hist is None:  # no histogram: no marker, no title
            return
        shown = slopes is not None and 0 <= token < len(slopes)
        slope = float(slopes[token]) if shown else None
        if shown:
            self.marker.setValue(slope)
        self.marker.setVisible(shown)
        set_title(self.hist_plot, titles.slopes_title(
            self.state.head, int(hist[0].sum()), self.state.token_text(token), slope))

    def _fill_tables(self) -> None:
        data, h = self.result, self.state.head
        for side, t in self.tables.items():
            shown = data is not None and h in data.extremes.heads
            t.records().set_records(data.extreme_rows(h, side) if shown else ())
        self._mark_rows()

    def _mark_rows(self) -> None:
        for t in self.tables.values():
            t.select_token(self.state.query_token)

    def _draw_curve(self, curve: positional.TokenPositionCurve | None) -> None:
        h = self.state.head
        shown = curve is not None and h < len(curve.raw)
        self.position_line.setVisible(shown)
        if not shown:
            for item in self.curves:
                item.setData([], [])
            set_title(self.curve_plot, "")
            self._draw_marker()
            return
        j = np.arange(curve.raw.shape[1])
        # hairlines: a 1024-point antialiased curve wider than 1 px takes ~20x longer to stroke
        self.curves[0].setData(j, curve.raw[h], pen=pg.mkPen(head_color(h), width=1))
        self.curves[1].setData(j, curve.fit[h])
        slope = (curve.fit[h][-1] - curve.fit[h][0]) / max(1, len(j) - 1)
        set_title(self.curve_plot,
                  titles.curve_title(self.state.token_text(curve.token), h, slope))
        self._draw_marker()
        self._mark_rows()

    def _curve_position(self, scene_pos) -> int | None:
        if self.curve is None or self.layer is None:
            return None
        return position_at(self.curve_plot.getViewBox(), scene_pos, self.layer.n_positions)

    def extreme_ids(self, side: str) -> list[int]:
        """The token ids a person sees in one extremes table, top to bottom."""
        return self.tables[side].token_ids()

    # ------------------------------------------------------------------ export

    def _hist_table(self):
        if self.result is None or self.histogram() is None:
            return None
        return slope_histogram_table(self.result.slopes, self.state.head,
                                     self.shown_request.bins)

    def _curve_table(self):
        if self.curve is None or self.layer is None:
            return None
        return token_position_curve_table(self.layer, self.curve.token, [self.state.head])
