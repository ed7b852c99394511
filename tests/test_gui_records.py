"""Shared table and position widgets: RecordsModel (lazy, sorts by value, ids in a role),
TokenTableView (click and Shift+click), the query-position controls, and the PE-neuron
table's first showing asking only for the rows on screen."""

import math

import numpy as np
from conftest import close_jobs, open_window
from PySide6.QtCore import Qt
from tables import cell_text, click_cell, column_texts

from detokgui.gui.records import ID_ROLE, SORT_ROLE, Column, RecordsModel, TokenTableView

RECORDS = [(0, 7, 2.5), (1, 3, math.nan), (2, 9, 10.0), (3, 3, -1.0)]


def model():
    return RecordsModel([
        Column("rank", lambda r: r[0], "d"),
        Column("id", lambda r: r[1], "d"),
        Column("score", lambda r: r[2], ".2f"),
        Column("other", lambda r: f"x{r[1]}", token=lambda r: r[1] + 100),
    ], token=lambda r: r[1])


def test_records_model_sorts_by_value_and_keeps_ids_in_roles(qapp):
    m = model()
    m.set_records(RECORDS)
    assert m.texts(2) == ["2.50", "", "10.00", "-1.00"]  # NaN shows blank
    assert m.index(2, 2).data(Qt.TextAlignmentRole) is not None  # numbers to the right
    m.sort(2, Qt.AscendingOrder)
    assert m.texts(2) == ["", "-1.00", "2.50", "10.00"]  # numerically, NaN first
    assert [m.index(r, 0).data(SORT_ROLE) for r in range(4)] == [1, 3, 0, 2]
    m.sort(2, Qt.DescendingOrder)
    assert m.texts(0) == ["2", "0", "3", "1"]
    assert m.index(0, 0).data(ID_ROLE) == 9 and m.index(0, 3).data(ID_ROLE) == 109
    assert m.row_of_token(3) == 2 and m.row_of_token(42) == -1
    assert [m.row_of_record(i) for i in range(4)] == [1, 3, 0, 2]
    m.set_filter(lambda r: r[1] == 3)
    assert m.texts(0) == ["3", "1"]  # still sorted
    assert [m.row_of_record(i) for i in (-1, 0, 1, 2, 3, 4)] == [-1, -1, 1, -1, 0, -1]
    m.set_records(RECORDS[:2])
    assert m.texts(0) == ["1"]
    assert [m.row_of_record(i) for i in range(4)] == [-1, 0, -1, -1]


def test_lazy_model_formats_only_what_is_asked(qapp):
    calls = []
    m = RecordsModel([Column("v", lambda r: calls.append(r) or r, "d")])
    m.set_records(range(1_000_000))
    assert m.rowCount() == 1_000_000 and calls == []
    assert m.index(123_456, 0).data() == "123456" and calls == [123_456]


def test_token_table_view_emits_ids(qtbot):
    m = model()
    m.set_records(RECORDS)
    view = TokenTableView(m)
    qtbot.addWidget(view)
    view.resize(500, 300)
    view.show()
    got = []
    view.tokenActivated.connect(lambda tid, as_key: got.append((tid, as_key)))
    click_cell(qtbot, view, 2, 0)
    click_cell(qtbot, view, 1, 3, Qt.ShiftModifier)
    assert got == [(9, False), (103, True)]
    view.select_token(3)
    assert [i.row() for i in view.selectionModel().selectedRows()] == [1]
    assert view.token_ids() == [7, 3, 9, 3]


def test_query_position_controls_follow_and_set_the_state(qtbot, tiny_layer):
    import pyqtgraph as pg

    from detokgui.gui.position import PositionMarker, QueryPositionControl, position_at
    from detokgui.gui.state import AppState

    state = AppState()
    control = QueryPositionControl(state, slider=True)
    qtbot.addWidget(control)
    state.set_model(tiny_layer)
    L = tiny_layer.n_positions
    assert control.spin.maximum() == control.slider.maximum() == L - 1
    assert control.max_label.text() == f"of {L - 1}"
    control.slider.setValue(17)
    assert state.query_position == 17 and control.spin.value() == 17
    state.set_query_position(40)
    assert control.slider.value() == 40 and control.spin.value() == 40
    marker = PositionMarker(state, movable=True)
    assert marker.value() == 40
    marker.setValue(12.4)
    marker.sigDragged.emit(marker)
    assert state.query_position == 12 and control.spin.value() == 12 and marker.value() == 12

    w = pg.PlotWidget()
    qtbot.addWidget(w)
    w.resize(400, 300)
    w.show()
    vb = w.getViewBox()
    vb.setRange(xRange=(-50, L + 50), yRange=(0, 1), padding=0)
    qtbot.waitUntil(lambda: vb.width() > 100, timeout=3000)
    scene = vb.mapViewToScene
    from PySide6.QtCore import QPointF

    assert position_at(vb, scene(QPointF(20.4, 0.5)), L) == 20
    assert position_at(vb, scene(QPointF(-30, 0.5)), L) == 0  # clamped
    assert position_at(vb, scene(QPointF(L + 30, 0.5)), L) == L - 1
    assert position_at(vb, vb.sceneBoundingRect().topLeft() - QPointF(5, 5), L) is None


def test_neuron_table_first_showing_asks_only_for_rows_on_screen(qtbot, small_ckpt,
                                                                 monkeypatch):
    """With d = 768 dims, showing the PE-neuron tab formats about a screenful of rows
    (it used to measure every row of every column for its column widths)."""
    asked = set()
    data = RecordsModel.data

    def counting(self, index, role=Qt.DisplayRole):
        if role == Qt.DisplayRole and index.isValid():
            asked.add((id(self), index.row()))
        return data(self, index, role)

    win = open_window(qtbot, small_ckpt, timeout=120000)
    try:
        monkeypatch.setattr(RecordsModel, "data", counting)
        win.show_view("neurons")
        panel = win.panel("neurons")
        qtbot.waitUntil(lambda: panel.settled() and panel.stats is not None, timeout=120000)
        qtbot.wait(50)
        rows = {r for m, r in asked if m == id(panel.records)}
        assert panel.records.rowCount() == 768
        assert 5 < len(rows) < 80, len(rows)
        norms = [float(t) for t in column_texts(panel.table, 1)[:5]]
        assert norms == sorted(norms, reverse=True)
        assert np.isclose(norms[0], float(cell_text(panel.table, 0, 1)))
    finally:
        close_jobs(win)
