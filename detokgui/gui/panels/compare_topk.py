"""Compare (1): the top-k keys of the query token in A and in B side by side, for A's
selected head and its match in B, each key with its rank in the other model
(core.compare.views.side_by_side_topk)."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QSplitter

from detokgui.core.compare import views as cv
from detokgui.core.compare.pair_texts import MISSING
from detokgui.core.model.conventions import SigmaChoice
from detokgui.gui.controls import bare_column
from detokgui.gui.option_rows import STRETCH, OptionRow, option, spin
from detokgui.gui.panels.base import StatusLine
from detokgui.gui.panels.compare_base import ComparePanel
from detokgui.gui.records import Column, RecordsModel, TokenTableView
from detokgui.gui.sigma_controls import SigmaControls

MISSING_IN_A = "missing in A"
OWN_RANK_BACKGROUND = "#e4f1e4"  # a key ranked the same in both models


@dataclass(frozen=True)
class Options:
    k: int = option(10, spin(1, 200, "How many keys to rank in each model", label="k"))


@dataclass(frozen=True)
class GridRequest:
    serial: int
    compare_serial: int
    query: int
    assignment: tuple
    k: int
    sigma: SigmaChoice


@dataclass(frozen=True)
class Request:
    serial: int
    compare_serial: int
    query: int
    head_a: int
    head_b: int
    k: int
    sigma: SigmaChoice


class CompareTopKPanel(ComparePanel):
    title = "Top-k A vs B"
    view_name = "compare-topk"
    tooltip = ("The query token's top-k keys in A and in B side by side for a matched pair "
               "of heads, with each key's rank in the other model")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        lay = self.body_layout
        self.options = OptionRow("comparetopk", Options, self)
        lay.addLayout(self.options.row(self.pair_text, STRETCH, ("k", SigmaControls(state))))
        text_a, text_b = state.token_text, state.token_text_b
        self.table = TokenTableView(RecordsModel([
            Column("rank", lambda r: r["rank"], "d"),
            Column("A key", lambda r: "" if r["key_a"] is None else text_a(r["key_a"]),
                   token=lambda r: r["key_a"], tip="A's r-th key for the query (click: select "
                   "it as the key token)"),
            Column("A score", lambda r: r["score_a"], _score),
            Column("its rank in B", lambda r: cv.other_rank(r, "a", MISSING), numeric=True,
                   tip="1 + the number of B's keys scoring higher for the query's token in B",
                   background=lambda r: OWN_RANK_BACKGROUND
                   if r["rank_a_in_other"] == r["rank"] else None),
            Column("B key", lambda r: "" if r["key_b"] is None else text_b(r["key_b"]),
                   token=lambda r: r["key_b_in_other"],
                   tip="B's r-th key for the query's token in B (click: select its token in "
                   "A as the key token)"),
            Column("B score", lambda r: r["score_b"], _score),
            Column("its rank in A", lambda r: cv.other_rank(r, "b", MISSING_IN_A), numeric=True,
                   background=lambda r: OWN_RANK_BACKGROUND
                   if r["rank_b_in_other"] == r["rank"] else None),
        ], token=lambda r: r["key_a"]), stretch=None,
            tip="Click a key to select it as the key token")
        self.grid_pairs: list[tuple[int, int]] = []  # the pair of each grid column
        split = QSplitter(Qt.Horizontal)
        left, ll = bare_column()
        grid_label = QLabel("<b>Every assigned pair</b> (“no match”: no more alike than "
                            "unrelated heads) — click a column to select its pair")
        ll.addWidget(grid_label)
        self.grid = TokenTableView(RecordsModel([]), stretch=None,
                                   tip="Top-k keys of A's head and of its match in B, "
                                       "side by side. Click a cell to select that pair")
        ll.addWidget(self.grid, 1)
        self.grid_status = StatusLine()
        ll.addWidget(self.grid_status)
        split.addWidget(left)
        right, rl = bare_column()
        self.detail_label = QLabel("<b>The selected pair</b>, each key ranked in the other "
                                   "model")
        rl.addWidget(self.detail_label)
        for label in (grid_label, self.detail_label):  # wrapped, not widening the window
            label.setWordWrap(True)
            label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        rl.addWidget(self.table, 1)
        split.addWidget(right)
        split.setSizes([560, 560])
        lay.addWidget(split, 1)
        lay.addWidget(self.status)
        self.add_channel("grid", self._grid_request, self._grid_compute, self._draw_grid,
                         status=self.grid_status, label="Top-k of every matched pair")
        self.grid.clicked.connect(self._grid_clicked)
        self.table.tokenActivated.connect(lambda t, _shift: state.set_key_token(t))
        state.keyTokenChanged.connect(self.when_visible(self._mark_key))
        self.options.changed.connect(self.refresh)

    def _grid_request(self):
        s = self.state
        if s.pair is None or s.matching is None or s.query_token < 0:
            return None
        return GridRequest(self.serial, s.compare_serial, s.query_token,
                           tuple(sorted(map(tuple, s.matching.assignment))),
                           self.options.value.k, s.sigma)

    @staticmethod
    def _grid_compute(pair, req: GridRequest) -> cv.MatchedTopK:
        return cv.matched_topk(pair, req.query, req.assignment, req.k, req.sigma)

    def _draw_grid(self, res: cv.MatchedTopK | None) -> None:
        if res is None:
            self.grid.records().set_records(())
            self.grid_status.setText(" ")
            return
        text_a, text_b = self.state.token_text, self.state.token_text_b
        columns = [Column("rank", lambda r: r + 1, "d")]
        for p, (a, b) in enumerate(res.pairs):
            columns.append(Column(f"A {a}", lambda r, p=p: text_a(res.ids_a[p][r]),
                                  token=lambda r, p=p: res.ids_a[p][r],
                                  background=lambda _r, a=a: self._pair_background(a)))
            if res.ids_b is not None:
                columns.append(Column(f"B {b}" if self._matched(a, b) else f"B {b} (no match)",
                                      lambda r, p=p: text_b(res.ids_b[p][r]),
                                      token=lambda r, p=p: self.state.pair.token_in_a(
                                          res.ids_b[p][r]) if self.state.pair else None,
                                      background=lambda _r, a=a: self._pair_background(a)))
        self.grid.records().set_records(range(len(res.ids_a[0]) if res.ids_a else 0), columns)
        self.grid_pairs = [pair for pair in res.pairs
                           for _ in range(1 if res.ids_b is None else 2)]
        matched = sum(self._matched(a, b) for a, b in res.pairs)
        self.grid_status.setText(
            f"{len(res.pairs)} assigned pairs, {matched} matched"
            + ("" if res.ids_b is not None else f"; the query is {MISSING}"))

    def heads_changed(self) -> None:
        self.grid.viewport().update()  # its background marks A's head

    def _matched(self, head_a: int, head_b: int) -> bool:
        """Whether the matching shown pairs the two heads above the no-match threshold."""
        m = self.state.matching
        return (m is not None and head_a < m.shape[0] and head_b < m.shape[1]
                and m.is_matched(head_a, head_b))

    def _pair_background(self, head_a: int) -> str | None:
        return "#fff3c4" if head_a == self.state.head else None

    def _grid_clicked(self, index) -> None:
        pairs = self.grid_pairs
        if 0 < index.column() <= len(pairs):
            self.state.set_head_pair(*pairs[index.column() - 1])

    def request(self):
        s = self.state
        if not self.ready() or s.query_token < 0:
            return None
        return Request(self.serial, s.compare_serial, s.query_token, s.head, s.head_b,
                       self.options.value.k, s.sigma)

    @staticmethod
    def compute(pair, req: Request) -> cv.SideBySideTopK:
        return cv.side_by_side_topk(pair, req.query, req.head_a, req.head_b, req.k, req.sigma)

    def draw(self, res: cv.SideBySideTopK | None) -> None:
        self.pair_text.setText(self.pair_label())
        if res is None:
            self.table.records().set_records(())
            self.status.setText(self.waiting_text() if self.state.query_token >= 0
                                else "Select a query token in the Tokens panel.")
            return
        self.table.records().set_records(res.rows())
        self._mark_key()
        same = sum(rank is not None and rank <= res.k for rank in res.a.rank_in_other)
        if res.b.query is None:
            self.status.setText(f"The query {self.state.token_text(res.a.query)} is "
                                f"{MISSING}: only A's keys are shown (–: no ranking in B; "
                                f"'{MISSING}': B lacks the key too).")
        else:
            self.status.setText(f"{same} of A's top {len(res.a.keys)} keys are in B's top "
                                f"{res.k} · {res.sigma.label()} · green: same rank in both")

    def _mark_key(self) -> None:
        """The selected key token's row (A's keys) highlighted."""
        self.table.select_token(self.state.key_token)


def _score(value) -> str:
    return "" if value is None else f"{value:.4f}"
