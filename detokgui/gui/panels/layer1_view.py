"""The Layer 1 page (docs/math/composition.md): how layer-1 heads read what layer-0 heads
write. Left, the Q-, K- and V-composition of every (layer-0 head, layer-1 head) pair as
three heatmaps on one colour scale, against the random-matrix baseline; a click selects
the layer-0 head everywhere. Right, what the first two blocks do on repeated random
tokens: the previous-token score of every layer-0 head and the induction score of every
layer-1 head, and per layer-1 head its K-composition with the previous-token head beside
its measured induction score. Block 1 is read (or downloaded) when the page is first
shown, with progress and Cancel in the status bar; a single-layer model says so."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QVBoxLayout

from detokgui.core.base.numbers import num
from detokgui.core.composition.behaviour import DEFAULT_SEQUENCES
from detokgui.core.composition.first_two import Layer1Result, Unavailable, first_two_job
from detokgui.core.composition.scores import KINDS, Composition
from detokgui.core.composition.tables import (
    behaviour_table,
    circuit_rows,
    composition_table,
)
from detokgui.core.composition.titles import (
    KIND_TITLES,
    behaviour_title,
    composition_hover,
    composition_title,
)
from detokgui.gui.head_table import HeadTable
from detokgui.gui.mosaic import HeatmapMosaic
from detokgui.gui.option_rows import OptionRow, check, option, spin
from detokgui.gui.panels.base import Panel
from detokgui.gui.plots import HEAD_COLORS, PlotFrame, add_plot
from detokgui.gui.records import Column

PREV_COLOR, INDUCTION_COLOR = HEAD_COLORS[0], HEAD_COLORS[1]
BAR_WIDTH = 0.38


@dataclass(frozen=True)
class Options:
    sequences: int = option(DEFAULT_SEQUENCES, spin(
        1, 1000, "How many repeated random sequences the first two blocks are run on\n"
                 "for the previous-token and induction scores", label="sequences",
        tracking=False))
    bos: bool = option(True, check(
        "BOS first", "Start every repeated sequence with the model's BOS token"))


@dataclass(frozen=True)
class Request:
    serial: int
    sequences: int
    bos: bool


CIRCUIT_COLUMNS = [
    Column("layer-1 head", lambda r: r.layer1_head, "d", "Layer-1 head (0-based)"),
    Column("induction", lambda r: r.induction, num,
           "Measured induction score: attention from the second copy of a repeated random\n"
           "sequence to the token after the earlier copy of its own token", numeric=True),
    Column("K with prev-token head", lambda r: r.k_composition, num,
           "K-composition of (the layer-0 head with the highest previous-token score, this "
           "head)", numeric=True),
    Column("K partner", lambda r: r.k_partner, "d",
           "The layer-0 head this head K-composes with most; click a row to select it"),
    Column("partner's K", lambda r: r.k_partner_score, num,
           "That K-composition score", numeric=True,
           background=lambda r: "#f4c7c3" if r.k_partner_score > r.baseline_hi else None),
]


class Layer1Panel(Panel):
    title = "Layer 1"
    view_name = "layer1"
    tooltip = ("Q-, K- and V-composition of layer-0 with layer-1 heads from the weights, "
               "beside the measured previous-token and induction scores")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        self.layer1_head = 0  # the layer-1 head of the outlined cell
        lay = QVBoxLayout(self)
        self.options = OptionRow("layer1", Options, self)
        lay.addLayout(self.options.row(("sequences", "bos")))
        self.options.changed.connect(self.refresh)

        split = QSplitter(Qt.Horizontal)
        self.frame = PlotFrame("Composition", self._composition_table, analysis="composition")
        self.mosaic = HeatmapMosaic(self.frame.view.ci, pg.colormap.get("viridis"),
                                    label="composition score (from the baseline mean)")
        self.mosaic.cellClicked.connect(self._cell_clicked)
        self.mosaic.cellHovered.connect(self._cell_hovered)
        split.addWidget(self.frame)

        right = QSplitter(Qt.Vertical)
        self.bars_frame = PlotFrame("Previous-token and induction scores",
                                    self._behaviour_table, analysis="behaviour")
        self.bars = add_plot(self.bars_frame, bottom="head", left="score", grid="y",
                             controls=False, mouse=False)
        self.prev_bars, self.ind_bars = (
            pg.BarGraphItem(x=[], height=[], width=BAR_WIDTH, brush=color, pen=None)
            for color in (PREV_COLOR, INDUCTION_COLOR))
        for bars in (self.prev_bars, self.ind_bars):
            self.bars.addItem(bars)
        right.addWidget(self.bars_frame)
        self.circuit_view = HeadTable(CIRCUIT_COLUMNS, "Per layer-1 head, the weights "
                                      "(K-composition) beside the behaviour (induction "
                                      "score); click a row to select its K partner in layer 0")
        self.circuit = self.circuit_view.records()
        self.circuit_view.recordActivated.connect(self._row_clicked)
        right.addWidget(self.circuit_view)
        right.setSizes([3000, 2000])  # in proportion
        split.addWidget(right)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        lay.addWidget(split, 1)
        self.status.setToolTip("Hover over a cell to read its score against the baseline; "
                               "click it to select its layer-0 head")
        lay.addWidget(self.status)
        state.headChanged.connect(self.when_visible(self._mark))

    def plot_frames(self):
        return [self.frame, self.bars_frame]

    # ------------------------------------------------------------------ compute

    def request(self):
        o = self.options.value
        return Request(self.serial, o.sequences, o.bos)

    @staticmethod
    def compute(layer, req: Request):
        return first_two_job(layer, req.sequences, req.bos)

    # ------------------------------------------------------------------ draw

    def _composition(self) -> Composition | None:
        res = self.result
        return res.composition if isinstance(res, Layer1Result) else None

    def _composition_table(self):
        comp = self._composition()
        return None if comp is None else composition_table(comp)

    def _behaviour_table(self):
        res = self.result
        return behaviour_table(res.behaviour) if isinstance(res, Layer1Result) else None

    def draw(self, res) -> None:
        if not isinstance(res, Layer1Result):
            self.mosaic.set_maps(np.zeros((0, 1, 1)), [], (0.0, 1.0))
            for bars in (self.prev_bars, self.ind_bars):
                bars.setOpts(x=[], height=[])
            self.circuit.set_records(())
            text = res.message if isinstance(res, Unavailable) else self.empty_message(
                " ", "Reading block 1 and computing the composition scores… (progress and "
                     "Cancel in the status bar)")
            self.frame.set_title(f"<b>Layer 1</b> — {text}" if text.strip() else " ")
            self.bars_frame.set_title(" ")
            if isinstance(res, Unavailable):
                self.status.setText(res.message)
            return
        comp, beh = res.composition, res.behaviour
        # the colours start at the baseline's mean: a pair the colour scale shows at all
        # composes more than random matrices do on average
        top = max(float(np.nanmax(comp.scores)), comp.baseline_hi)
        self.mosaic.set_maps(comp.scores, [KIND_TITLES[k] for k in KINDS],
                             (comp.baseline_mean, top))
        self.mosaic.select(KINDS.index("K"), INDUCTION_COLOR)
        self.frame.set_title(composition_title(comp))
        H0, H1 = beh.previous_token.shape[1], beh.induction.shape[1]
        self.prev_bars.setOpts(x=np.arange(H0) - BAR_WIDTH / 2, height=beh.previous_token[0])
        self.ind_bars.setOpts(x=np.arange(H1) + BAR_WIDTH / 2, height=beh.induction[1])
        self.bars.setXRange(-0.6, max(H0, H1) - 0.4, padding=0)
        self.bars.setYRange(0.0, 1.0, padding=0.02)
        prev = beh.previous_token_head()
        self.bars_frame.set_title(behaviour_title(beh, PREV_COLOR, INDUCTION_COLOR))
        self.circuit.set_records(circuit_rows(comp, beh))
        if self.layer1_head >= H1:
            self.layer1_head = 0
        self._mark()
        self.status.setText(
            f"previous-token head {prev} ({num(float(beh.previous_token[0, prev]))}); "
            f"strongest induction head {beh.induction_head()} "
            f"({num(float(beh.induction[1, beh.induction_head()]))}) · hover a cell to read "
            "it, click to select its layer-0 head")

    def _mark(self) -> None:
        comp = self._composition()
        if comp is not None and self.state.head < comp.scores.shape[1]:
            self.mosaic.mark(self.state.head, self.layer1_head)

    def describe(self, k: int, h0: int, h1: int) -> str:
        return composition_hover(self._composition(), k, h0, h1)

    # ------------------------------------------------------------------ selection

    def _cell_clicked(self, k: int, h0: int, h1: int) -> None:
        if self._composition() is None:
            return
        self.layer1_head = h1
        self.state.set_head(h0)
        self._mark()
        self.status.setText(self.describe(k, h0, h1))

    def _cell_hovered(self, k: int, h0: int, h1: int) -> None:
        if k >= 0 and self._composition() is not None:
            self.status.setText(self.describe(k, h0, h1))

    def _row_clicked(self, row) -> None:
        self.layer1_head = row.layer1_head
        self.state.set_head(row.k_partner)
        self._mark()
