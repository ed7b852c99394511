"""Tables of records: a lazy model described by its columns, and a view of token rows.

`RecordsModel(columns)` shows any sequence of records (tuples, dicts, dataclasses, ids):
each `Column` says how to get a cell's value from a record and how to format it. Nothing
is built per row: Qt asks only for the cells it paints, so a table of the whole
vocabulary costs what a table of ten rows does. Sorting is the model's own (one key per
record, numpy when the keys are numbers), and token ids and sort keys live in their own
item roles (`ID_ROLE`, `SORT_ROLE`), never parsed back from the display text.

`TokenTableView` is a table of token rows: a click emits `tokenActivated(id, as_key)`
(Shift+click or the context menu: as the key token).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal, Slot
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QAbstractItemView, QApplication, QHeaderView, QMenu, QTableView
from superqt.utils import signals_blocked

SORT_ROLE = Qt.UserRole
ID_ROLE = Qt.UserRole + 1
RIGHT = int(Qt.AlignRight | Qt.AlignVCenter)
# data() and headerData() run for every painted cell and role: compare with these
# constants, not Qt.DisplayRole and the like (PySide6 resolves each such short enum
# name on every access, 3-17 µs, a third of a top-k table's repaint).
_DISPLAY = Qt.ItemDataRole.DisplayRole
_ALIGN = Qt.ItemDataRole.TextAlignmentRole
_TIP = Qt.ItemDataRole.ToolTipRole
_BACKGROUND = Qt.ItemDataRole.BackgroundRole
_HORIZONTAL = Qt.Orientation.Horizontal
_ROLES = frozenset({_DISPLAY, SORT_ROLE, ID_ROLE, _ALIGN, _TIP, _BACKGROUND})


@dataclass(frozen=True)
class Column:
    """One column: `value(record)` is the cell's value and sort key; `fmt` formats it
    (a format spec such as ".4g", or a function value -> text; "" = str). Optional:
    `token(record)` the token id of the cell (else the row's), `tip` the header tooltip,
    `tooltip(record)` and `background(record)` (a colour name or None) per cell."""

    title: str
    value: Callable[[Any], Any]
    fmt: str | Callable[[Any], str] = ""
    tip: str = ""
    token: Callable[[Any], int] | None = None
    tooltip: Callable[[Any], str] | None = None
    background: Callable[[Any], str | None] | None = None
    numeric: bool | None = None  # right-aligned; default: when `fmt` is a format spec

    def text(self, value) -> str:
        if callable(self.fmt):
            return self.fmt(value)
        if isinstance(value, float) and math.isnan(value):
            return ""
        return format(value, self.fmt) if self.fmt else str(value)

    @property
    def right(self) -> bool:
        if self.numeric is not None:
            return self.numeric
        return isinstance(self.fmt, str) and bool(self.fmt)


def _sort_key(value):
    if isinstance(value, float) and math.isnan(value):
        return -math.inf  # NaN sorts as the smallest number
    return value


class RecordsModel(QAbstractTableModel):
    """Rows = records in the current order (sorted, filtered); columns = `columns`.
    `token(record)` gives a row's token id (the ID_ROLE of cells without their own)."""

    def __init__(self, columns: Sequence[Column], token: Callable[[Any], int] | None = None,
                 parent=None):
        super().__init__(parent)
        self.columns = list(columns)
        self.token = token
        self.records: Sequence = ()
        self.order: np.ndarray = np.zeros(0, dtype=np.int64)  # view row -> record index
        self._order: list[int] = []  # the same as a list: faster to index one at a time
        self._rows: np.ndarray | None = None  # record index -> view row (-1: filtered out)
        self.sorted_by: tuple[int, Qt.SortOrder] | None = None
        self.keep: Callable[[Any], bool] | None = None
        self._brushes: dict[str, QColor] = {}
        self._tokens: np.ndarray | None = None  # row token of each record, when asked for

    # ------------------------------------------------------------------ content

    def set_records(self, records: Sequence, columns: Sequence[Column] | None = None) -> None:
        """Show these records (kept as given, not copied), sorted and filtered as before;
        with `columns`, in these columns (unsorted)."""
        self.beginResetModel()
        self.records = records if records is not None else ()
        if columns is not None:
            self.columns = list(columns)
            self.sorted_by = None
        self._tokens = None
        self._arrange()
        self.endResetModel()

    def set_filter(self, keep: Callable[[Any], bool] | None) -> None:
        """Show only the records for which keep(record) is true (None: all)."""
        with self._rearranging():
            self.keep = keep

    def record(self, row: int):
        return self.records[self._order[row]]

    def row_of_record(self, index: int) -> int:
        """The view row of records[index], -1 when it is filtered out (or out of range)."""
        if self._rows is None:  # once per arrangement: callers ask for many records
            self._rows = np.full(len(self.records), -1, dtype=np.int64)
            self._rows[self.order] = np.arange(len(self.order), dtype=np.int64)
        return int(self._rows[index]) if 0 <= index < len(self._rows) else -1

    def token_at(self, row: int, column: int | None = None) -> int:
        """The token id of a cell (of the row when `column` is None); -1 when none."""
        if not 0 <= row < len(self.order):
            return -1
        rec = self.record(row)
        col = self.columns[column] if column is not None else None
        if col is not None and col.token is not None:
            return int(col.token(rec))
        return int(self.token(rec)) if self.token is not None else -1

    def row_of_token(self, token: int) -> int:
        """The first view row whose row token is `token`, -1 when none."""
        if self.token is None or not len(self.order):
            return -1
        if self._tokens is None:  # once per set of records
            self._tokens = np.fromiter((self.token(r) for r in self.records), dtype=np.int64,
                                       count=len(self.records))
        hits = np.flatnonzero(self._tokens[self.order] == token)
        return int(hits[0]) if hits.size else -1

    def _arrange(self) -> None:
        recs = self.records
        idx = (np.arange(len(recs), dtype=np.int64) if self.keep is None else
               np.array([i for i, r in enumerate(recs) if self.keep(r)], dtype=np.int64))
        if self.sorted_by is not None and idx.size:
            col, order = self.sorted_by
            keys = [_sort_key(self.columns[col].value(recs[int(i)])) for i in idx]
            try:
                arr = np.asarray(keys, dtype=np.float64)
                perm = np.argsort(arr, kind="stable")
            except (TypeError, ValueError):
                perm = np.array(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)
            if order == Qt.DescendingOrder:
                perm = perm[::-1]
            idx = idx[perm]
        self.order = idx
        self._order = idx.tolist()
        self._rows = None

    @contextmanager
    def _rearranging(self):
        """Arrange the records again after the body, the persistent indices (selection,
        current cell) following their records."""
        self.layoutAboutToBeChanged.emit()
        old = [(p, int(self.order[p.row()]) if 0 <= p.row() < len(self.order) else -1)
               for p in self.persistentIndexList()]
        yield
        self._arrange()
        for p, rec in old:
            row = self.row_of_record(rec) if rec >= 0 else -1
            self.changePersistentIndex(p, self.index(row, p.column()) if row >= 0
                                       else QModelIndex())
        self.layoutChanged.emit()

    # ------------------------------------------------------------------ Qt model

    def rowCount(self, parent=None):
        return 0 if parent is not None and parent.isValid() else len(self.order)

    def columnCount(self, parent=None):
        return 0 if parent is not None and parent.isValid() else len(self.columns)

    def headerData(self, section, orientation, role=_DISPLAY):
        if orientation != _HORIZONTAL or not 0 <= section < len(self.columns):
            return None
        if role == _DISPLAY:
            return self.columns[section].title
        if role == _TIP:
            return self.columns[section].tip or None
        return None

    def data(self, index, role=_DISPLAY):
        # Qt asks each painted cell for a dozen roles: answer the unused ones at once.
        if role not in _ROLES or not index.isValid():
            return None
        col = self.columns[index.column()]
        if role == _ALIGN:
            return RIGHT if col.right else None
        if (role == _TIP and col.tooltip is None) or (
                role == _BACKGROUND and col.background is None):
            return None
        rec = self.record(index.row())
        if role == _DISPLAY:
            return col.text(col.value(rec))
        if role == SORT_ROLE:
            return _sort_key(col.value(rec))
        if role == ID_ROLE:
            tid = self.token_at(index.row(), index.column())
            return tid if tid >= 0 else None
        if role == _TIP:
            return col.tooltip(rec)
        if role == _BACKGROUND:
            name = col.background(rec)
            if name:
                return self._brushes.setdefault(name, QColor(name))
        return None

    def sort(self, column: int, order=Qt.AscendingOrder) -> None:
        if not 0 <= column < len(self.columns):
            return
        with self._rearranging():
            self.sorted_by = (column, Qt.SortOrder(order))

    def text(self, row: int, column: int) -> str:
        """A cell's display text (what data() gives, without a QModelIndex)."""
        col = self.columns[column]
        return col.text(col.value(self.record(row)))

    def texts(self, column: int) -> list[str]:
        """A column's cells as a person reads them, top to bottom."""
        return [self.index(r, column).data() for r in range(self.rowCount())]


def fit_columns(view: QTableView, rows: int = 40, stretch: int | None = None) -> None:
    """Size the columns to their header and the display text of the first `rows` rows.

    Qt's ResizeToContents would measure every cell (up to 1000 rows) with a dozen data()
    calls each at every reset and relayout; this asks for one role of a screenful."""
    model = view.model()
    header = view.horizontalHeader()
    fm = view.fontMetrics()
    n = model.rowCount()
    pad = 2 * view.style().pixelMetric(view.style().PixelMetric.PM_FocusFrameHMargin) + 12
    for c in range(model.columnCount()):
        title = str(model.headerData(c, Qt.Horizontal) or "")
        width = fm.horizontalAdvance(title) + 24  # the sort indicator
        for r in range(min(n, rows)):
            text = model.text(r, c) if isinstance(model, RecordsModel) else model.index(r, c).data()
            if text:
                width = max(width, fm.horizontalAdvance(text) + pad)
        if c == stretch:
            header.setSectionResizeMode(c, QHeaderView.Stretch)
        else:
            header.setSectionResizeMode(c, QHeaderView.Interactive)
            header.resizeSection(c, width)


def fit_columns_on_reset(view: QTableView) -> None:
    """Fit the columns now and whenever the model is reset or its columns change; the
    view's `stretch` column, if it has one (negative: from the right), fills the rest."""
    def fit(*_):
        n = view.model().columnCount()
        s = getattr(view, "stretch", None)
        fit_columns(view, stretch=(s % n) if (s is not None and n) else None)

    view.model().modelReset.connect(fit)
    fit()


class TokenTableView(QTableView):
    """A table of token rows. Click: `tokenActivated(id, False)`; Shift+click or the
    context menu's "as key token": `tokenActivated(id, True)`."""

    tokenActivated = Signal(int, bool)  # token id, as key token

    def __init__(self, model: RecordsModel, *, sortable: bool = False, stretch: int = -1,
                 parent=None,
                 tip: str = "Click: select as query token. Shift+click: select as key token."):
        super().__init__(parent)
        self.setModel(model)
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.setSelectionMode(QAbstractItemView.SingleSelection)
        self.verticalHeader().hide()
        self.verticalHeader().setDefaultSectionSize(22)
        self.stretch = stretch
        self.horizontalHeader().setMinimumSectionSize(36)
        fit_columns_on_reset(self)
        if sortable:
            self.setSortingEnabled(True)
        self.setToolTip(tip)
        self.setContextMenuPolicy(Qt.CustomContextMenu)
        self.customContextMenuRequested.connect(self._menu)
        self.clicked.connect(self._clicked)

    def records(self) -> RecordsModel:
        return self.model()

    def token_at(self, row: int, column: int | None = None) -> int:
        return self.model().token_at(row, column)

    def token_ids(self) -> list[int]:
        """The rows' token ids, top to bottom."""
        m = self.model()
        return [m.token_at(r) for r in range(m.rowCount())]

    def select_token(self, token: int) -> None:
        """Highlight the first row of `token` (none when absent) without emitting."""
        row = self.model().row_of_token(token)
        with signals_blocked(self.selectionModel()):
            self.clearSelection()
            if row >= 0:
                self.selectRow(row)
                self.scrollTo(self.model().index(row, 0))
        self.viewport().update()

    @Slot(QModelIndex)
    def _clicked(self, index: QModelIndex) -> None:
        tid = index.data(ID_ROLE)
        if tid is not None:
            shift = bool(QApplication.keyboardModifiers() & Qt.ShiftModifier)
            self.tokenActivated.emit(int(tid), shift)

    def _menu(self, pos) -> None:
        index = self.indexAt(pos)
        tid = index.data(ID_ROLE) if index.isValid() else None
        if tid is None:
            return
        tid = int(tid)
        menu = QMenu(self)
        menu.addAction("Select as query token", lambda: self.tokenActivated.emit(tid, False))
        menu.addAction("Select as key token", lambda: self.tokenActivated.emit(tid, True))
        menu.addAction("Copy id", lambda: QApplication.clipboard().setText(str(tid)))
        menu.popup(self.viewport().mapToGlobal(pos))


def select_row_token(state, as_key_default: bool) -> Callable[[int, bool], None]:
    """A tokenActivated slot: a click selects the row's token as the query token (the key
    token when `as_key_default`), Shift+click the other one."""
    def select(tid: int, shift: bool) -> None:
        (state.set_key_token if shift != as_key_default else state.set_query_token)(tid)
    return select
