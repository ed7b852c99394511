"""A3 Affinity heatmaps (the paper's Fig 2-B, Fig 12): T_ee for every pair of a token set —
the typed text's tokens, a seeded random sample, or the current query's top-k keys — for
one head or all heads, with or without LayerNorm."""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import Slot
from PySide6.QtWidgets import QVBoxLayout

from detokgui.core.model.conventions import COLOUR_SIGN
from detokgui.core.token_side import affinity
from detokgui.core.token_side.heatmap import (
    MAX_TOKENS,
    HeatmapResult,
    affinity_heatmap,
    heatmap_title,
    heatmap_tokens,
)
from detokgui.core.token_side.tables import heatmap_table
from detokgui.gui.mosaic import HeatmapMosaic
from detokgui.gui.option_rows import OptionRow, check, combo, option, spin
from detokgui.gui.panels.base import Panel
from detokgui.gui.plots import Heatmap, PlotFrame, head_color

SOURCES = (("text", "Tokens of the typed text"), ("sample", "Random sample"),
           ("topk", "Query + its top-k keys"))
HINTS = {"text": "Type text in the Tokens panel.",
         "topk": "Select a query token in the Tokens panel."}


@dataclass(frozen=True)
class Options:
    source: str = option("text", combo(SOURCES, "Which tokens the heatmap compares"))
    size: int = option(30, spin(2, MAX_TOKENS, "Sample size / number of top-k tokens",
                                label="N"))
    seed: int = option(0, spin(0, 1_000_000, "The same seed gives the same sample",
                               label="seed"))
    all_heads: bool = option(False, check(
        "All heads", "Show a grid of every head instead of the selected head"))
    layernorm: bool = option(True, check(
        "LayerNorm", "On: divide by σ (convention of the Top-k panel).\n"
                     "Off: raw e W^QK e^T, 'without LayerNorm' (Fig 12)."))


@dataclass(frozen=True)
class Request:
    serial: int
    source: str
    size: int
    seed: int
    heads: tuple[int, ...]
    sigma: affinity.SigmaChoice  # of the values: the shared convention, or none
    token_set: tuple[int, ...]  # source "text"
    query: int  # source "topk": the query, its head and the ranking's sigma
    head: int
    rank_sigma: affinity.SigmaChoice | None


