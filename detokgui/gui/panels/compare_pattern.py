"""Compare (2): the positional pattern (B4) of the query token for A's selected head with
B's matched head overlaid; B's pattern at n' = min(n, L_B - 1), drawn so that both
queries sit at n (core.compare.views.pattern_pair)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from detokgui.core.compare import views as cv
from detokgui.core.model.conventions import DEFAULT_POSITION_CONVENTION, INK_COLOUR
from detokgui.gui.option_rows import STRETCH, OptionRow, check, custom, option
from detokgui.gui.panels.compare_base import ComparePanel
from detokgui.gui.plots import PlotFrame, add_plot, set_log_y, set_title
from detokgui.gui.position import (
    ConventionBox,
    QueryPositionControl,
    connect_position_clicks,
    position_at,
)

PENS = {"A": pg.mkPen("#1f77b4", width=2),
        "B": pg.mkPen("#ff7f0e", width=2, style=Qt.DashLine)}


@dataclass(frozen=True)
class Options:
    log: bool = option(False, check("Log scale", "Logarithmic weight axis"))
    convention: str = option(DEFAULT_POSITION_CONVENTION, custom(ConventionBox))


@dataclass(frozen=True)
class Request:
    serial: int
    compare_serial: int
    query: int
    n: int
    head_a: int
    head_b: int
    convention: str


class ComparePatternPanel(ComparePanel):
    title = "Positional pattern A vs B"
    view_name = "compare-pattern"
    tooltip = ("The query token's positional pattern for A's head with its match in B "
               "overlaid (B4)")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        lay = self.body_layout
        self.options = OptionRow("comparepattern", Options, self)
        lay.addLayout(self.options.row(self.pair_text, QueryPositionControl(state, "position n"),
                                       STRETCH, ("convention", "log")))
        self.frame = PlotFrame("Positional pattern A vs B", self._table,
                               analysis="pattern_pair")
        self.plot = add_plot(self.frame, grid="xy", bottom="key position j",
                             left="attention weight")
        self.legend = self.plot.addLegend(offset=(-10, 10), brush=(255, 255, 255, 210),
                                          pen="#bbb", labelTextColor=INK_COLOUR)
        self.frame.setToolTip("Click a position to make it the query position n")
        lay.addWidget(self.frame, 1)
        lay.addWidget(self.status)
        self.options.changed.connect(self.refresh)
        self.options.changed.connect(self.redraw)
        connect_position_clicks(self.frame.view.scene(), self._position,
                                state.set_query_position)
        self.frame.view.scene().sigMouseMoved.connect(self._hover)

    def request(self):
        s = self.state
        if not self.ready() or s.query_token < 0:
            return None
        return Request(self.serial, s.compare_serial, s.query_token, s.query_position,
                       s.head, s.head_b, self.options.value.convention)

    @staticmethod
    def compute(pair, req: Request) -> cv.PatternPair:
        return cv.pattern_pair(pair, req.query, req.n, req.head_a, req.head_b, req.convention)

    def curves(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """What is drawn: name -> (x = A's key positions, weights)."""
        return {} if self.result is None else self.result.curves()

    def draw(self, res: cv.PatternPair | None) -> None:
        self.pair_text.setText(self.pair_label())
        plot = self.plot
        plot.clear()
        self.legend.clear()
        set_log_y(plot, self.options.value.log, "attention weight")
        if res is None:
            set_title(plot, "")
            self.status.setText(self.waiting_text() if self.state.query_token >= 0
                                else "Select a query token in the Tokens panel.")
            return
        s = self.state
        for (name, (x, y)), side in zip(res.curves().items(), (res.a, res.b)):
            pen = PENS[name]
            plot.plot(x, y, pen=pen, symbol="o" if len(x) < 60 else None, symbolSize=5,
                      symbolPen=None, symbolBrush=pen.color(),
                      name=f"{name} head {side.heads[0]}", antialias=True)
        plot.setXRange(-0.5, res.a.n + 0.5, padding=0.02)
        plot.enableAutoRange(axis="y")
        set_title(plot, f"Positional pattern of {s.token_text(res.a.token)} at n = {res.a.n}: "
                      f"A head {res.a.heads[0]} vs B head {s.head_b}")
        self.status.setText(res.summary(s.token_text(res.a.token)))

    def _position(self, scene_pos) -> int | None:
        if self.result is None or self.layer is None:
            return None
        return position_at(self.plot.getViewBox(), scene_pos, self.layer.n_positions)

    def _hover(self, pos) -> None:
        j = self._position(pos)  # None without a result
        if j is not None and j <= self.result.a.n:
            self.status.setText(self.result.describe(j))

    def _table(self):
        return None if self.result is None else self.result.table()
