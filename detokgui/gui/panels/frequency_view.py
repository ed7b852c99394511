"""A6 Frequency (the paper's Figs 5, 6 left and 11): every token as a point — token
self-assertion T_e(v) = b^QK_h e_v^T / s_v of the selected head, or the token-embedding
variance Var(e_v), against the token's corpus count (log axis); or the embedding norm |e_v|
against T_e(v). Spearman's rho in the title; hover names the token, a click selects it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QLabel, QVBoxLayout

from detokgui.core.base.numbers import num
from detokgui.core.model.conventions import SigmaChoice
from detokgui.core.token_side import frequency as F
from detokgui.core.token_side.tables import frequency_table
from detokgui.gui.corpus_hint import CorpusHint
from detokgui.gui.head_controls import HeadSpin
from detokgui.gui.option_rows import OptionRow, combo, option
from detokgui.gui.panels.base import Panel
from detokgui.gui.plots import PlotFrame, add_plot, set_title
from detokgui.gui.point_cloud import PointCloud
from detokgui.gui.sigma_controls import SigmaControls

KINDS = (("t_e", "T_e(v) against corpus count"),
         ("variance", "token-embedding variance against corpus count"),
         ("norm", "token-embedding norm against T_e(v)"))


@dataclass(frozen=True)
class Options:
    kind: str = option("t_e", combo(KINDS))
    zero_counts: str = option("exclude", combo(
        ((key, F.ZERO_COUNT_LABELS[key].replace(
            "tokens absent from the corpus (count 0)", "count-0 tokens"))
         for key in F.ZERO_COUNTS),
        "Tokens the corpus never contains have no log count:\n"
        + "\n".join(F.ZERO_COUNT_LABELS[k] for k in F.ZERO_COUNTS)))


@dataclass(frozen=True)
class Request:
    serial: int
    corpus: tuple[str, ...]
    sigma: SigmaChoice
    zero_counts: str


class FrequencyPanel(Panel):
    title = "Frequency"
    view_name = "frequency"
    empty_names_input = True
    tooltip = ("Token self-assertion T_e and embedding statistics against corpus frequency "
               "(A6, Figs 5, 6, 11)")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        lay = QVBoxLayout(self)
        lay.addWidget(CorpusHint(state, "The frequency plots count the tokens of a corpus."))
        self.options = OptionRow("frequency", Options, self)
        lay.addLayout(self.options.row(HeadSpin(state),
                                       ("kind", "zero_counts", SigmaControls(state))))
        self.options.changed.connect(self.refresh)
        self.options.changed.connect(self.redraw)

        self.frame = PlotFrame("Frequency scatter", self._table, analysis="frequency")
        self.plot = add_plot(self.frame, controls=False, grid="xy", alpha=0.2)
        self.points = PointCloud(self.plot)
        self.points.hovered.connect(self._hover)
        self.points.clicked.connect(self._click)
        self.mark_label = pg.TextItem(color="#d62728", anchor=(-0.15, 1.1),
                                      fill=pg.mkBrush(255, 255, 255, 210))
        self.mark_label.setZValue(11)
        self.plot.addItem(self.mark_label)
        lay.addWidget(self.frame, 1)
        self.hover = QLabel(" ")
        lay.addWidget(self.hover)
        lay.addWidget(self.status)
        self.ids = np.zeros(0, dtype=np.int64)  # token id of each drawn point
        state.headChanged.connect(self.redraw)  # every head is computed
        state.queryTokenChanged.connect(self.when_visible(self._mark))

    # ------------------------------------------------------------------ compute

    def request(self):
        if not self.state.corpus:
            return None
        o = self.options.value
        return Request(self.serial, self.state.corpus, self.state.sigma, o.zero_counts)

    @staticmethod
    def compute(layer, req: Request):
        return F.iter_corpus_frequency(layer, req.corpus, req.sigma, req.zero_counts)

    # ------------------------------------------------------------------ draw

    def draw(self, fs: F.FrequencyStats | None) -> None:
        if fs is None:
            self.ids = np.zeros(0, dtype=np.int64)
            self.points.set_points([], [])
            self.points.mark_point(-1)
            set_title(self.plot, self.empty_message(
                "Choose a corpus (Corpus menu) to count its tokens.",
                "Counting the corpus's tokens… (progress and Cancel in the status bar)"))
            self.clear_empty_status()
            return
        kind, head = self.options.value.kind, min(self.state.head, len(fs.heads) - 1)
        self.ids, x, y = fs.points(kind, head)
        xl, yl, title = fs.scatter_text(kind, head)
        self.points.set_points(x, y)
        log = kind != "norm"
        self.options.widget("zero_counts").setEnabled(log)  # the norm against T_e uses every token
        self.plot.getAxis("bottom").setLogMode(log)
        self.plot.setLabel("bottom", xl)
        self.plot.setLabel("left", yl)
        set_title(self.plot, title)
        self.plot.enableAutoRange()
        self._mark()
        absent = int((fs.counts == 0).sum())
        self.status.setText(
            f"{num(int(self.ids.size))} tokens drawn · {num(absent)} tokens never occur in the "
            f"corpus{' (not drawn on the count axis)' if log else ''} · "
            "hover to read a token, click to select it")

    def _mark(self) -> None:
        """Ring the query token's point and name it."""
        hits = np.flatnonzero(self.ids == self.state.query_token)
        i = int(hits[0]) if hits.size else -1
        self.points.mark_point(i)
        self.mark_label.setVisible(i >= 0)
        if i >= 0:
            self.mark_label.setText(f" {self.state.token_text(self.state.query_token)}")
            self.mark_label.setPos(float(self.points.x[i]), float(self.points.y[i]))

    def _hover(self, i: int) -> None:
        fs = self.result
        if fs is None or i < 0 or i >= self.ids.size:
            return
        v = int(self.ids[i])
        head = min(self.state.head, len(fs.heads) - 1)
        self.hover.setText(fs.describe(v, head, self.state.token_text(v)))

    def _click(self, i: int) -> None:
        if 0 <= i < self.ids.size:
            self.state.set_query_token(int(self.ids[i]))

    def _table(self):
        return None if self.result is None else frequency_table(self.layer, self.result)
