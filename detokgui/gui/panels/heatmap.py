"""A3 Affinity heatmaps (the paper's Fig 2-B, Fig 12): T_ee for every pair of a token set —
the typed text's tokens, a seeded random sample, or the current query's top-k keys — for
one head or all heads, with or without LayerNorm."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QTimer, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QVBoxLayout,
)

from detokgui.core import affinity
from detokgui.core.tables import heatmap_table
from detokgui.core.tokens import display_token
from detokgui.gui.panels.base import Panel
from detokgui.gui.plots import Heatmap, HeatmapTile, PlotFrame, connect_hover

SOURCES = (("text", "Tokens of the typed text"), ("sample", "Random sample"),
           ("topk", "Query + its top-k keys"))
MAX_TOKENS = affinity.MAX_HEATMAP_TOKENS


def heatmap_tokens(layer, source: str, token_set, query: int, head: int, sigma, n: int,
                   seed: int) -> list[int]:
    """The token set a heatmap shows: the typed text's tokens, a seeded sample of n, or the
    query followed by its top n-1 keys in `head`."""
    if source == "text":
        return list(token_set)[:MAX_TOKENS]
    if source == "sample":
        return affinity.random_token_sample(layer, min(n, MAX_TOKENS), seed)
    if query < 0:
        return []
    res = affinity.topk_keys(layer, query, min(n, MAX_TOKENS) - 1, sigma, heads=[head])
    return [query] + [t for t in res.ids[0].tolist() if t != query]


class HeatmapPanel(Panel):
    title = "Affinity heatmap"
    view_name = "heatmap"
    tooltip = "T_ee between all pairs of a token set, per head (A3)"

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        self.values = None  # [len(heads), n, n]
        self.heads: list[int] = []
        self.tokens: list[int] = []
        self.labels: list[str] = []
        self.request = None
        self.maps: list[Heatmap | HeatmapTile] = []  # what is shown
        # Plot items are built once and reused: a Heatmap (a PlotItem) or a colour bar costs
        # ~10 ms to build, a grid tile ~1.5 ms.
        self.single: Heatmap | None = None
        self.tiles: list[HeatmapTile] = []  # for the all-heads grid
        lay = QVBoxLayout(self)

        row = QHBoxLayout()
        self.source = QComboBox()
        for key, text in SOURCES:
            self.source.addItem(text, key)
        self.source.setToolTip("Which tokens the heatmap compares")
        row.addWidget(self.source)
        self.n_label = QLabel("N")
        row.addWidget(self.n_label)
        self.n_spin = QSpinBox()
        self.n_spin.setRange(2, MAX_TOKENS)
        self.n_spin.setValue(30)
        self.n_spin.setToolTip("Sample size / number of top-k tokens")
        row.addWidget(self.n_spin)
        self.seed_label = QLabel("seed")
        row.addWidget(self.seed_label)
        self.seed_spin = QSpinBox()
        self.seed_spin.setRange(0, 1_000_000)
        self.seed_spin.setToolTip("The same seed gives the same sample")
        row.addWidget(self.seed_spin)
        self.all_heads = QCheckBox("All heads")
        self.all_heads.setToolTip("Show a grid of every head instead of the selected head")
        row.addWidget(self.all_heads)
        self.layernorm = QCheckBox("LayerNorm")
        self.layernorm.setChecked(True)
        self.layernorm.setToolTip("On: divide by σ (convention of the Top-k panel).\n"
                                  "Off: raw e W^QK e^T, 'without LayerNorm' (Fig 12).")
        row.addWidget(self.layernorm)
        row.addStretch(1)
        lay.addLayout(row)

        self.frame = PlotFrame("Affinity heatmap", self._table)
        lay.addWidget(self.frame, 1)
        self.hover = QLabel(" ")
        self.hover.setToolTip("Hover over a cell; click it to select its query and key tokens")
        lay.addWidget(self.hover)
        connect_hover(self.frame, lambda: self.maps, self._hover_text)

        self.source.currentIndexChanged.connect(self._source_changed)
        for w in (self.n_spin, self.seed_spin):
            w.valueChanged.connect(self.refresh)
        self.all_heads.toggled.connect(self.refresh)
        self.layernorm.toggled.connect(self.refresh)
        state.modelChanged.connect(self.refresh)
        state.tokenSetChanged.connect(self._maybe_refresh("text"))
        state.queryTokenChanged.connect(self._query_changed)
        state.sigmaChanged.connect(self.refresh)
        state.headChanged.connect(self._head_changed)
        state.keyTokenChanged.connect(self._mark_selection)
        self._source_changed()

    def plot_frames(self):
        return [self.frame]

    def _maybe_refresh(self, source: str):
        def handler(*_):
            if self.source.currentData() == source:
                self.refresh()
        return handler

    @Slot()
    def _query_changed(self, *_):
        if self.source.currentData() == "topk":
            self.refresh()
        else:
            self._mark_selection()

    @Slot()
    def _head_changed(self, *_):
        if not self.all_heads.isChecked() or self.source.currentData() == "topk":
            self.refresh()

    @Slot()
    def _source_changed(self, *_):
        source = self.source.currentData()
        for w in (self.n_label, self.n_spin):
            w.setVisible(source != "text")
        for w in (self.seed_label, self.seed_spin):
            w.setVisible(source == "sample")
        self.refresh()

    def _hover_text(self, text: str) -> None:
        self.hover.setText(text or " ")

    # ------------------------------------------------------------------ compute

    def sigma(self) -> affinity.SigmaChoice:
        return self.state.sigma if self.layernorm.isChecked() else affinity.SigmaChoice("none")

    @Slot()
    def refresh(self, *_) -> None:
        layer = self.layer
        if layer is None:
            return
        heads = list(range(layer.n_heads)) if self.all_heads.isChecked() else [self.state.head]
        source, n, seed = self.source.currentData(), self.n_spin.value(), self.seed_spin.value()
        sigma, state = self.sigma(), self.state
        token_set, query, head = tuple(state.token_set), state.query_token, state.head
        request = (id(layer), source, n, seed, tuple(heads), sigma, token_set,
                   query if source == "topk" else None, head if source == "topk" else None)
        if request == self.request:
            return
        self.request = request
        if len(heads) > 1:
            self._build_tiles(len(heads))  # while the values compute

        def job():
            tokens = heatmap_tokens(layer, source, token_set, query, head, state.sigma, n, seed)
            if not tokens:
                return tokens, [], None
            labels = [display_token(layer.tokenizer, t) for t in tokens]
            values = affinity.affinity_block(layer, tokens, tokens, sigma, heads).cpu().numpy()
            return tokens, labels, values

        self.hover.setText("computing…")
        self.jobs.submit(self.job_key(), job, lambda res, req=request, hs=heads: self._done(req, hs, res),
                         label="Affinity heatmap")

    def _done(self, request, heads, result) -> None:
        if request != self.request:
            return
        self.tokens, self.labels, self.values = result
        self.heads = heads
        self._draw()

    # ------------------------------------------------------------------ draw

    def _draw(self) -> None:
        view = self.frame.view
        if self.values is None:
            view.clear()
            self.maps = []
            hint = {"text": "Type text in the Tokens panel.",
                    "topk": "Select a query token in the Tokens panel."}.get(
                        self.source.currentData(), "")
            view.addLabel(hint or "No tokens.")
            self.hover.setText(" ")
            return
        labels = self.labels
        n_maps = len(self.heads)
        cols = 1 if n_maps == 1 else math.ceil(math.sqrt(n_maps))
        levels = None
        if n_maps > 1:  # one colour scale for the grid so heads compare
            m = float(np.nanmax(np.abs(self.values))) or 1.0
            levels = (-m, m)
        kind = "T_ee" if self.layernorm.isChecked() else "raw e W^QK e^T"
        maps = self._grid_tiles(n_maps) if n_maps > 1 else [self._single_map()]
        if maps != self.maps:  # lay them out; the same items stay where they are
            view.clear()
            for k, hm in enumerate(maps):
                view.addItem(hm, row=k // cols, col=k % cols)
            maps[0].attach_colorbar(view.ci, 0, cols)
            self.maps = maps
        for k, (h, hm) in enumerate(zip(self.heads, maps)):
            if n_maps == 1:
                hm.setTitle(f"head {h}: {kind} ({self.sigma().label()})")
            else:
                hm.title.setText(f"head {h}")
            hm.set_matrix(self.values[k], labels, labels, levels)
        self._mark_selection()
        self.hover.setText(f"{len(self.tokens)} tokens · {kind} · hover a cell")

    def _single_map(self) -> Heatmap:
        if self.single is None:
            self.single = Heatmap(max_labels=60)
            self.single.setLabel("left", "query")
            self.single.setLabel("bottom", "key")
            self.single.cellClicked.connect(
                lambda r, c: self._cell_clicked(self.heads[0], r, c))
        return self.single

    def _grid_tiles(self, n: int) -> list[HeatmapTile]:
        """n tiles for the all-heads grid (light items: no axes, no menus), and the first
        tile's colour bar."""
        while len(self.tiles) < n:
            k, tile = len(self.tiles), HeatmapTile()
            tile.cellClicked.connect(lambda r, c, k=k: self._cell_clicked(self.heads[k], r, c))
            self.tiles.append(tile)
        self.tiles[0].make_colorbar()
        return self.tiles[:n]

    def _build_tiles(self, n: int, per_turn: int = 3) -> None:
        """Build the grid's tiles a few per event-loop turn, so that neither the request
        nor the result stalls the interface (the result's draw builds any still missing)."""
        if len(self.tiles) < n:
            self._grid_tiles(min(n, len(self.tiles) + per_turn))
            QTimer.singleShot(0, self, lambda: self._build_tiles(n, per_turn))

    def _cell_clicked(self, head: int, r: int, c: int) -> None:
        self.state.set_head(head)
        self.state.set_query_token(self.tokens[r])
        self.state.set_key_token(self.tokens[c])

    @Slot()
    def _mark_selection(self, *_) -> None:
        q, k = self.state.query_token, self.state.key_token
        r = self.tokens.index(q) if q in self.tokens else -1
        c = self.tokens.index(k) if k in self.tokens else -1
        for hm in self.maps:
            hm.mark(r, c)

    def _table(self):
        if self.values is None:
            return None
        import torch

        return heatmap_table(self.layer, torch.from_numpy(self.values), self.heads,
                             self.tokens, self.tokens)
