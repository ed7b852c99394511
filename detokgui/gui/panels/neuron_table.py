"""Part of the B6 neuron browser: the table of the position embedding's dimensions (one
row per dimension k: L2 norm, slope, R², FFT period, group), sortable, filtered by group,
several rows selectable."""

from __future__ import annotations

import itertools

from PySide6.QtCore import QItemSelection, QItemSelectionModel, Qt, Signal, Slot
from PySide6.QtWidgets import QAbstractItemView, QTableView
from superqt.utils import signals_blocked

from detokgui.core.position_side import neurons
from detokgui.core.position_side.neurons import GROUP_RULES, describe_dim, period_text, slope_text
from detokgui.gui.records import Column, RecordsModel, fit_columns_on_reset

COL_DIM, COL_NORM, COL_SLOPE, COL_R2, COL_PERIOD, COL_GROUP = range(6)
GROUP_COLORS = {"linear": "#dbe9f6", "periodic": "#fde3c8", "other": None}


class NeuronTable(QTableView):
    """The dimensions of P (records = dims k, values read from `stats`). `dimsSelected`
    gives the selected dims in table order whenever the selection changes."""

    dimsSelected = Signal(list)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.stats: neurons.NeuronStats | None = None
        self.records = RecordsModel(self._columns(), parent=self)
        self.setModel(self.records)
        self.setSortingEnabled(True)
        self.sortByColumn(COL_NORM, Qt.DescendingOrder)
        self.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.verticalHeader().hide()
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.verticalHeader().setDefaultSectionSize(22)
        self.horizontalHeader().setStretchLastSection(True)
        self.horizontalHeader().setMinimumSectionSize(44)
        fit_columns_on_reset(self)
        self.setToolTip("Click a header to sort; select several rows (Ctrl/Shift-click) "
                        "to overlay their curves")
        self.selectionModel().selectionChanged.connect(self._selection_changed)

    def _columns(self) -> list[Column]:
        def arr(name):
            return lambda k: float(getattr(self.stats, name)[k])

        return [
            Column("dim", lambda k: int(k), "d", "Residual dimension k (0-based)"),
            Column("norm", arr("norm"), ".4g",
                   "L2 norm of the curve over all positions: sqrt(Σ_j y_j²)"),
            Column("slope", arr("slope"), slope_text,
                   "Least-squares slope of the curve, per position", numeric=True),
            Column("R²", arr("r2"), ".3f",
                   "R² of the least-squares line (blank for a constant curve)"),
            Column("period", arr("period"), period_text,
                   "Dominant period L / f of the FFT of the mean-removed curve, in positions "
                   "(f = strongest non-DC frequency)", numeric=True),
            Column("group", lambda k: self.stats.group[k], "", GROUP_RULES,
                   background=lambda k: GROUP_COLORS.get(self.stats.group[k]),
                   tooltip=lambda k: describe_dim(self.stats, k)),
        ]

    def set_stats(self, stats: neurons.NeuronStats | None) -> None:
        """Show these statistics, keeping the selected dims as far as they are shown."""
        keep = self.selected()
        self.stats = stats
        self.records.set_records(range(len(stats.group)) if stats is not None else ())
        self.select_dims([k for k in keep if self.row_of(k) >= 0] or self.default_dims())

    def set_group(self, group: str) -> None:
        """Show one group ("all": every dim), keeping the selection as far as it is shown."""
        keep = self.selected()
        self.records.set_filter(
            None if group == "all" else (lambda k: self.stats.group[k] == group))
        self.select_dims([k for k in keep if self.row_of(k) >= 0] or self.default_dims())

    def row_of(self, dim: int) -> int:
        """The table row showing `dim`, -1 when it is filtered out (or no table yet)."""
        return self.records.row_of_record(dim) if self.stats is not None else -1

    def dim_at_row(self, row: int) -> int:
        return int(self.records.record(row))

    def default_dims(self, n: int = 5) -> list[int]:
        """The n highest-norm dims of the shown group."""
        if self.stats is None:
            return []
        shown = (int(k) for k in self.stats.order("norm") if self.row_of(int(k)) >= 0)
        return list(itertools.islice(shown, n))

    def selected(self) -> list[int]:
        rows = sorted(i.row() for i in self.selectionModel().selectedRows())
        return [self.dim_at_row(r) for r in rows]

    def select_dims(self, dims) -> None:
        """Select exactly these dimensions' rows (those the filter shows); `dimsSelected`
        is emitted once, also when the selection did not change."""
        sel = QItemSelection()
        last = self.records.columnCount() - 1
        rows = [r for r in (self.row_of(int(k)) for k in dims) if r >= 0]
        for r in rows:
            sel.select(self.records.index(r, 0), self.records.index(r, last))
        with signals_blocked(self.selectionModel()):
            self.selectionModel().select(
                sel, QItemSelectionModel.ClearAndSelect | QItemSelectionModel.Rows)
        self.viewport().update()
        if rows:
            self.scrollTo(self.records.index(min(rows), 0))
        self._selection_changed()

    @Slot()
    def _selection_changed(self, *_) -> None:
        self.dimsSelected.emit(self.selected())
