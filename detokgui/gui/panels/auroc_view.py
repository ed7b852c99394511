"""A5 Bigram AUROC (the paper's Fig 2-C, 2-D): how well each head's T_ee(u, v) ranks the
tokens v that precede query token u in the corpus (positives, weighted by c(v, u)) above
all other tokens — per head the mean over query tokens, per query token its AUROC, and the
ROC curve of the selected query token."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QSplitter, QVBoxLayout

from detokgui.core.base.numbers import num
from detokgui.core.model.conventions import INK_COLOUR, SigmaChoice
from detokgui.core.token_side import auroc as A
from detokgui.gui.controls import bare_column, wrapping_label
from detokgui.gui.corpus_hint import CorpusHint
from detokgui.gui.head_controls import HeadSpin
from detokgui.gui.option_rows import OptionRow, combo, option
from detokgui.gui.panels.base import Panel, StatusLine
from detokgui.gui.plots import PlotFrame, add_plot, head_color, set_title
from detokgui.gui.records import Column, RecordsModel, TokenTableView, select_row_token
from detokgui.gui.sigma_controls import SigmaControls

SHORT = {"skip": "tokens without bigrams skipped",
         "zero": "authors' convention: tokens without bigrams scored 0 and included"}


@dataclass(frozen=True)
class Options:
    no_bigram: str = option("skip", combo(
        ((key, SHORT[key]) for key in A.NO_BIGRAM),
        "\n".join(f"{k}: {A.NO_BIGRAM_LABELS[k]}" for k in A.NO_BIGRAM), label="mean over"))


@dataclass(frozen=True)
class Request:
    serial: int
    sigma: SigmaChoice
    corpus: tuple[str, ...]


@dataclass(frozen=True)
class CurveRequest(Request):
    query: int
    head: int


class AUROCPanel(Panel):
    title = "Bigram AUROC"
    view_name = "auroc"
    empty_names_input = True
    tooltip = ("How well each head's token-token scores pick out the tokens that precede "
               "the query in the corpus (A5, Fig 2-C/D)")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        lay = QVBoxLayout(self)
        lay.addWidget(CorpusHint(state, "The bigram AUROC counts which tokens precede each "
                                        "query token in a corpus."))
        self.options = OptionRow("auroc", Options, self)
        lay.addLayout(self.options.row(HeadSpin(state), "no_bigram", SigmaControls(state)))
        self.options.changed.connect(self.redraw)

        split = QSplitter(Qt.Horizontal)
        plots = QSplitter(Qt.Vertical)
        self.bars_frame = PlotFrame("Mean bigram AUROC per head", self._bars_table,
                                    analysis="auroc_means")
        self.bars = add_plot(self.bars_frame, controls=False, mouse=False, grid="y", alpha=0.3,
                             bottom="head (click a bar to select it)", left="mean AUROC")
        self.bars_frame.view.scene().sigMouseClicked.connect(self._bar_clicked)
        plots.addWidget(self.bars_frame)
        self.roc_frame = PlotFrame("ROC curve of the query token", self._roc_table,
                                   analysis="roc")
        self.roc = add_plot(self.roc_frame, controls=False, mouse=False,
                            bottom="false-positive rate (share of non-preceding tokens)",
                            left="true-positive rate (weighted)")
        self.roc.setRange(xRange=(0, 1), yRange=(0, 1), padding=0.02)
        self.roc.setAspectLocked(False)
        self.roc.plot([0, 1], [0, 1], pen=pg.mkPen("#999", width=1, style=Qt.DashLine),
                      antialias=True)
        self.roc_curve = self.roc.plot([], [], pen=pg.mkPen("#1f77b4", width=2), antialias=True)
        plots.addWidget(self.roc_frame)
        split.addWidget(plots)

        right, rl = bare_column()
        self.table_label = wrapping_label()
        rl.addWidget(self.table_label)
        self.table = TokenTableView(RecordsModel([], token=int), sortable=True, stretch=0)
        self.table.tokenActivated.connect(select_row_token(state, False))
        rl.addWidget(self.table, 1)
        split.addWidget(right)
        split.setSizes([760, 560])
        lay.addWidget(split, 1)
        self.roc_status = StatusLine()
        lay.addWidget(self.roc_status)
        lay.addWidget(self.status)

        self.add_channel("roc", self._curve_request, self._curve_compute, self._draw_curve,
                         status=self.roc_status, label="ROC curve")
        state.headChanged.connect(self.redraw)  # every head is computed: only redraw
        state.queryTokenChanged.connect(
            self.when_visible(lambda: self.table.select_token(state.query_token)))

    def plot_frames(self):
        return [self.bars_frame, self.roc_frame]

    # ------------------------------------------------------------------ all heads

    def request(self):
        if not self.state.corpus:
            return None
        return Request(self.serial, self.state.sigma, self.state.corpus)

    @staticmethod
    def compute(layer, req: Request):
        return A.iter_corpus_auroc(layer, req.corpus, req.sigma)

    def draw(self, res: A.BigramAUROC | None) -> None:
        self.bars.clear()
        model = self.table.records()
        if res is None:
            model.set_records((), [])
            set_title(self.bars, self.empty_message(
                "Choose a corpus (Corpus menu) to compute the bigram AUROC.",
                "Counting the corpus's bigrams and computing every head's AUROC… (progress "
                "and Cancel in the status bar)"))
            self._head_axis(range(self.layer.n_heads) if self.layer is not None else [])
            self.bars.setRange(yRange=(0, 1), padding=0)
            self.table_label.setText(" ")
            self.clear_empty_status()
            return
        conv = self.options.value.no_bigram
        means, used = res.head_means(conv)
        head = self.state.head
        x = np.arange(len(res.heads))
        brushes = [pg.mkBrush(head_color(h) if h == head else "#9fb8d6") for h in res.heads]
        self.bars.addItem(pg.BarGraphItem(x=x, height=np.nan_to_num(means), width=0.7,
                                          brushes=brushes, pen=INK_COLOUR))
        top = float(np.nanmax(means)) if np.isfinite(means).any() else 1.0
        font = QFont()
        font.setPointSize(8)
        same_n = len(set(used.tolist())) == 1  # one n for every head: said in the title
        for i, (m, n) in enumerate(zip(means.tolist(), used.tolist())):
            label = pg.TextItem(num(m, 3) if same_n else f"{num(m, 3)}\nn = {num(int(n))}",
                                anchor=(0.5, 1.0), color="k")
            label.setFont(font)
            label.setPos(i, m if np.isfinite(m) else 0)
            self.bars.addItem(label)
        self.bars.addLine(y=0.5, pen=pg.mkPen("#999", width=1, style=Qt.DashLine))
        self._head_axis(res.heads)
        self.bars.setRange(yRange=(0, max(1.0, top) * 1.12), padding=0)
        n_text = (f"{num(int(used[0]))} query tokens" if same_n and len(used)
                  else "n = query tokens in the mean")
        set_title(self.bars, f"Mean bigram AUROC per head ({n_text})<br>"
                           f"<span style='font-size:9pt'>{SHORT[conv]}</span>")
        shown = head if head in res.heads else res.heads[0]
        values = res.values(conv)[res.row(shown)]
        ids = res.ranked(shown, conv)
        text = self.state.token_text
        self.table.horizontalHeader().setSortIndicator(-1, Qt.AscendingOrder)
        model.set_records(ids, [
            Column("query", lambda u: text(int(u))),
            Column("id", lambda u: int(u), num, numeric=True),
            Column("AUROC", lambda u: float(values[u]), num, numeric=True,
                   tip="weighted Mann-Whitney AUROC of T_ee(u, ·): preceding tokens vs the rest"),
            Column("preceding tokens", lambda u: int(res.positives[u]), num,
                   numeric=True,
                   tip="distinct tokens v with c(v, u) > 0 (the positives)"),
            Column("bigrams", lambda u: int(res.weight[u]), num, numeric=True,
                   tip="the positives' total weight: sum of c(v, u)"),
        ])
        self.table.select_token(self.state.query_token)
        self.table_label.setText(
            f"<b>Head {shown}</b> — AUROC of {num(int(ids.size))} query tokens "
            f"({SHORT[conv]}); click a row to select the query token")
        self.status.setText(res.summary(conv))

    def _bar_clicked(self, ev) -> None:
        res = self.result
        vb = self.bars.getViewBox()
        if res is None or ev.button() != Qt.LeftButton or not vb.sceneBoundingRect().contains(
                ev.scenePos()):
            return
        i = round(vb.mapSceneToView(ev.scenePos()).x())
        if 0 <= i < len(res.heads):
            self.state.set_head(res.heads[i])
            ev.accept()

    def _bars_table(self):
        res = self.result
        return None if res is None else A.head_means_table(res, self.options.value.no_bigram)

    def _head_axis(self, heads) -> None:
        """The bar chart's x axis: one tick per head, bar i at x = i."""
        heads = list(heads)
        self.bars.getAxis("bottom").setTicks([[(i, str(h)) for i, h in enumerate(heads)]])
        self.bars.setXRange(-0.6, max(len(heads), 1) - 0.4, padding=0)

    # ------------------------------------------------------------------ one token

    def _curve_request(self):
        if not self.state.corpus or self.state.query_token < 0:
            return None
        return CurveRequest(self.serial, self.state.sigma, self.state.corpus,
                            self.state.query_token, self.state.head)

    @staticmethod
    def _curve_compute(layer, req: CurveRequest):
        return A.iter_corpus_roc(layer, req.corpus, req.query, req.head, req.sigma)

    def _draw_curve(self, c) -> None:
        if c is None or isinstance(c, A.NoBigram):
            self.roc_curve.setData([], [])
            set_title(self.roc, " ")
            self.roc_status.setText(
                f"{self.state.token_text(c.query)!r} never follows another token in the "
                "corpus: it has no bigram, so no ROC curve" if c is not None else
                ("Select a query token to see its ROC curve" if self.state.corpus else " "))
            return
        self.roc_curve.setData(c.fpr[0], c.tpr[0])
        self.roc_curve.setPen(pg.mkPen(head_color(c.heads[0]), width=2))
        set_title(self.roc, f"ROC of query {self.state.token_text(c.query)!r}, head {c.heads[0]}"
                          f": AUROC = {num(float(c.auroc[0]))}")
        self.roc_status.setText(
            f"ROC curve: keys ranked by T_ee({self.state.token_text(c.query)!r}, v); "
            f"positives = the {num(c.positives)} tokens that precede it "
            f"({num(c.weight)} bigrams, weighted by count) · {c.sigma.label()}")

    def _roc_table(self):
        c = self.channel("roc").result
        return None if c is None or isinstance(c, A.NoBigram) else A.roc_table(c)

