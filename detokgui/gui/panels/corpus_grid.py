"""The base of the text panels that plot per-head curves over positions computed on
corpus texts (C2 Empirical, C3 KL)."""

from __future__ import annotations

import pyqtgraph as pg

from detokgui.core.model.terms import TERM_NAMES
from detokgui.gui.head_controls import state_heads
from detokgui.gui.option_rows import OptionRow
from detokgui.gui.panels.base import Panel
from detokgui.gui.plots import PlotFrame
from detokgui.gui.position import connect_position_clicks
from detokgui.gui.small_multiples import SmallMultiples
from detokgui.gui.terms import TERM_COLORS


class CorpusGridPanel(Panel):
    """A panel of per-head plots over positions computed on corpus texts (C2, C3): one
    PlotFrame of small multiples (`add_series` gives it its series, one curve item
    each for every head), hover text from `describe(head, position)`, a click that
    chooses the query position."""

    frame_name = "plot"
    x_label = "key position j"
    empty_names_input = True

    def add_options(self, layout, name: str, options, *groups) -> None:
        """`self.options` (its heads chooser `self.heads_box`) as a row of `groups` in
        `layout`; a change computes anew where the request changes, else redraws."""
        self.options = OptionRow(name, options, self)
        self.heads_box = self.options.widget("heads")
        layout.addLayout(self.options.row(*groups))
        self.options.changed.connect(self.refresh)
        self.options.changed.connect(self.redraw)

    def shown_rows(self, heads: list[int]) -> tuple[list[int], list[int]]:
        """The chosen heads among the computed `heads`, and their places in it."""
        shown = [h for h in state_heads(self.options.value.heads, self.state) if h in heads]
        return shown, [heads.index(h) for h in shown]

    def add_grid(self, layout, tip: str) -> None:
        self.frame = PlotFrame(self.frame_name, self.table, analysis=self.view_name)
        self.grid = SmallMultiples(self.frame, self.state, x_label=self.x_label)
        self.add_series(self.grid)
        layout.addWidget(self.frame, 1)
        self.status.setToolTip(tip)
        layout.addWidget(self.status)
        scene = self.frame.view.scene()
        connect_position_clicks(scene, lambda p: self.grid.position(p, self.n_positions()),
                                self.state.set_query_position)
        scene.sigMouseMoved.connect(self._hover)

    def add_series(self, grid: SmallMultiples) -> None:
        """The grid's series: by default one curve per term, in the terms' colours."""
        for t in TERM_NAMES:
            grid.add_series(t, pg.mkPen(TERM_COLORS[t], width=1))

    def describe(self, head: int, position: int) -> str:
        raise NotImplementedError

    def table(self):
        raise NotImplementedError

    def n_positions(self) -> int:
        return self.layer.n_positions if self.layer is not None else 0

    def draw_nothing(self, what: str) -> None:
        """No result: with a model, say that a corpus is needed to `what`, or that it is
        being done (`Panel.empty_message`)."""
        self.grid.set_heads([])
        self.grid.set_title(self.empty_message(
            f"Choose a corpus (Corpus menu) to {what}.",
            f"Reading the corpus's texts to {what}… (progress and Cancel in the status bar)"))
        self.clear_empty_status()

    def _hover(self, pos) -> None:
        res = self.result
        hit = self.grid.position_at(pos, self.n_positions())
        if res is not None and hit is not None and hit[0] in res.heads:
            self.status.setText(self.describe(*hit))


