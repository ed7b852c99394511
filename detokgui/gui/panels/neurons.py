"""B6 Position-embedding neuron browser ("layer 0 by hand"): every residual dimension k of
the position embedding P as a curve P[:, k] over positions, a sortable table of the
dimensions (L2 norm, linear-fit slope and R², dominant FFT period, group), the selected
dimensions overlaid, and how much the position-heavy dimensions overlap the token
embedding's top SVD directions."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import (
    QAbstractTableModel,
    QItemSelection,
    QItemSelectionModel,
    QRegularExpression,
    QSettings,
    QSortFilterProxyModel,
    Qt,
    QTimer,
    Slot,
)
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from detokgui.core import neurons
from detokgui.core.neurons import (
    LINEAR_MIN_R2,
    NEURON_GROUPS,
    PERIODIC_MIN_CYCLES,
    PERIODIC_MIN_PEAK_SHARE,
)
from detokgui.core.tables import (
    embedding_overlap_table,
    neuron_curves_table,
    neurons_table,
    write_csv,
)
from detokgui.gui.panels.base import Panel
from detokgui.gui.plots import PlotFrame, failure_message, head_color

COLUMNS = ("dim", "norm", "slope", "R²", "period", "group")
COL_DIM, COL_NORM, COL_SLOPE, COL_R2, COL_PERIOD, COL_GROUP = range(len(COLUMNS))
SORT_ROLE = Qt.UserRole
DEFAULT_SELECTION = 5  # top dims by norm shown when nothing is selected
MAX_CURVES = 64  # drawn at most; the rest of a larger selection is listed as left out
MAX_LEGEND = 12
OVERLAP_DEBOUNCE_MS = 250
GROUP_COLORS = {"linear": "#dbe9f6", "periodic": "#fde3c8", "other": None}

GROUP_RULES = (
    "Groups (first match wins; thresholds in detokgui/core/neurons.py):\n"
    f"  linear — the least-squares line explains R² ≥ {LINEAR_MIN_R2:g} of the variance;\n"
    f"  periodic — dominant FFT frequency ≥ {PERIODIC_MIN_CYCLES} cycles over the L positions\n"
    f"      and ≥ {PERIODIC_MIN_PEAK_SHARE:g} of the non-DC power in that bin and its two "
    "neighbours;\n"
    "  other — everything else."
)
HEADER_TIPS = (
    "Residual dimension k (0-based)",
    "L2 norm of the curve over all positions: sqrt(Σ_j y_j²)",
    "Least-squares slope of the curve, per position",
    "R² of the least-squares line (blank for a constant curve)",
    ("Dominant period L / f of the FFT of the mean-removed curve, in positions "
     "(f = strongest non-DC frequency)"),
    GROUP_RULES,
)


def _fmt_period(p: float) -> str:
    return "∞" if not math.isfinite(p) else f"{p:.1f}"


def _legend(columns: int = 1) -> pg.LegendItem:
    """A legend for a cell of a GraphicsLayout. pyqtgraph makes legends ignore transformations
    (to float unscaled over a plot); in a layout that only keeps them small in a 2x PNG."""
    leg = pg.LegendItem(labelTextSize="8pt", colCount=columns, frame=False)
    leg.setFlag(leg.GraphicsItemFlag.ItemIgnoresTransformations, False)
    return leg


class NeuronTableModel(QAbstractTableModel):
    """One row per dimension k (source row = k). DisplayRole: formatted text;
    SORT_ROLE: the number (NaN as -inf) so sorting is numeric."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.stats: neurons.NeuronStats | None = None

    def set_stats(self, stats: neurons.NeuronStats | None) -> None:
        self.beginResetModel()
        self.stats = stats
        self.endResetModel()

    def rowCount(self, parent=None):
        if (parent is not None and parent.isValid()) or self.stats is None:
            return 0
        return len(self.stats.group)

    def columnCount(self, parent=None):
        return 0 if parent is not None and parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation == Qt.Horizontal:
            if role == Qt.DisplayRole:
                return COLUMNS[section]
            if role == Qt.ToolTipRole:
                return HEADER_TIPS[section]
        return None

    def value(self, k: int, col: int):
        st = self.stats
        if col == COL_DIM:
            return k
        if col == COL_GROUP:
            return st.group[k]
        arr = {COL_NORM: st.norm, COL_SLOPE: st.slope, COL_R2: st.r2, COL_PERIOD: st.period}[col]
        return float(arr[k])

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid() or self.stats is None:
            return None
        k, col = index.row(), index.column()
        v = self.value(k, col)
        if role == Qt.DisplayRole:
            if col in (COL_DIM, COL_GROUP):
                return str(v)
            if math.isnan(v):
                return ""
            if col == COL_PERIOD:
                return _fmt_period(v)
            if col == COL_R2:
                return f"{v:.3f}"
            if col == COL_SLOPE:
                return f"{v:.2e}" if v != 0 and not 1e-3 <= abs(v) < 1e3 else f"{v:.4g}"
            return f"{v:.4g}"
        if role == SORT_ROLE:
            if isinstance(v, float) and math.isnan(v):
                return -math.inf
            return v
        if role == Qt.TextAlignmentRole and col != COL_GROUP:
            return int(Qt.AlignRight | Qt.AlignVCenter)
        if role == Qt.BackgroundRole and col == COL_GROUP:
            color = GROUP_COLORS.get(v)
            return QColor(color) if color else None
        if role == Qt.ToolTipRole:
            st = self.stats
            return (f"dim {k}: norm {st.norm[k]:.6g}, slope {st.slope[k]:.6g}, "
                    f"R² {st.r2[k]:.4f}\nperiod {_fmt_period(float(st.period[k]))} positions "
                    f"(f = {int(st.frequency[k])} cycles, peak share {st.peak_share[k]:.2f})\n"
                    f"group {st.group[k]}")
        return None


