"""C2 Empirical vs predicted attention (the paper's Fig 3-E): the model's attention at
query position i averaged over the corpus windows longer than i, next to the weight-based
prediction of B3, softmax_{j<=i}((T_pp + T_p)/tau), and the mean B4 positional
pattern of the same texts, per head."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QVBoxLayout

from detokgui.core.base.plot_axes import data_range, stable_range
from detokgui.core.model.conventions import (
    DEFAULT_POSITION_CONVENTION,
    POSITION_CONVENTIONS,
    default_query_position,
)
from detokgui.core.text_side import empirical
from detokgui.core.text_side.empirical import CONVENTION_LABELS, TextSource
from detokgui.core.text_side.tables import empirical_table
from detokgui.core.text_side.titles import empirical_hover, empirical_title
from detokgui.gui.corpus_hint import CorpusHint
from detokgui.gui.head_controls import HeadChooser, state_heads
from detokgui.gui.option_rows import check, combo, custom, option, spin
from detokgui.gui.panels.corpus_grid import CorpusGridPanel
from detokgui.gui.plots import HEAD_COLORS
from detokgui.gui.position import QueryPositionControl
from detokgui.gui.text_source import max_texts_option, prepend_option, text_source

CURVES = ("empirical", "predicted", "pattern")
# the figures' observed (C0) and predicted (C1, dashed); the mean pattern grey, dotted
PENS = {"empirical": (HEAD_COLORS[0], Qt.SolidLine), "predicted": (HEAD_COLORS[1], Qt.DashLine),
        "pattern": ("#7f7f7f", Qt.DotLine)}
LOG_FLOOR = 1e-6


@dataclass(frozen=True)
class Options:
    heads: str = option("all", custom(HeadChooser))
    convention: str = option(DEFAULT_POSITION_CONVENTION, combo(
        ((c, f"{c} convention") for c in POSITION_CONVENTIONS),
        "How the B3 prediction takes σ per position:\n"
        + "\n".join(CONVENTION_LABELS[c] for c in POSITION_CONVENTIONS), label="prediction"))
    max_texts: int = max_texts_option(200)
    prepend: bool = prepend_option()
    window: int = option(0, spin(  # the last w keys before i; 0 = every key
        0, 100_000, "Show only the last w keys before i (0: every key 0..i)", label="window",
        special="all keys"))
    log: bool = option(False, check(  # log10 of the attention
        "log scale", f"log10 of the attention (values below {LOG_FLOOR:g} drawn at it):\n"
                     "compares the broad heads, whose weights are all small"))


@dataclass(frozen=True)
class Request:
    serial: int
    i: int
    heads: tuple[int, ...]
    convention: str
    texts: TextSource


class EmpiricalPanel(CorpusGridPanel):
    frame_name = "Empirical vs predicted attention"
    title = "Empirical vs predicted"
    view_name = "empirical"
    tooltip = ("Mean attention at query position i over corpus texts against the weight-based "
               "prediction (C2, Fig 3-E)")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        self.channel().coalesce = True  # the slider: at most one pass over the corpus waits
        lay = QVBoxLayout(self)
        lay.addWidget(CorpusHint(state, "This view averages the model's attention over "
                                        "corpus texts."))
        self.add_options(lay, "empirical", Options, "heads", "convention",
                         ("max_texts", "prepend"), ("window", "log"))

        prow = QHBoxLayout()
        self.position = QueryPositionControl(
            state, "Query position i", slider=True,
            tip="Query position i (0-based), shared with every panel; texts of at most i\n"
                "tokens are left out. Click a plot to choose the position under the mouse.")
        prow.addWidget(self.position, 1)
        self.default_button = QPushButton("default i")
        self.default_button.setToolTip("The paper's i = 500 (Fig 3-B to 3-E), scaled to the "
                                       "model's positions when it has fewer than 1024")
        self.default_button.clicked.connect(self._default_position)
        prow.addWidget(self.default_button)
        lay.addLayout(prow)

        self.add_grid(lay, "Hover over a plot to read its values; click to choose the query "
                           "position")

    def model_changed(self, layer) -> None:
        if layer is not None:
            i = default_query_position(layer.n_positions)
            self.default_button.setText(f"default i = {i}")

    def _default_position(self) -> None:
        if self.layer is not None:
            self.state.set_query_position(default_query_position(self.layer.n_positions))

    # ------------------------------------------------------------------ compute

    def request(self):
        o = self.options.value
        texts = text_source(self.state, o.max_texts, o.prepend)
        if texts is None:
            return None
        heads = state_heads(o.heads, self.state)
        return Request(self.serial, self.state.query_position, tuple(heads), o.convention,
                       texts)

    @staticmethod
    def compute(layer, req: Request):
        return empirical.iter_empirical_attention(layer, req.texts, req.i, list(req.heads),
                                                  req.convention)

    # ------------------------------------------------------------------ draw

    def add_series(self, grid) -> None:
        for name in CURVES:
            color, style = PENS[name]
            grid.add_series(name, pg.mkPen(color, width=1, style=style))

    def draw(self, res: empirical.EmpiricalAttention | None) -> None:
        if res is None:
            self.draw_nothing("average attention over its texts")
            return
        o = self.options.value
        i, w = res.i, o.window
        a = max(0, i - w + 1) if w else 0
        grid = self.grid
        grid.set_heads(res.heads)
        arrays = [res.empirical, res.predicted, res.pattern]
        if o.log:
            arrays = [np.log10(np.maximum(x, LOG_FLOOR)) for x in arrays]
        y = stable_range(None, *data_range(arrays, a, i + 1), zero_based=not o.log)
        pad = max(0.5, 0.02 * (i - a + 1))
        grid.set_ranges((a - pad, i + pad), y)
        grid.set_marker(i, i)
        J = np.arange(i + 1)
        for name, arr in zip(CURVES, arrays):
            grid.set_series(name, J, arr)
        grid.set_title(empirical_title(self.layer, res, {n: PENS[n][0] for n in CURVES}, o.log))
        self.status.setText(
            f"i = {i} · {res.windows} of {res.texts} windows are longer than i ({res.source})"
            f" · {res.convention} convention · hover to read values, click to choose i")

    def describe(self, h: int, j: int) -> str:
        return empirical_hover(self.result, h, j)

    def table(self):
        return empirical_table(self.result, pattern=True) if self.result is not None else None
