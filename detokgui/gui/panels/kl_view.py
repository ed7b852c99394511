"""C3 Six-term contribution (the paper's Fig 4 and 13): how much each term T_X shapes
the attention, c^X_{i,h} = KL divergence between the attention with and without T_X at
query position i, averaged over corpus texts; a line per term, per head. The definition
(the paper's eq 18-21, or the authors' code) is an option, named on the plot and in the
CSV."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtWidgets import QVBoxLayout

from detokgui.core.base.plot_axes import data_range, stable_range
from detokgui.core.text_side import empirical
from detokgui.core.text_side.empirical import (
    DEFINITION_LABELS,
    DEFINITION_SHORT,
    DEFINITIONS,
    TextSource,
)
from detokgui.core.text_side.tables import kl_table
from detokgui.core.text_side.titles import kl_hover, kl_title
from detokgui.gui.corpus_hint import CorpusHint
from detokgui.gui.head_controls import HeadChooser
from detokgui.gui.option_rows import check, combo, custom, option
from detokgui.gui.panels.corpus_grid import CorpusGridPanel
from detokgui.gui.terms import term_legend
from detokgui.gui.text_source import max_texts_option, prepend_option, text_source

LOG_FLOOR = 1e-12


@dataclass(frozen=True)
class Options:
    heads: str = option("all", custom(HeadChooser))  # which heads are drawn (all computed)
    definition: str = option("paper", combo(
        ((d, DEFINITION_SHORT[d]) for d in DEFINITIONS),
        "\n".join(DEFINITION_LABELS[d] for d in DEFINITIONS), label="definition"))
    max_texts: int = max_texts_option(20)
    prepend: bool = prepend_option()
    log: bool = option(False, check(
        "log scale", "log10 of the contributions: the small terms next to the large"))


@dataclass(frozen=True)
class Request:
    serial: int
    definition: str
    texts: TextSource


class KLPanel(CorpusGridPanel):
    frame_name = "Six-term contribution"
    title = "Six-term contribution"
    view_name = "kl"
    x_label = "query position i"
    tooltip = ("Each term's contribution to the attention, as a KL divergence over query "
               "positions, averaged over corpus texts (C3, Figs 4 and 13)")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        lay = QVBoxLayout(self)
        lay.addWidget(CorpusHint(state, "This view averages over corpus texts."))
        self.add_options(lay, "kl", Options, "heads", "definition",
                         ("max_texts", "prepend", "log"))
        state.headChanged.connect(self.redraw)  # every head is computed: only redraw
        state.queryPositionChanged.connect(self.redraw)  # the marker

        self.add_grid(lay, "Hover over a plot to read every term at that position; click "
                           "to choose the query position")

    # ------------------------------------------------------------------ compute

    def request(self):
        o = self.options.value
        texts = text_source(self.state, o.max_texts, o.prepend)
        if texts is None:
            return None
        return Request(self.serial, o.definition, texts)

    @staticmethod
    def compute(layer, req: Request):
        return empirical.iter_kl(layer, req.texts, req.definition)

    # ------------------------------------------------------------------ draw

    def draw(self, res: empirical.KLContributions | None) -> None:
        if res is None:
            self.draw_nothing("measure the terms on its texts")
            return
        log = self.options.value.log
        n = int(np.count_nonzero(res.texts))  # the positions some text reaches
        vals = res.contribution[..., :n]  # [heads, 6, n], log10 with the log option
        if log:
            vals = np.log10(np.maximum(vals, LOG_FLOOR))
        heads, rows = self.shown_rows(res.heads)
        grid = self.grid
        grid.set_heads(heads)
        y = stable_range(None, *data_range([vals[rows]], 0, n), zero_based=not log)
        pad = max(0.5, 0.02 * n)
        grid.set_ranges((-pad, n - 1 + pad), y)
        grid.set_marker(min(self.state.query_position, n - 1))
        x = np.arange(n)
        for k, t in enumerate(res.terms):
            grid.set_series(t, x, vals[rows, k])
        grid.set_title(kl_title(self.layer, res, log, term_legend(res.terms)))
        self.status.setText(f"{res.label} · mean over {res.n_texts} texts ({res.source}) · "
                            "hover to read values, click to choose i")

    def describe(self, h: int, i: int) -> str:
        return kl_hover(self.layer, self.result, h, i)

    def table(self):
        return kl_table(self.result) if self.result is not None else None
