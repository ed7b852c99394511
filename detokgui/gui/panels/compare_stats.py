"""Compare (4): the head statistics (core.compare.head_metrics) of A's selected head next to its
match in B, with B - A; and both models' values of every matched pair."""

from __future__ import annotations

import math
from dataclasses import dataclass

from detokgui.core.base.numbers import num
from detokgui.core.compare import views as cv
from detokgui.core.compare.head_metrics import HEAD_METRICS, METRIC_LABELS, class_label
from detokgui.gui.panels.compare_base import ComparePanel
from detokgui.gui.records import Column, RecordsModel, TokenTableView


@dataclass(frozen=True)
class Request:
    serial: int
    compare_serial: int
    corpus: tuple[str, ...]


def _value(v) -> str:
    if isinstance(v, str):
        return v
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else num(v)


class CompareStatsPanel(ComparePanel):
    title = "Head statistics A vs B"
    view_name = "compare-stats"
    tooltip = "Per-head statistics of A's selected head next to its match in B"

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        lay = self.body_layout
        lay.addWidget(self.pair_text)

        def shown(r, side):
            v = r[f"value_{side}"]
            return class_label(v) if r["metric"] == "head_class" else v

        def tip(r):
            return METRIC_LABELS.get(r["metric"], r["metric"])

        self.table = TokenTableView(RecordsModel([
            Column("statistic", lambda r: r["metric"], tooltip=tip),
            Column("A", lambda r: shown(r, "a"), _value, numeric=True, tooltip=tip),
            Column("B", lambda r: shown(r, "b"), _value, numeric=True, tooltip=tip),
            Column("B − A", lambda r: "" if r["metric"] == "head_class" else r["difference"],
                   _value, numeric=True),
        ], token=None), tip="The statistics of the two heads (empty: needs a corpus)")
        lay.addWidget(self.table, 1)
        lay.addWidget(self.status)

    def request(self):
        s = self.state
        if s.pair is None:
            return None
        return Request(self.serial, s.compare_serial, s.corpus)

    @staticmethod
    def compute(pair, req: Request):
        return (yield from cv.iter_head_metrics_both(pair, req.corpus))

    def draw(self, res) -> None:
        self.heads_changed()

    def rows(self) -> list[dict]:
        s, res = self.state, self.result
        if res is None or s.head_b is None:
            return []
        names = [m for m in HEAD_METRICS if m in res[0] and m in res[1]]
        return cv.metric_pair_rows(res[0], res[1], s.head, s.head_b, names)

    def heads_changed(self) -> None:
        self.pair_text.setText(self.pair_label() or self.waiting_text())
        rows = self.rows()
        self.table.records().set_records(rows)
        if not rows:  # no result, or no head of B
            self.status.setText(self.waiting_text())
        else:
            self.status.setText(
                "Statistics from the weights" + (
                    "; the corpus metrics count the open corpus with each model's tokenizer"
                    if self.shown_request.corpus else
                    "; the corpus metrics are empty without a corpus (Corpus menu)"))

    matching_changed = heads_changed