class NeuronBrowserPanel(Panel):
    title = "PE neurons"
    view_name = "neurons"
    tooltip = ("Position-embedding dimensions as curves over positions: fits, periods, groups "
               "and their overlap with the token embedding's SVD directions (B6)")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        self.settings = QSettings()
        self.stats: neurons.NeuronStats | None = None
        self.curves: np.ndarray | None = None  # [L, d] as drawn (raw or scaled)
        self.overlap: neurons.EmbeddingOverlap | None = None
        self.stats_request = None
        self.overlap_request = None
        self.selected: list[int] = []  # dims selected in the table, in table order
        self.drawn: list[int] = []  # dims whose curves are on the plot
        self.curve_items: dict[int, pg.PlotDataItem] = {}
        self.fit_items: list[pg.PlotDataItem] = []
        self._selecting = False
        lay = QVBoxLayout(self)

        # ---- controls shared by the table and both plots
        row = QHBoxLayout()
        row.addWidget(QLabel("Group"))
        self.group = QComboBox()
        self.group.addItem("all", "all")
        for g in NEURON_GROUPS:
            self.group.addItem(g, g)
        self.group.setToolTip("Show only the dimensions of one group in the table.\n\n"
                              + GROUP_RULES)
        row.addWidget(self.group)
        self.scaled = QCheckBox("scaled by σ")
        self.scaled.setToolTip(
            "Off: the raw curves P[j, k].\nOn: P[j, k] / σ̄_j with σ̄_j = mean over the vocabulary "
            "of σ(e_v + p_j),\nthe LayerNorm scale the first layer sees on average at position j.\n"
            "Table, curves and the position-heavy dims of the overlap plot all follow this.")
        row.addWidget(self.scaled)
        self.fits = QCheckBox("linear fits")
        self.fits.setToolTip("Draw each selected curve's least-squares line (dashed)")
        row.addWidget(self.fits)
        self.top_button = QPushButton(f"Top {DEFAULT_SELECTION} by norm")
        self.top_button.setToolTip(f"Select the {DEFAULT_SELECTION} highest-norm dimensions "
                                   "of the shown group")
        row.addWidget(self.top_button)
        self.export_table_button = QPushButton("Export table…")
        self.export_table_button.setToolTip(
            "Save the statistics of all d dimensions (dim, norm, slope, r2, period, group)\n"
            "as CSV — the same table as `detokgui export neurons`")
        row.addWidget(self.export_table_button)
        row.addStretch(1)
        lay.addLayout(row)

        split = QSplitter(Qt.Horizontal)
        # ---- left: the table
        self.model = NeuronTableModel(self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.proxy.setFilterKeyColumn(COL_GROUP)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(COL_NORM, Qt.DescendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.table.verticalHeader().setDefaultSectionSize(22)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeToContents)
        header.setStretchLastSection(True)
        header.setMinimumSectionSize(44)
        self.table.setToolTip("Click a header to sort; select several rows (Ctrl/Shift-click) "
                              "to overlay their curves")
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addWidget(self.table, 1)
        self.info = QLabel(" ")
        self.info.setWordWrap(True)
        self.info.setToolTip(GROUP_RULES)
        ll.addWidget(self.info)
        left.setMinimumWidth(400)
        split.addWidget(left)

        # ---- right: curves over overlap
        right = QSplitter(Qt.Vertical)
        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        self.curve_frame = PlotFrame("PE neuron curves", self._curves_table)
        self.curve_plot = self.curve_frame.view.addPlot()
        self.curve_plot.showGrid(x=True, y=True, alpha=0.25)
        self.curve_plot.setLabel("bottom", "position j")
        self.curve_plot.getAxis("left").enableAutoSIPrefix(False)
        # Legends sit beside / under their plots (not over the curves), in the exported image too.
        self.legend = _legend()
        self.curve_frame.view.addItem(self.legend, row=0, col=1)
        self.curve_frame.view.ci.layout.setAlignment(self.legend, Qt.AlignTop | Qt.AlignLeft)
        self.curve_frame.view.ci.layout.setColumnStretchFactor(0, 1)
        self.marker = pg.InfiniteLine(
            angle=90, movable=True, pen=pg.mkPen("#444", width=1, style=Qt.DashLine),
            hoverPen=pg.mkPen("#d62728", width=2), label="i={value:.0f}",
            labelOpts={"position": 0.96, "color": "#444", "fill": (255, 255, 255, 200)})
        self.marker.setZValue(10)
        self.curve_plot.addItem(self.marker, ignoreBounds=True)
        self.curve_frame.setToolTip("Click (or drag the dashed line) to set the query position i")
        self.curve_frame.setMinimumHeight(240)
        tl.addWidget(self.curve_frame, 1)
        self.hover = QLabel(" ")
        self.hover.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.hover.setToolTip("Values of the shown curves at the position under the mouse")
        tl.addWidget(self.hover)
        right.addWidget(top)

        bottom = QWidget()
        bl = QVBoxLayout(bottom)
        bl.setContentsMargins(0, 0, 0, 0)
        orow = QHBoxLayout()
        orow.addWidget(QLabel("SVD directions r"))
        self.r_spin = QSpinBox()
        self.r_spin.setRange(1, 1)
        self.r_spin.setToolTip("How many of the token embedding's top right singular vectors "
                               "to show (0 = largest singular value)")
        orow.addWidget(self.r_spin)
        orow.addWidget(QLabel("position-heavy dims m"))
        self.m_spin = QSpinBox()
        self.m_spin.setRange(1, 1)
        self.m_spin.setToolTip("The m dimensions of P with the largest curve norm (raw or scaled)")
        orow.addWidget(self.m_spin)
        self.centre = QCheckBox("centre E")
        self.centre.setToolTip("SVD of the mean-removed token embedding E - mean_v e_v "
                               "(otherwise the first direction is mostly the mean token)")
        orow.addWidget(self.centre)
        orow.addStretch(1)
        bl.addLayout(orow)
        self.overlap_frame = PlotFrame("PE-token SVD overlap", self._overlap_table)
        self.overlap_plot = self.overlap_frame.view.addPlot()
        self.overlap_plot.showGrid(y=True, alpha=0.25)
        self.overlap_plot.setMouseEnabled(x=False, y=False)
        self.overlap_plot.setLabel("bottom", "SVD direction of E (0 = largest singular value)")
        self.overlap_plot.setLabel("left", "share on heavy dims")
        self.overlap_legend = _legend(columns=2)
        self.overlap_frame.view.addItem(self.overlap_legend, row=1, col=0)
        self.overlap_plot.getAxis("left").enableAutoSIPrefix(False)
        self.overlap_frame.setMinimumHeight(200)
        self.overlap_frame.setToolTip(
            "For each top SVD direction u of the token embedding E (unit vector in R^d): "
            "Σ_{k in heavy dims} u_k²,\nthe fraction of its squared weight on the m position-heavy "
            "dimensions. Dashed: m/d, what a random direction gives.")
        bl.addWidget(self.overlap_frame, 1)
        self.overlap_info = QLabel(" ")
        self.overlap_info.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        bl.addWidget(self.overlap_info)
        right.addWidget(bottom)
        right.setSizes([520, 360])
        split.addWidget(right)
        split.setStretchFactor(0, 0)
        split.setStretchFactor(1, 1)
        split.setSizes([400, 1000])
        lay.addWidget(split, 1)

        # ---- settings
        s = self.settings
        self.scaled.setChecked(s.value("neurons/scaled", False, type=bool))
        idx = self.group.findData(s.value("neurons/group", "all", type=str))
        self.group.setCurrentIndex(max(0, idx))
        self.fits.setChecked(s.value("neurons/fits", False, type=bool))
        self.centre.setChecked(s.value("neurons/centre", False, type=bool))
        self._apply_filter()

        # ---- signals
        self.group.currentIndexChanged.connect(self._group_changed)
        self.scaled.toggled.connect(self._scaled_changed)
        self.fits.toggled.connect(self._fits_changed)
        self.centre.toggled.connect(self._centre_changed)
        self.top_button.clicked.connect(lambda: self.select_dims(self._default_dims()))
        self.export_table_button.clicked.connect(self._export_table_dialog)
        # Spin boxes are debounced: each new request cancels the one before, and the first
        # request of a model runs the Gram pass over E (~0.6 s at GPT-2-small size).
        self.overlap_timer = QTimer(self)
        self.overlap_timer.setSingleShot(True)
        self.overlap_timer.setInterval(OVERLAP_DEBOUNCE_MS)
        self.overlap_timer.timeout.connect(self.refresh_overlap)
        self.r_spin.valueChanged.connect(lambda *_: self.overlap_timer.start())
        self.m_spin.valueChanged.connect(lambda *_: self.overlap_timer.start())
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        self.marker.sigPositionChangeFinished.connect(self._marker_moved)
        self.curve_frame.view.scene().sigMouseClicked.connect(self._curve_clicked)
        self.curve_frame.view.scene().sigMouseMoved.connect(self._curve_hover)
        self.overlap_frame.view.scene().sigMouseMoved.connect(self._overlap_hover)
        state.modelChanged.connect(self._model_changed)
        state.queryPositionChanged.connect(self._show_position)
        self._model_changed(state.layer)

    def plot_frames(self):
        return [self.curve_frame, self.overlap_frame]

    def showEvent(self, event):
        super().showEvent(event)
        self.refresh()

    # ------------------------------------------------------------------ controls

    @Slot(object)
    def _model_changed(self, layer) -> None:
        self.stats = self.curves = self.overlap = None
        self.model.set_stats(None)
        self.selected, self.drawn = [], []
        if layer is not None:
            d = layer.d
            for spin, key, default in ((self.r_spin, "neurons/r", 10),
                                       (self.m_spin, "neurons/m", 20)):
                spin.blockSignals(True)
                spin.setRange(1, d)
                spin.setValue(min(d, self.settings.value(key, default, type=int)))
                spin.blockSignals(False)
            self.marker.setBounds((0, layer.n_positions - 1))
        self._draw_curves()
        self._draw_overlap()
        self.refresh()

    @Slot()
    def _group_changed(self, *_) -> None:
        self.settings.setValue("neurons/group", self.group.currentData())
        keep = list(self.selected)
        self._apply_filter()
        visible = [k for k in keep if self._proxy_row(k) >= 0]
        self.select_dims(visible or self._default_dims())

    def _apply_filter(self) -> None:
        g = self.group.currentData()
        pattern = "" if g == "all" else f"^{g}$"
        self.proxy.setFilterRegularExpression(QRegularExpression(pattern))

    @Slot(bool)
    def _scaled_changed(self, on: bool) -> None:
        self.settings.setValue("neurons/scaled", bool(on))
        self.refresh()

    @Slot(bool)
    def _fits_changed(self, on: bool) -> None:
        self.settings.setValue("neurons/fits", bool(on))
        self._draw_curves()

    @Slot(bool)
    def _centre_changed(self, on: bool) -> None:
        self.settings.setValue("neurons/centre", bool(on))
        self.refresh_overlap()

    # ------------------------------------------------------------------ compute

    @Slot()
    def refresh(self, *_) -> None:
        """(Re)compute the curves and statistics (a job), then the overlap."""
        layer = self.layer
        if layer is None:
            self.stats_request = None
            return
        if not self.isVisible():
            return  # computed when the tab is shown (showEvent)
        scaled = self.scaled.isChecked()
        request = (id(layer), scaled)
        if request != self.stats_request:
            self.stats_request = request
            self.info.setText("computing…")

            def job():
                curves = neurons.position_curves(layer, scaled)
                return curves, neurons.curve_stats(curves, scaled)

            self.jobs.submit(self.job_key("stats"), job,
                             lambda res, req=request: self._stats_done(req, res),
                             label="Position-embedding neurons")
        self.refresh_overlap()

    def _stats_done(self, request, result) -> None:
        if request != self.stats_request:
            return  # made for an older model / scaling
        keep = list(self.selected)
        self.curves, self.stats = result
        self.model.set_stats(self.stats)  # resets the selection
        counts = {g: self.stats.group.count(g) for g in NEURON_GROUPS}
        self.group.setItemText(0, f"all ({len(self.stats.group)})")
        for i, g in enumerate(NEURON_GROUPS, start=1):
            self.group.setItemText(i, f"{g} ({counts[g]})")
        L, d = self.curves.shape
        self.info.setText(f"d = {d} dims · L = {L} positions · "
                          + " · ".join(f"{g} {counts[g]}" for g in NEURON_GROUPS)
                          + (" · scaled by σ̄_j" if self.stats.scaled else " · raw"))
        visible = [k for k in keep if self._proxy_row(k) >= 0]
        self.select_dims(visible or self._default_dims())

    @Slot()
    def refresh_overlap(self, *_) -> None:
        self.overlap_timer.stop()
        layer = self.layer
        if layer is None:
            self.overlap_request = None
            return
        if not self.isVisible():
            return  # computed when the tab is shown (showEvent)
        r, m = self.r_spin.value(), self.m_spin.value()
        scaled, centre = self.scaled.isChecked(), self.centre.isChecked()
        self.settings.setValue("neurons/r", r)
        self.settings.setValue("neurons/m", m)
        request = (id(layer), r, m, scaled, centre)
        if request == self.overlap_request:
            return
        self.overlap_request = request
        self.overlap_info.setText("computing the token embedding's SVD directions…")
        self.jobs.submit(
            self.job_key("overlap"),
            lambda: neurons.iter_embedding_overlap(layer, r, m, scaled, centre),
            lambda res, req=request: self._overlap_done(req, res),
            label="PE-token SVD overlap",
        )

    def _overlap_done(self, request, result) -> None:
        if request != self.overlap_request:
            return
        self.overlap = result
        self._draw_overlap()

    # ------------------------------------------------------------------ selection

    def _proxy_row(self, dim: int) -> int:
        """The table row showing `dim`, -1 when it is filtered out (or no table yet)."""
        if self.stats is None or not 0 <= dim < self.model.rowCount():
            return -1
        return self.proxy.mapFromSource(self.model.index(dim, 0)).row()

    def dim_at_row(self, row: int) -> int:
        return self.proxy.mapToSource(self.proxy.index(row, 0)).row()

    def table_dims(self) -> list[int]:
        """The dimensions in the order the table shows them."""
        return [self.dim_at_row(r) for r in range(self.proxy.rowCount())]

    def _default_dims(self) -> list[int]:
        if self.stats is None:
            return []
        order = self.stats.order("norm")
        return [int(k) for k in order if self._proxy_row(int(k)) >= 0][:DEFAULT_SELECTION]

    def select_dims(self, dims) -> None:
        """Select exactly these dimensions' rows (those the filter shows)."""
        sel = QItemSelection()
        last = self.proxy.columnCount() - 1
        for k in dims:
            r = self._proxy_row(int(k))
            if r >= 0:
                sel.select(self.proxy.index(r, 0), self.proxy.index(r, last))
        self._selecting = True
        try:
            self.table.selectionModel().select(
                sel, QItemSelectionModel.ClearAndSelect | QItemSelectionModel.Rows)
        finally:
            self._selecting = False
        rows = [self._proxy_row(int(k)) for k in dims]
        rows = [r for r in rows if r >= 0]
        if rows:
            self.table.scrollTo(self.proxy.index(min(rows), 0))
        self._read_selection()  # draw once, also when the selection itself did not change

    @Slot()
    def _selection_changed(self, *_) -> None:
        if not self._selecting:
            self._read_selection()

    def _read_selection(self) -> None:
        rows = sorted(i.row() for i in self.table.selectionModel().selectedRows())
        self.selected = [self.dim_at_row(r) for r in rows]
        self._draw_curves()

    # ------------------------------------------------------------------ draw: curves

    def _draw_curves(self) -> None:
        plot = self.curve_plot
        for item in list(self.curve_items.values()):
            plot.removeItem(item)
        for item in self.fit_items:
            plot.removeItem(item)
        self.fit_items = []
        self.curve_items = {}
        self.legend.clear()
        self.drawn = []
        st, curves = self.stats, self.curves
        scaled = bool(st.scaled) if st is not None else self.scaled.isChecked()
        plot.setLabel("left", "P[j, k] / σ̄_j" if scaled else "P[j, k]")
        if st is None or curves is None:
            plot.setTitle("Position-embedding curves" if self.layer is None else "computing…")
            return
        dims = self.selected[:MAX_CURVES]
        x = np.arange(curves.shape[0], dtype=np.float64)
        for n, k in enumerate(dims):
            color = head_color(n)
            item = pg.PlotDataItem(x, curves[:, k], pen=pg.mkPen(color, width=1.5))
            plot.addItem(item)
            self.curve_items[k] = item
            if n < MAX_LEGEND:
                self.legend.addItem(item, f"dim {k} · {st.group[k]}")
            if self.fits.isChecked():
                fit = pg.PlotDataItem(x, st.intercept[k] + st.slope[k] * x,
                                      pen=pg.mkPen(color, width=1, style=Qt.DashLine))
                plot.addItem(fit)
                self.fit_items.append(fit)
        if len(self.selected) > MAX_LEGEND:
            more = len(self.selected) - MAX_LEGEND
            extra = pg.PlotDataItem([], [], pen=pg.mkPen(None))
            self.legend.addItem(extra, f"… and {more} more"
                                + (f" ({len(self.selected) - MAX_CURVES} not drawn)"
                                   if len(self.selected) > MAX_CURVES else ""))
        self._fit_legend()
        self.drawn = list(dims)
        what = "scaled by σ̄_j" if scaled else "raw"
        plot.setTitle(f"Position embedding ({what})" if dims else "Select dimensions in the table",
                      size="10pt")
        plot.enableAutoRange()
        self._show_position()

    def _fit_legend(self) -> None:
        """Size the legend column to its entries (a grid layout would squeeze it)."""
        leg = self.legend
        width = max((s.boundingRect().width() + lab.item.boundingRect().width() + 12
                     for s, lab in leg.items), default=0)
        height = sum(max(s.boundingRect().height(), lab.item.boundingRect().height())
                     for s, lab in leg.items)
        leg.setFixedWidth(width)
        leg.setMaximumHeight(max(height, 1))
        leg.setVisible(bool(leg.items))

    @Slot()
    def _show_position(self, *_) -> None:
        # setValue emits only sigPositionChanged (which also moves the label); the state is
        # written on sigPositionChangeFinished (end of a drag), so there is no loop.
        self.marker.setValue(self.state.query_position)

    @Slot()
    def _marker_moved(self, *_) -> None:
        self.state.set_query_position(round(self.marker.value()))
        self._show_position()

    def position_at(self, scene_pos) -> int:
        """The position j under a scene point of the curve plot, -1 when outside."""
        vb = self.curve_plot.getViewBox()
        layer = self.layer
        if layer is None or not vb.sceneBoundingRect().contains(scene_pos):
            return -1
        j = round(vb.mapSceneToView(scene_pos).x())
        return max(0, min(j, layer.n_positions - 1))

    def _curve_clicked(self, ev) -> None:
        if ev.button() != Qt.LeftButton:
            return
        j = self.position_at(ev.scenePos())
        if j >= 0:
            self.state.set_query_position(j)

    def _curve_hover(self, pos) -> None:
        j = self.position_at(pos)
        if j < 0 or self.curves is None or not self.drawn:
            self.hover.setText(" ")
            return
        vals = ", ".join(f"dim {k} = {self.curves[j, k]:.4g}" for k in self.drawn[:8])
        more = " …" if len(self.drawn) > 8 else ""
        self.hover.setText(f"j = {j}: {vals}{more}  (click to set the query position)")

    # ------------------------------------------------------------------ draw: overlap

    def _draw_overlap(self) -> None:
        plot = self.overlap_plot
        plot.clear()
        res = self.overlap
        if res is None:
            self.overlap_legend.clear()
            plot.setTitle("Overlap with the token embedding's SVD directions"
                          if self.layer is None else "computing…")
            return
        r = len(res.overlap)
        x = np.arange(r)
        bars = pg.BarGraphItem(x=x, height=res.overlap, width=0.7, brush="#4c72b0",
                               pen=pg.mkPen("#2d4a78"))
        plot.addItem(bars)
        base_pen = pg.mkPen("#d62728", width=1.5, style=Qt.DashLine)
        base = pg.InfiniteLine(pos=res.baseline, angle=0, pen=base_pen)
        plot.addItem(base)
        self.overlap_legend.clear()
        self.overlap_legend.addItem(bars, "overlap")
        self.overlap_legend.addItem(pg.PlotDataItem([], [], pen=base_pen),
                                    f"random direction (m/d = {res.baseline:.3f})")
        top = max(float(res.overlap.max()), res.baseline) * 1.15 or 1.0
        plot.setRange(xRange=(-0.6, r - 0.4), yRange=(0, top), padding=0)
        axis = plot.getAxis("bottom")
        if r <= 40:
            step = 1 if r <= 20 else 2
            axis.setTicks([[(i, str(i)) for i in range(0, r, step)], []])
        else:
            axis.setTicks(None)
        m = len(res.dims)
        what = "scaled" if res.scaled else "raw"
        plot.setTitle(f"{'Centred E' if res.centred else 'E'}: SVD directions on the {m} "
                      f"heaviest dims of P ({what})", size="10pt")
        dims = ", ".join(str(int(k)) for k in res.dims[:16]) + (" …" if m > 16 else "")
        self.overlap_info.setText(f"mean overlap {float(res.overlap.mean()):.3f} vs m/d = "
                                  f"{res.baseline:.3f} · heavy dims: {dims}")
        self.overlap_info.setToolTip("All position-heavy dims: "
                                     + ", ".join(str(int(k)) for k in res.dims))

    def _overlap_hover(self, pos) -> None:
        res = self.overlap
        vb = self.overlap_plot.getViewBox()
        if res is None or not vb.sceneBoundingRect().contains(pos):
            return
        i = round(vb.mapSceneToView(pos).x())
        if 0 <= i < len(res.overlap):
            self.overlap_info.setText(
                f"direction {i}: singular value {res.singular_values[i]:.4g}, overlap "
                f"{res.overlap[i]:.4f} (baseline m/d = {res.baseline:.4f})")

    # ------------------------------------------------------------------ export

    def _curves_table(self):
        if self.stats is None or not self.drawn:
            return None
        return neuron_curves_table(self.layer, self.drawn, self.stats.scaled)

    def _overlap_table(self):
        return None if self.overlap is None else embedding_overlap_table(self.overlap)

    def export_table(self, path) -> int:
        """Write the statistics of all d dimensions as CSV (rows written)."""
        if self.layer is None:
            raise ValueError("No model is loaded.")
        return write_csv(path, neurons_table(self.layer, self.scaled.isChecked()))

    def _export_table_dialog(self) -> None:
        from pathlib import Path

        folder = self.settings.value("export/folder", str(Path.home()))
        name = "pe_neurons_scaled.csv" if self.scaled.isChecked() else "pe_neurons.csv"
        path, _ = QFileDialog.getSaveFileName(self, "Export the neuron table as CSV",
                                              str(Path(folder) / name), "CSV (*.csv)")
        if not path:
            return
        if not path.lower().endswith(".csv"):
            path += ".csv"
        self.settings.setValue("export/folder", str(Path(path).parent))
        try:
            self.export_table(path)
        except (OSError, ValueError) as exc:
            QMessageBox.warning(self, "Export failed", failure_message(exc, path))
