"""A3 Affinity heatmaps (the paper's Fig 2-B, Fig 12): T_ee for every pair of a token set —
the typed text's tokens, a seeded random sample, or the current query's top-k keys — for
one head or all heads, with or without LayerNorm."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np
from PySide6.QtCore import Slot
from PySide6.QtWidgets import (
    QVBoxLayout,
)

from detokgui.core.model import sample
from detokgui.core.model.conventions import COLOUR_SIGN
from detokgui.core.model.tokens import display_token
from detokgui.core.token_side import affinity
from detokgui.core.token_side.tables import heatmap_table
from detokgui.gui.later_pass import in_a_later_pass
from detokgui.gui.option_rows import OptionRow, check, combo, option, spin
from detokgui.gui.panels.base import Panel
from detokgui.gui.plots import Heatmap, HeatmapTile, PlotFrame, connect_hover, laid_out_once

SOURCES = (("text", "Tokens of the typed text"), ("sample", "Random sample"),
           ("topk", "Query + its top-k keys"))
HINTS = {"text": "Type text in the Tokens panel.",
         "topk": "Select a query token in the Tokens panel."}
MAX_TOKENS = affinity.MAX_HEATMAP_TOKENS


def heatmap_tokens(layer, source: str, token_set, query: int, head: int, sigma, size: int,
                   seed: int) -> list[int]:
    """The token set a heatmap shows: the typed text's tokens, a seeded sample of `size`,
    or the query followed by its top size-1 keys in `head`."""
    if source == "text":
        return list(token_set)[:MAX_TOKENS]
    if source == "sample":
        return sample.random_token_sample(layer, min(size, MAX_TOKENS), seed)
    if query < 0:
        return []
    res = affinity.topk_keys(layer, query, min(size, MAX_TOKENS) - 1, sigma, heads=[head])
    return [query] + [t for t in res.ids[0].tolist() if t != query]


def heatmap_title(res: HeatmapResult, head: int | None) -> str:
    """'Token-token affinity T_ee, head 3 (Fig 2-B) — sigma = …', or without LayerNorm
    the raw product (Fig 12); head None: the whole grid."""
    who = f", head {head}" if head is not None else ", all heads"
    if res.sigma.convention == "none":
        return f"Token-token affinity without LayerNorm, raw e W^QK e^T{who} (Fig 12)"
    return f"Token-token affinity T_ee{who} (Fig 2-B) — {res.sigma.label()}"


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


@dataclass
class HeatmapResult:
    tokens: list[int]
    labels: list[str]
    values: np.ndarray | None  # [len(heads), n, n]
    heads: list[int]
    sigma: affinity.SigmaChoice


class HeatmapPanel(Panel):
    title = "Affinity heatmap"
    view_name = "heatmap"
    signed_colours = True
    tooltip = "T_ee between all pairs of a token set, per head (A3)"

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        self.maps: list[Heatmap | HeatmapTile] = []  # what is shown
        # Plot items are built once and reused: a Heatmap (a PlotItem) costs
        # 15-30 ms to build, a grid tile ~6 ms.
        self.single: Heatmap | None = None
        self.tiles: list[HeatmapTile] = []  # for the all-heads grid
        self._building = False  # tiles are being built, one per pass (_build_tiles)
        self._draw_when_built = False  # a result waits for them
        lay = QVBoxLayout(self)

        self.options = OptionRow("heatmap", Options, self)
        lay.addLayout(self.options.row(("source", "size", "seed", "all_heads", "layernorm")))

        self.frame = PlotFrame("Affinity heatmap", self._table, analysis="heatmap")
        lay.addWidget(self.frame, 1)
        self.status.setToolTip("Hover over a cell; click it to select its query and key tokens")
        lay.addWidget(self.status)
        connect_hover(self.frame, lambda: self.maps, self._hover_text)

        self.options.changed.connect(self._options_changed)
        state.queryTokenChanged.connect(self.when_visible(self._mark_selection))
        state.keyTokenChanged.connect(self.when_visible(self._mark_selection))
        state.headChanged.connect(self.when_visible(self._mark_selection))
        self._options_changed(self.options.value)

    def plot_frames(self):
        return [self.frame]

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
        if opts.all_heads and self.layer is not None and not self._building:
            self._build_tiles(self.layer.n_heads)  # while the values compute
        self.refresh()

    def _hover_text(self, text: str) -> None:
        self.status.setText(text or " ")

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
        if not tokens:
            return HeatmapResult([], [], None, list(req.heads), req.sigma)
        labels = [display_token(layer.tokenizer, t) for t in tokens]
        values = affinity.affinity_block(layer, tokens, tokens, req.sigma, req.heads)
        return HeatmapResult(tokens, labels, values.cpu().numpy(), list(req.heads), req.sigma)

    # ------------------------------------------------------------------ draw

    def draw(self, res: HeatmapResult | None) -> None:
        view = self.frame.view
        if res is None or res.values is None:
            view.clear()
            self.maps = []
            view.addLabel(HINTS.get(self.options.value.source, "No tokens."))
            self.status.setText(" ")
            return
        n_maps = len(res.heads)
        cols = 1 if n_maps == 1 else math.ceil(math.sqrt(n_maps))
        levels = None
        if n_maps > 1:  # one colour scale for the grid so heads compare
            m = float(np.nanmax(np.abs(res.values))) or 1.0
            levels = (-m, m)
        raw = res.sigma.convention == "none"
        kind = "raw e W^QK e^T" if raw else "T_ee"
        if n_maps > 1 and self.isVisible() and not self._tiles_ready(n_maps):
            self._draw_when_built = True  # drawn when its tiles are, one built per pass
            if not self._building:
                self._build_tiles(n_maps)
            return
        maps = self._grid_tiles(n_maps) if n_maps > 1 else [self._single_map()]
        if maps != self.maps:  # lay them out; the same items stay where they are
            view.clear()
            with laid_out_once(view.ci):
                for k, hm in enumerate(maps):
                    view.addItem(hm, row=k // cols, col=k % cols)
                maps[0].attach_colorbar(view.ci, 0, cols, rowspan=math.ceil(len(maps) / cols))
            self.maps = maps
        maps[0].set_colorbar_label(f"{kind}: {COLOUR_SIGN}")  # σ: in the title
        for k, (h, hm) in enumerate(zip(res.heads, maps)):
            if n_maps == 1:
                hm.setTitle(heatmap_title(res, h), size="10pt")
            else:
                hm.title.setText(f"head {h}")
            hm.set_matrix(res.values[k], res.labels, res.labels, levels)
        if n_maps > 1:
            view.ci.setToolTip(heatmap_title(res, None))
        self._mark_selection()
        self.status.setText(f"{len(res.tokens)} tokens · {kind} · hover a cell")

    def _single_map(self) -> Heatmap:
        if self.single is None:
            self.single = Heatmap(max_labels=60)
            self.single.setLabel("left", "query")
            self.single.setLabel("bottom", "key")
            self.single.cellClicked.connect(lambda r, c: self._cell_clicked(0, r, c))
        return self.single

    def _grid_tiles(self, n: int) -> list[HeatmapTile]:
        """n tiles for the all-heads grid (light items: no axes, no menus), and the first
        tile's colour bar."""
        while len(self.tiles) < n:
            self._add_tile()
        self.tiles[0].make_colorbar()
        return self.tiles[:n]

    def _add_tile(self) -> None:
        k, tile = len(self.tiles), HeatmapTile()
        tile.cellClicked.connect(lambda r, c, k=k: self._cell_clicked(k, r, c))
        self.tiles.append(tile)

    def _tiles_ready(self, n: int) -> bool:
        return len(self.tiles) >= n and self.tiles[0].colorbar is not None

    def _build_tiles(self, n: int) -> None:
        """Build the grid's n tiles (~6 ms each), then the first one's colour bar, one per
        event-loop pass after the window's paint, so that neither the request nor its
        result stalls the interface; then draw the result that waited for them, if any."""
        if len(self.tiles) < n:
            self._add_tile()
        elif not self._tiles_ready(n):
            self.tiles[0].make_colorbar()
        else:
            self._building = False
            if self._draw_when_built:
                self._draw_when_built = False
                self.draw(self.result)
            return
        self._building = True
        in_a_later_pass(partial(self._build_tiles, n), owner=self)

    def settled(self) -> bool:
        return not self._draw_when_built and super().settled()

    def _cell_clicked(self, k: int, r: int, c: int) -> None:
        self.state.set_head(self.heads[k])
        self.state.set_query_token(self.tokens[r])
        self.state.set_key_token(self.tokens[c])

    @Slot()
    def _mark_selection(self, *_) -> None:
        """The selected query's row and key's column (their cell when both are in the set),
        and in the grid the selected head's tile."""
        tokens = self.tokens
        q, k = self.state.query_token, self.state.key_token
        r = tokens.index(q) if q in tokens else -1
        c = tokens.index(k) if k in tokens else -1
        for h, hm in zip(self.heads, self.maps):
            hm.mark(r, c)
            if isinstance(hm, HeatmapTile):
                hm.set_selected(h == self.state.head)

    def _table(self):
        if self.values is None:
            return None
        import torch

        return heatmap_table(self.layer, torch.from_numpy(self.values), self.heads,
                             self.tokens, self.tokens)