class HeatmapPanel(Panel):
    title = "Affinity heatmap"
    view_name = "heatmap"
    signed_colours = True
    tooltip = "T_ee between all pairs of a token set, per head (A3)"

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        lay = QVBoxLayout(self)

        self.options = OptionRow("heatmap", Options, self)
        lay.addLayout(self.options.row(("source", "size", "seed", "all_heads", "layernorm")))

        self.frame = PlotFrame("Affinity heatmap", self._table, analysis="heatmap")
        lay.addWidget(self.frame, 1)
        self.status.setToolTip("Hover over a cell; click it to select its query and key tokens")
        lay.addWidget(self.status)
        # one head: a heatmap with the tokens on its axes; all heads: one mosaic of maps
        self.single = Heatmap(max_labels=60)
        self.single.setLabel("left", "query")
        self.single.setLabel("bottom", "key")
        self.single.cellClicked.connect(lambda r, c: self._cell_clicked(0, r, c))
        self.mosaic = HeatmapMosaic(self.frame.view.ci)
        self.mosaic.cellClicked.connect(self._cell_clicked)
        self.mosaic.cellHovered.connect(self._mosaic_hovered)
        self.shown: Heatmap | HeatmapMosaic | None = None
        self.frame.view.scene().sigMouseMoved.connect(self._hovered)

        self.options.changed.connect(self._options_changed)
        for signal in (state.queryTokenChanged, state.keyTokenChanged, state.headChanged):
            signal.connect(self.when_visible(self._mark_selection))
        self._options_changed(self.options.value)

    @property
    def tokens(self) -> list[int]:
        return self.result.tokens if self.result is not None else []

    @property
    def heads(self) -> list[int]:
        return self.result.heads if self.result is not None else []

    @property
    def values(self) -> np.ndarray | None:
        return self.result.values if self.result is not None else None

    @Slot(object)
    def _options_changed(self, opts: Options) -> None:
        for name, shown in (("size", opts.source != "text"), ("seed", opts.source == "sample")):
            self.options.label(name).setVisible(shown)
            self.options.widget(name).setVisible(shown)
        self.refresh()

    def _hovered(self, pos) -> None:
        if self.shown is self.single:
            r, c = self.single.cell_at(pos)
            self.status.setText(self.single.describe(r, c) or " ")

    def _mosaic_hovered(self, k: int, r: int, c: int) -> None:
        res = self.result
        shown = k >= 0 and res is not None and res.values is not None
        self.status.setText(res.describe(k, r, c) if shown else " ")

    # ------------------------------------------------------------------ compute

    def request(self):
        layer, s, o = self.layer, self.state, self.options.value
        heads = tuple(range(layer.n_heads)) if o.all_heads else (s.head,)
        sigma = s.sigma if o.layernorm else affinity.SigmaChoice("none")
        topk = o.source == "topk"
        return Request(self.serial, o.source, o.size, o.seed, heads, sigma,
                       tuple(s.token_set) if o.source == "text" else (),
                       s.query_token if topk else -1, s.head if topk else -1,
                       s.sigma if topk else None)

    @staticmethod
    def compute(layer, req: Request) -> HeatmapResult:
        tokens = heatmap_tokens(layer, req.source, req.token_set, req.query, req.head,
                                req.rank_sigma, req.size, req.seed)
        return affinity_heatmap(layer, tokens, req.heads, req.sigma)

    # ------------------------------------------------------------------ draw

    def draw(self, res: HeatmapResult | None) -> None:
        view = self.frame.view
        if res is None or res.values is None:
            view.clear()
            self.shown = None
            view.addLabel(HINTS.get(self.options.value.source, "No tokens."))
            self.frame.set_title("")
            self.status.setText(" ")
            return
        label = f"{res.value_name}: {COLOUR_SIGN}"  # σ: in the title
        grid = len(res.heads) > 1
        shown = self.mosaic if grid else self.single
        if shown is not self.shown:  # the other one's items out of the layout, these in
            view.clear()
            if grid:
                self.mosaic.attach(view.ci)
            else:
                view.ci.addItem(self.single, row=0, col=0)
                self.single.attach_colorbar(view.ci, 0, 1)
            self.shown = shown
        if grid:  # one colour scale for every head, so that they compare
            m = float(np.nanmax(np.abs(res.values))) or 1.0
            self.mosaic.colorbar.getAxis("right").setLabel(html.escape(label))
            self.mosaic.set_maps(res.values, [f"head {h}" for h in res.heads], (-m, m),
                                 [head_color(h) for h in res.heads])
        else:
            self.single.set_colorbar_label(label)
            self.single.set_matrix(res.values[0], res.labels, res.labels)
        self.frame.set_title(heatmap_title(res, None if grid else res.heads[0]))
        self._mark_selection()
        self.status.setText(f"{len(res.tokens)} tokens · {res.value_name} · hover a cell")

    def _cell_clicked(self, k: int, r: int, c: int) -> None:
        self.state.set_head(self.heads[k])
        self.state.set_query_token(self.tokens[r])
        self.state.set_key_token(self.tokens[c])

    @Slot()
    def _mark_selection(self, *_) -> None:
        """The selected query's row and key's column (their cell when both are in the set),
        and in the grid the selected head's map."""
        tokens = self.tokens
        q, k = self.state.query_token, self.state.key_token
        r = tokens.index(q) if q in tokens else -1
        c = tokens.index(k) if k in tokens else -1
        if self.shown is self.single:
            self.single.mark(r, c)
        elif self.shown is self.mosaic:
            self.mosaic.mark(r, c)
            h = self.state.head
            self.mosaic.select(self.heads.index(h) if h in self.heads else None,
                               head_color(h))

    def _table(self):
        if self.values is None:
            return None
        return heatmap_table(self.layer, self.values, self.heads, self.tokens, self.tokens)
