"""C1 Sentence view: for the typed text (or one text of the corpus) and a head, the six term
matrices T_ee..T_p, their sum, the predicted attention softmax_{j<=i}(sum / tau) and
the model's own layer-0 attention from a forward pass, with max |predicted - actual| as a
built-in exactness check; or one of these matrices for every head."""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
from PySide6.QtWidgets import QLabel, QVBoxLayout

from detokgui.core.base.numbers import num
from detokgui.core.model.conventions import COLOUR_SIGN
from detokgui.core.text_side.empirical import SENTENCE_TERMS, TextSource
from detokgui.core.text_side.sentence_matrices import (
    MATRIX_TITLES,
    SentenceMatrices,
    iter_sentence_matrices,
    matrix_title,
)
from detokgui.core.text_side.tables import sentence_values_table
from detokgui.gui.corpus_hint import CorpusHint
from detokgui.gui.mosaic import HeatmapMosaic
from detokgui.gui.option_rows import STRETCH, OptionRow, check, combo, option, spin
from detokgui.gui.panels.base import Panel
from detokgui.gui.plots import Heatmap, PlotFrame, head_color
from detokgui.gui.text_source import bos_check, text_source

SOURCES = (("text", "Typed text"), ("corpus", "Corpus text"))
EXACT = 1e-4  # a larger max |predicted - actual| is shown as a failure
# Longer texts are drawn averaged down to the screen's pixels (4x faster to paint at 1024
# tokens); the blank j > i half is drawn as 0 then, or the averaged diagonal would vanish.
DOWNSAMPLE_ABOVE = 256


@dataclass(frozen=True)
class Options:
    source: str = option("text", combo(
        SOURCES,
        "Typed text: the tokens of the Tokens panel (at most n_positions).\n"
        "Corpus text: text number N of the corpus (a window of at most\n"
        "n_positions tokens of one document)."))
    index: int = option(0, spin(  # corpus text number
        0, 10_000_000, "Which text of the corpus (0 = the first)", label="text #",
        tracking=False))
    prepend: bool = option(False, bos_check(
        "Start the corpus text with the model's BOS token (the tokenizer's bos_token, else\n"
        "its eos_token: <|endoftext|> for GPT-2, the authors' convention; </s> for OPT)"))
    all_heads: bool = option(False, check(  # False: the nine matrices of the selected head
        "All heads", "Off: the nine matrices of the selected head.\n"
                     "On: one matrix for every head."))
    matrix: str = option("predicted", combo(  # the matrix of the all-heads grid
        ((m, MATRIX_TITLES[m]) for m in SENTENCE_TERMS), "The matrix shown for every head"))


@dataclass(frozen=True)
class Request:
    serial: int
    tokens: tuple[int, ...]  # the typed text (source "text")
    texts: TextSource | None  # the corpus (source "corpus")
    index: int
    heads: tuple[int, ...]
    matrices: tuple[str, ...]  # kept in the result


