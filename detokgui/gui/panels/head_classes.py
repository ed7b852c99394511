"""The head-classification table (B4's "contextual circuit" criteria): every head with its
measured span, recent weight, self-rank and bias slope, and the class the first matching
rule gives; sortable, a click selects the head."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from detokgui.core.position_side import positional as m
from detokgui.gui.controls import wrapping_label
from detokgui.gui.head_table import HeadTable
from detokgui.gui.panels.base import StatusLine
from detokgui.gui.records import Column

LABEL_COLORS = {
    "duplicate-token": "#e8d5f5",
    "detokenization": "#d4ecd4",
    "contextual": "#d6e6f7",
    "other": "#f2f2f2",
}

#: (key in HeadClassification.rows(), header, tooltip, number format)
CLASS_COLUMNS = (
    ("head", "head", "Head index (0-based). Click a row to select the head.", "d"),
    ("label", "class", (
        "Class from the first rule that holds (hover for the reason):\n"
        f"duplicate-token: self in top {m.DUPLICATE_SELF_TOP_K} for ≥ "
        f"{m.DUPLICATE_MIN_SELF_FRACTION:.0%} of tokens;\n"
        f"detokenization: weight on the last {m.RECENT_WINDOW} positions ≥ "
        f"{m.DETOK_MIN_RECENT_WEIGHT};\n"
        f"contextual: effective span ≥ {m.CONTEXTUAL_MIN_SPAN_FRACTION:.0%} of n+1;\n"
        "other: none of these."), ""),
    ("span", "span", ("Effective attention span exp(entropy) of the pattern, in key "
                      "positions\n(mean over the sampled query tokens)"), ".4g"),
    ("span_fraction", "span / (n+1)", "Effective span as a fraction of the n+1 keys", ".3f"),
    ("mean_distance", "mean distance", ("Σ_j a_j (n − j): how far back the pattern looks,\n"
                                        "in positions"), ".4g"),
    ("recent_weight", f"last {m.RECENT_WINDOW}",
     f"Pattern weight on the last {m.RECENT_WINDOW} key positions (query included)", ".3f"),
    ("self_rank_median", "self-rank", ("Median rank of each sampled token u among all keys by\n"
                                       "T_ee(u, ·), from the token side (1 = attends most to "
                                       "itself)"), ".6g"),
    ("self_top_fraction", f"self in top {m.DUPLICATE_SELF_TOP_K}",
     (f"Fraction of sampled tokens that rank themselves in their top "
      f"{m.DUPLICATE_SELF_TOP_K} keys"), ".3f"),
    ("bias_slope", "bias slope", ("Least-squares slope of T_p(j) over j = 0..n per position\n"
                                  "(σ = vocabulary mean): > 0 favours recent keys"), ".4g"),
)


def _tip(row: dict) -> str:
    return f"head {row['head']}: {row['label']} — {row['reason']}"


COLUMNS = [
    Column(title, lambda r, k=key: r[k], fmt, tip, tooltip=_tip,
           background=(lambda r: LABEL_COLORS.get(r["label"])) if key == "label" else None)
    for key, title, tip, fmt in CLASS_COLUMNS]


class HeadClassesTable(QWidget):
    """The classification of a model's heads: rules, a "Classify heads" button (`classify`
    is emitted; the panel computes), the table, and its StatusLine."""

    headActivated = Signal(int)
    classify = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        self.label = wrapping_label("<b>Head classification</b>")
        row.addWidget(self.label, 1)
        self.button = QPushButton("Classify heads")
        self.button.setToolTip("Compute the head classification (a whole-vocabulary pass for "
                               "the self-ranks; cancellable)")
        self.button.clicked.connect(self.classify)
        row.addWidget(self.button)
        lay.addLayout(row)
        self.status = StatusLine()
        self.status.busyChanged.connect(lambda busy: self.button.setEnabled(not busy))
        lay.addWidget(self.status)
        # each column as wide as its header and values (nine equal stretched columns cut
        # "mean distance" to "ean distanc" in a 1024-pixel window)
        self.table = HeadTable(COLUMNS, "Measured per head; click a row to select the head, "
                                        "a header to sort")
        self.model = self.table.records()
        self.table.recordActivated.connect(lambda r: self.headActivated.emit(int(r["head"])))
        lay.addWidget(self.table, 1)

    def show_classes(self, res: m.HeadClassification | None) -> None:
        self.model.set_records(res.rows() if res is not None else ())
        if res is None:
            self.label.setText("<b>Head classification</b>")
            return
        self.label.setText(
            f"<b>Head classification</b> at n = {res.n}, mean over {len(res.tokens)} sampled "
            f"query tokens. Rules, first match wins: <i>duplicate-token</i> self in top "
            f"{m.DUPLICATE_SELF_TOP_K} ≥ {m.DUPLICATE_MIN_SELF_FRACTION:.0%}; "
            f"<i>detokenization</i> last-{m.RECENT_WINDOW} weight ≥ {m.DETOK_MIN_RECENT_WEIGHT}; "
            f"<i>contextual</i> span ≥ {m.CONTEXTUAL_MIN_SPAN_FRACTION:.0%} of n+1; else "
            "<i>other</i>.")

    def rows(self) -> list[dict]:
        """The table as a person sees it: one dict per row, column key -> text."""
        return [{key: self.model.index(r, c).data() for c, (key, *_) in enumerate(CLASS_COLUMNS)}
                for r in range(self.model.rowCount())]

    def mark_head(self, head: int) -> None:
        self.table.select_head(head)
