"""C5 Contextual neurons ("contextual circuit"): the contextual heads read as a bag of the
past tokens, weighted by position only; each token's extended embedding ext(x) through
them; every layer-0 MLP neuron's token contributions c_m(x) = ext(x) . W2[:, m], the neurons
ranked by the size of that contextual component, and for one neuron its top tokens and
the bag-of-tokens prediction of its pre-activation against the forward pass on corpus
texts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QModelIndex, Qt, Slot
from PySide6.QtWidgets import QSplitter, QVBoxLayout
from superqt.utils import signals_blocked

from detokgui.core.base.numbers import num
from detokgui.core.text_side import circuits
from detokgui.core.text_side.contextual_neurons import LISTED, TOP, Ranking, iter_contextual_ranking
from detokgui.core.text_side.empirical import TextSource
from detokgui.core.text_side.tables import validation_table
from detokgui.gui.controls import bare_column, wrapping_label
from detokgui.gui.corpus_hint import CorpusHint
from detokgui.gui.head_controls import HeadSet, parse_heads
from detokgui.gui.option_rows import OptionRow, custom, option, spin
from detokgui.gui.panels.base import Panel, StatusLine
from detokgui.gui.plots import PlotFrame, add_plot, set_title
from detokgui.gui.records import Column, RecordsModel, TokenTableView, select_row_token
from detokgui.gui.text_source import max_texts_option, prepend_option, text_source

MAX_POINTS = 20000  # of the scatter
RANKING_COLUMNS = [
    Column("rank", lambda r: r[0], "d", "Rank by size"),
    Column("neuron", lambda r: r[1], "d", "Layer-0 MLP neuron m"),
    Column("size", lambda r: r[2], num,
           "std over the vocabulary of c_m(x): the contextual component", numeric=True),
    Column("mean", lambda r: r[3], num, "mean over the vocabulary of c_m(x)", numeric=True),
    Column("top tokens", lambda r: r[4], "",
           f"The {LISTED} tokens with the largest c_m(x) (for the top {TOP} neurons)",
           tooltip=lambda r: r[4]),
    Column("bottom tokens", lambda r: r[5], "",
           f"The {LISTED} tokens with the smallest c_m(x)", tooltip=lambda r: r[5]),
]


@dataclass(frozen=True)
class Options:
    heads: str = option("b4", custom(HeadSet))
    k: int = option(15, spin(1, 200, "How many tokens with the largest and smallest "
                                     "contribution", label="tokens"))
    max_texts: int = max_texts_option(20, "validation texts")
    prepend: bool = prepend_option()


@dataclass(frozen=True)
class Request:
    serial: int
    heads: tuple[int, ...] | None  # None: B4's contextual heads
    k: int


@dataclass(frozen=True)
class NeuronRequest:
    serial: int
    heads: tuple[int, ...]
    neuron: int
    k: int


@dataclass(frozen=True)
class ValidationRequest:
    serial: int
    heads: tuple[int, ...]
    neuron: int
    texts: TextSource


def neuron_job(layer, req: NeuronRequest):
    c = circuits.contextual_circuit(layer, list(req.heads))
    return circuits.neuron_tokens(layer, c, req.neuron, req.k)


def validation_job(layer, req: ValidationRequest):
    c = circuits.contextual_circuit(layer, list(req.heads))
    return (yield from circuits.iter_neuron_validation(layer, c, [req.neuron], req.texts,
                                                       MAX_POINTS))


class ContextualPanel(Panel):
    title = "Contextual neurons"
    view_name = "contextual"
    tooltip = ("Layer-0 MLP neurons that read the contextual heads as a bag of tokens, and "
               "how well that predicts them on text (C5)")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        self.neuron = -1  # the neuron shown on the right
        lay = QVBoxLayout(self)
        self.options = OptionRow("contextual", Options, self)
        self.heads_box = self.options.widget("heads")
        lay.addLayout(self.options.row("heads", "k", ("max_texts", "prepend")))
        self.options.changed.connect(self.refresh)

        split = QSplitter(Qt.Horizontal)
        left, ll = bare_column()
        self.ranked = RecordsModel(RANKING_COLUMNS)
        self.table = TokenTableView(self.ranked, sortable=True,
                                    tip="Neurons by the size of their contextual component; "
                                        "click one to see its tokens and its validation")
        self.table.sortByColumn(0, Qt.AscendingOrder)
        self.table.clicked.connect(self._neuron_clicked)
        ll.addWidget(self.table, 1)
        self.status.setWordWrap(True)
        ll.addWidget(self.status)
        split.addWidget(left)

        right = QSplitter(Qt.Vertical)
        top, tl = bare_column()
        self.neuron_label = wrapping_label()
        tl.addWidget(self.neuron_label)
        self.tokens = TokenTableView(RecordsModel([
            Column("rank", lambda r: r[0], "d"),
            Column("raises", lambda r: self.state.token_text(r[1]), token=lambda r: r[1],
                   tip="Tokens with the largest contribution c_m(x)"),
            Column("+ c_m(x)", lambda r: r[2], num, numeric=True),
            Column("lowers", lambda r: self.state.token_text(r[3]), token=lambda r: r[3],
                   tip="Tokens with the smallest contribution c_m(x)"),
            Column("− c_m(x)", lambda r: r[4], num, numeric=True)]), stretch=1)
        self.tokens.tokenActivated.connect(select_row_token(state, False))
        tl.addWidget(self.tokens, 1)
        right.addWidget(top)
        bottom, bl = bare_column()
        bl.addWidget(CorpusHint(state, "The validation scatter compares the prediction with "
                                       "the model on corpus texts."))
        self.scatter_frame = PlotFrame("Contextual neuron validation", self._scatter_table,
                                       analysis="validation")
        self.plot = add_plot(self.scatter_frame, grid="xy",
                             bottom="predicted pre-activation (bag of tokens)",
                             left="actual pre-activation (forward pass)")
        self.points = pg.ScatterPlotItem(size=3, pen=None, brush=pg.mkBrush(31, 119, 180, 90),
                                         antialias=True)
        self.diagonal = pg.PlotCurveItem(pen=pg.mkPen("#888", width=1, style=Qt.DashLine),
                                         antialias=True)
        self.plot.addItem(self.diagonal)
        self.plot.addItem(self.points)
        bl.addWidget(self.scatter_frame, 1)
        self.validation_status = StatusLine()
        self.validation_status.setWordWrap(True)
        bl.addWidget(self.validation_status)
        right.addWidget(bottom)
        right.setSizes([300, 500])
        split.addWidget(right)
        split.setSizes([640, 620])
        lay.addWidget(split, 1)

        self.add_channel("tokens", self._neuron_request, neuron_job, self._draw_tokens,
                         label="Neuron tokens")
        self.add_channel("validation", self._validation_request, validation_job,
                         self._draw_validation, status=self.validation_status,
                         label="Neuron validation")

    def plot_frames(self):
        return [self.scatter_frame]

    def model_changed(self, layer) -> None:
        self.neuron = -1
        self.ranked.set_records(())
        if layer is not None:
            self.heads_box.set_count(layer.n_heads)

    # ------------------------------------------------------------------ requests

    def request(self):
        spec = self.options.value.heads
        heads = None if spec == "b4" else tuple(parse_heads(spec.partition(":")[2],
                                                            self.layer.n_heads))
        if heads == ():
            return None
        return Request(self.serial, heads, self.options.value.k)

    @staticmethod
    def compute(layer, req: Request):
        return iter_contextual_ranking(layer, req.heads, req.k)

    def _circuit_heads(self) -> tuple[int, ...] | None:
        """The heads of the shown ranking, when it is the current one."""
        ch = self.channel()
        if self.result is None or ch.shown != ch.request():
            return None
        return tuple(self.result.heads)

    def _neuron_request(self):
        heads = self._circuit_heads()
        if heads is None or self.neuron < 0:
            return None
        return NeuronRequest(self.serial, heads, self.neuron, self.options.value.k)

    def _validation_request(self):
        heads, o = self._circuit_heads(), self.options.value
        texts = text_source(self.state, o.max_texts, o.prepend)
        if heads is None or self.neuron < 0 or texts is None:
            return None
        return ValidationRequest(self.serial, heads, self.neuron, texts)

    # ------------------------------------------------------------------ ranking

    def draw(self, res: Ranking | None) -> None:
        self.ranked.set_records(res.rows if res is not None else ())
        if res is None:
            self.status.setText("Tick the heads of the circuit." if self.layer is not None
                                and self.options.value.heads != "b4" else " ")
            return
        self.heads_box.show_heads(res.heads)
        if self.neuron < 0:
            self.neuron = int(res.ranking.order[0])
        self._select_row()
        self.status.setText(f"{len(res.ranking.order)} neurons by the size of their "
                            f"contextual component · {res.label}")
        self.refresh()  # the neuron's channels wait for the ranking

    def _select_row(self) -> None:
        res = self.result
        if res is None:
            return
        row = self.ranked.row_of_record(int(np.flatnonzero(res.ranking.order == self.neuron)[0]))
        with signals_blocked(self.table.selectionModel()):
            self.table.selectRow(row)
        self.table.scrollTo(self.ranked.index(row, 0))

    @Slot(QModelIndex)
    def _neuron_clicked(self, index: QModelIndex) -> None:
        if self.result is None:  # clicked: only emitted for a valid index
            return
        self.neuron = self.ranked.record(index.row())[1]
        self.refresh()

    # ------------------------------------------------------------------ one neuron

    def _draw_tokens(self, nt: circuits.NeuronTokens | None) -> None:
        if nt is None:
            self.tokens.records().set_records(())
            self.neuron_label.setText(" ")
            return
        rows = [(k + 1, int(a), float(b), int(c), float(d)) for k, (a, b, c, d) in enumerate(
            zip(nt.top_ids, nt.top_values, nt.bottom_ids, nt.bottom_values))]
        self.tokens.records().set_records(rows)
        self.neuron_label.setText(f"<b>Neuron {nt.neuron}</b>: tokens whose extended "
                                  "embedding raises / lowers its pre-activation most "
                                  "(c_m(x) = ext(x) · W2[:, m], without ln_2's scale)")

    def _draw_validation(self, v: circuits.NeuronValidation | None) -> None:
        if v is None:
            self.points.setData([], [])
            self.diagonal.setData([], [])
            set_title(self.plot, " ")
            self.validation_status.setText(" ")
            return
        x, y = v.predicted[0], v.actual[0]
        self.points.setData(x, y)
        lo = float(min(x.min(), y.min())) if x.size else 0.0
        hi = float(max(x.max(), y.max())) if x.size else 1.0
        self.diagonal.setData([lo, hi], [lo, hi])
        r = float(v.correlation[0])
        set_title(self.plot, f"neuron {v.neurons[0]}: predicted vs actual, r = {num(r)}")
        shown = f"{x.size:,} of {v.points:,}" if x.size < v.points else f"{v.points:,}"
        self.validation_status.setText(
            f"r = {num(r)} over {v.points:,} positions of {v.texts} texts ({v.source}); "
            f"{shown} points drawn · dashed: predicted = actual")

    def _scatter_table(self):
        v = self.channel("validation").result
        return validation_table(v) if v is not None else None