class SentenceViewPanel(Panel):
    title = "Sentence view"
    view_name = "sentence"
    signed_colours = True
    tooltip = ("A text's six term matrices, their sum, the predicted and the model's own "
               "attention, per head (C1)")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        self.placed: list[tuple[int, str]] = []  # (row of result.heads, matrix) per map
        self.nine: list[Heatmap] = []  # the nine matrices of one head, made when first shown
        self.mosaic: HeatmapMosaic | None = None  # one matrix for every head
        self.shown: str | None = None  # "nine", "grid" or None
        self.marked: tuple[int, int] | None = None  # (i, j) last clicked
        lay = QVBoxLayout(self)
        self.hint = CorpusHint(state, "A corpus text needs one.",
                               needed=self._needs_corpus)
        lay.addWidget(self.hint)
        self.options = OptionRow("sentence", Options, self)
        self.exact = QLabel(" ")
        self.exact.setToolTip("max over i, j (and the shown heads) of |predicted − actual|: the\n"
                              "six terms reproduce the model's attention when this is ~1e-6")
        lay.addLayout(self.options.row(("source", "index", "prepend"), ("all_heads", "matrix"),
                                       STRETCH, self.exact))
        self.options.changed.connect(self._options_changed)

        self.frame = PlotFrame("Sentence view", self._table, analysis="sentence")
        lay.addWidget(self.frame, 1)
        self.status.setToolTip("Hover over a cell to read every term; click it to select the "
                               "query and key tokens and the query position i")
        lay.addWidget(self.status)
        self.frame.view.scene().sigMouseMoved.connect(self._hover)
        state.headChanged.connect(self.when_visible(self._mark))  # the grid's framed head
        self._options_changed(self.options.value)

    def _needs_corpus(self) -> bool:
        options = getattr(self, "options", None)  # None while the widgets are built
        return options is not None and options.value.source == "corpus"

    def _options_changed(self, opts: Options) -> None:
        corpus = opts.source == "corpus"
        for w in (self.options.label("index"), self.options.widget("index"),
                  self.options.widget("prepend")):
            w.setVisible(corpus)
        self.hint.update_shown()
        self.options.widget("matrix").setVisible(opts.all_heads)
        self.refresh()

    # ------------------------------------------------------------------ compute

    def request(self):
        layer, s, o = self.layer, self.state, self.options.value
        corpus = o.source == "corpus"
        texts = text_source(s, 0, o.prepend) if corpus else None
        tokens = () if corpus else tuple(s.token_set[: layer.n_positions])
        if texts is None and not tokens:
            return None
        if o.all_heads:
            heads, matrices = tuple(range(layer.n_heads)), (o.matrix,)
        else:
            heads, matrices = (s.head,), SENTENCE_TERMS
        return Request(self.serial, tokens, texts, o.index, heads, matrices)

    @staticmethod
    def compute(layer, req: Request):
        return iter_sentence_matrices(layer, req.tokens, req.texts, req.index, req.heads,
                                      req.matrices)

    # ------------------------------------------------------------------ draw

    def draw(self, res: SentenceMatrices | None) -> None:
        view = self.frame.view
        if res is None:
            view.clear()
            self.shown, self.placed = None, []
            o = self.options.value
            view.addLabel("Type text in the Tokens panel." if o.source == "text" else
                          "Choose a corpus (Corpus menu) to read its texts.")
            self.exact.setText(" ")
            self.status.setText(" ")
            return
        grid = len(res.values) == 1  # one matrix for every head (else the nine of one head)
        n = len(res.tokens)
        big = n > DOWNSAMPLE_ABOVE
        if grid:
            m = next(iter(res.values))
            self.placed = [(r, m) for r in range(len(res.heads))]
            self._show("grid")
            values = res.values[m]
            top = float(np.nanmax(np.abs(values))) or 1.0  # one scale: the heads compare
            self.mosaic.image.setAutoDownsample(big)
            self.mosaic.set_maps(np.nan_to_num(values, nan=0.0) if big else values,
                                 [f"head {h}" for h in res.heads], (-top, top),
                                 [head_color(h) for h in res.heads])
            self.mosaic.colorbar.getAxis("right").setLabel(html.escape(COLOUR_SIGN))  # rich text
        else:
            self.placed = [(0, m) for m in SENTENCE_TERMS]
            self._show("nine")
            for k, (m, hm) in enumerate(zip(SENTENCE_TERMS, self.nine)):
                hm.image.setAutoDownsample(big)
                values = res.values[m][0]
                hm.set_matrix(np.nan_to_num(values, nan=0.0) if big else values, res.labels,
                              res.labels)
                hm.setTitle(matrix_title(self.layer, m), size="9pt")
                # query labels on the left column; key labels above the top row and below
                # the bottom row (every other one on each when there are many)
                hm.showAxis("left", k % 3 == 0)
                hm.showAxis("top", k < 3 and n > 8)
                hm.showAxis("bottom", k >= 6)
        self._mark()
        worst = float(res.max_abs_diff.max())
        color = "#1a7f37" if worst < EXACT else "#b00020"
        where = "" if not grid else f" (worst: head {res.heads[int(res.max_abs_diff.argmax())]})"
        self.exact.setText(f"<span style='color:{color}'>max |predicted − actual| = "
                           f"{num(worst)}{where}</span>")
        what = (f"{matrix_title(self.layer, self.placed[0][1])}, every head" if grid
                else f"head {res.heads[0]}")
        self.frame.set_title(what if grid else "")
        self.status.setText(f"{res.source} · {n} tokens · {what} · rows: query i, columns: "
                            f"key j ≤ i · {COLOUR_SIGN} · hover a cell, click to select")

    def _show(self, which: str) -> None:
        """The nine heatmaps or the mosaic in the plot frame (made when first shown)."""
        if which == self.shown:
            return
        view = self.frame.view
        view.clear()
        if which == "grid":
            if self.mosaic is None:
                self.mosaic = HeatmapMosaic(view.ci)
                self.mosaic.cellClicked.connect(self._clicked)
            else:
                self.mosaic.attach(view.ci)
        else:
            if not self.nine:
                for k in range(len(SENTENCE_TERMS)):
                    hm = Heatmap(max_labels=24)
                    hm.cellClicked.connect(lambda r, c, k=k: self._clicked(k, r, c))
                    self.nine.append(hm)
            for k, hm in enumerate(self.nine):
                view.addItem(hm, row=k // 3, col=k % 3)
        self.shown = which

    def _clicked(self, k: int, i: int, j: int) -> None:
        res = self.result
        if res is None or k >= len(self.placed):
            return
        self.marked = (i, j)
        self.state.set_head(res.heads[self.placed[k][0]])
        self.state.set_query_token(res.tokens[i])
        self.state.set_key_token(res.tokens[j])
        self.state.set_query_position(i)
        self._mark()

    def _mark(self) -> None:
        i, j = self.marked or (-1, -1)
        if self.shown == "nine":
            for hm in self.nine:
                hm.mark(i, j)
        elif self.shown == "grid":
            self.mosaic.mark(i, j)
            res, h = self.result, self.state.head
            heads = res.heads if res is not None else []
            self.mosaic.select(heads.index(h) if h in heads else None, head_color(h))

    def describe(self, k: int, i: int, j: int) -> str:
        """The hover text of cell (i, j) of map k: both tokens and every value shown."""
        return self.result.describe(self.placed[k][0], i, j)

    def _hover(self, pos) -> None:
        if self.result is None:
            return
        if self.shown == "grid":
            hit = self.mosaic.cell_at(pos)
            if hit is not None:
                self.status.setText(self.describe(*hit))
            return
        for k, hm in enumerate(self.nine if self.shown == "nine" else []):
            i, j = hm.cell_at(pos)
            if i >= 0:
                self.status.setText(self.describe(k, i, j))
                return

    def _table(self):
        res = self.result
        if res is None:
            return None
        return sentence_values_table(res.heads, res.values)
