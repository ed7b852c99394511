"""The position-embedding neuron browser (docs/math/position-side.md#b6-position-embedding-neurons)
through the real window (offscreen).

The checkpoint is the tiny random one with a few columns of P replaced by shapes the
groups are made for: dims 0-2 straight lines (the largest norms), dims 3-4 sines with 8
cycles over the 128 positions, the rest random ("other")."""

import csv
import gc
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from conftest import resize_window, top_left, wait_idle
from exported import non_background_pixels
from PySide6.QtCore import (
    QCoreApplication,
    QEvent,
    QItemSelection,
    QItemSelectionModel,
    QPoint,
    QPointF,
    Qt,
)

from detokgui.core.position_side import neurons
from detokgui.gui.panels.neuron_table import (
    COL_DIM,
    COL_GROUP,
    COL_NORM,
    COL_PERIOD,
    COL_R2,
    COL_SLOPE,
)
from detokgui.gui.panels.neurons import DEFAULT_SELECTION
from detokgui.gui.plots import frame_of
from detokgui.gui.records import SORT_ROLE

LINEAR, PERIODIC = [0, 1, 2], [3, 4]


@pytest.fixture(scope="session")
def pe_ckpt(tiny_ckpt, tmp_path_factory):
    import torch
    from safetensors.torch import load_file, save_file

    folder = tmp_path_factory.mktemp("pe") / "ckpt"
    shutil.copytree(tiny_ckpt, folder)
    weights = load_file(str(folder / "model.safetensors"))
    P = weights["transformer.wpe.weight"].clone()
    L = P.shape[0]
    j = torch.arange(L, dtype=P.dtype)
    for n, k in enumerate(LINEAR):
        P[:, k] = (-1) ** n * (0.8 + 0.1 * n) * (j / (L - 1) - 0.5) * 2 + 0.01 * P[:, k]
    for n, k in enumerate(PERIODIC):
        P[:, k] = (0.5 - 0.05 * n) * torch.sin(2 * torch.pi * 8 * j / L + n)
    weights["transformer.wpe.weight"] = P.contiguous()
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder


@pytest.fixture
def pe_window(qtbot, pe_ckpt):
    """The real main window on `pe_ckpt`, showing the neuron browser.

    Closed windows are deleted and their garbage collected here, on the GUI thread: freed
    on a job's worker thread, pyqtgraph items (Qt objects with Python overrides) deadlock
    against the GUI thread (see gui.process.collect_garbage_on_gui_thread)."""
    from PySide6.QtCore import QSettings

    from detokgui.gui.main_window import MainWindow
    from detokgui.gui.options import flush_settings

    gc.collect()
    flush_settings()  # nothing of an earlier test is written later
    QSettings().clear()
    win = MainWindow(model=str(pe_ckpt), device="cpu")
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    win.show_view("neurons")
    qtbot.waitUntil(lambda w=win: w.state.layer is not None, timeout=60000)
    wait_idle(qtbot, win)
    yield win
    win.jobs.cancel()
    win.jobs.wait(10000)
    win.close()
    win.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)
    del win
    gc.collect()


def rows(panel, col, role=SORT_ROLE):
    model = panel.records
    return [model.index(r, col).data(role) for r in range(model.rowCount())]


def curve_data(panel):
    """{dim: y array} of the curves on the plot, from the plot items themselves."""
    out = {}
    for k, item in panel.curve_items.items():
        assert item in panel.curve_plot.listDataItems()
        out[k] = item.getData()[1]
    return out


def test_table_lists_every_dim_with_the_core_numbers_and_sorts(pe_window, qtbot):
    win, layer = pe_window, pe_window.state.layer
    panel = win.panel("neurons")
    st = neurons.neuron_stats(layer)
    assert panel.records.rowCount() == layer.d
    dims = rows(panel, COL_DIM)
    assert sorted(dims) == list(range(layer.d))
    for col, arr in ((COL_NORM, st.norm), (COL_SLOPE, st.slope), (COL_R2, st.r2),
                     (COL_PERIOD, st.period)):
        np.testing.assert_allclose(rows(panel, col), arr[dims], rtol=1e-12)
    assert rows(panel, COL_GROUP) == [st.group[k] for k in dims]
    assert {k for k in dims if st.group[k] == "linear"} == set(LINEAR)
    assert {k for k in dims if st.group[k] == "periodic"} == set(PERIODIC)
    # what a person reads
    r = dims.index(3)
    assert panel.records.index(r, COL_PERIOD).data() == "16.0"
    assert panel.records.index(r, COL_GROUP).data() == "periodic"
    assert float(panel.records.index(r, COL_NORM).data()) == pytest.approx(st.norm[3], rel=1e-3)
    group = panel.options.widget("group")
    assert "R²" in group.toolTip() and str(neurons.LINEAR_MIN_R2) in group.toolTip()
    assert group.itemText(group.findData("linear")) == "linear (3)"

    # sorting is numeric; default: by norm, largest first
    assert rows(panel, COL_DIM) == st.order("norm").tolist()
    header = panel.table.horizontalHeader()

    def click_header(col):
        x = header.sectionViewportPosition(col) + header.sectionSize(col) // 2
        qtbot.mouseClick(header.viewport(), Qt.LeftButton, pos=QPoint(x, header.height() // 2))

    click_header(COL_R2)
    r2 = [float(panel.records.index(r, COL_R2).data()) for r in range(panel.records.rowCount())]
    assert r2 == sorted(r2) or r2 == sorted(r2, reverse=True)
    assert r2[0] != r2[-1]
    panel.table.sortByColumn(COL_NORM, Qt.AscendingOrder)
    norms = [float(panel.records.index(r, COL_NORM).data()) for r in range(panel.records.rowCount())]
    assert norms == sorted(norms)  # numeric: "10.2" after "9.8"
    assert rows(panel, COL_DIM) == st.order("norm", descending=False).tolist()
    panel.table.sortByColumn(COL_SLOPE, Qt.DescendingOrder)
    slopes = rows(panel, COL_SLOPE)
    assert slopes == sorted(slopes, reverse=True)
    assert rows(panel, COL_DIM)[0] == int(np.argmax(st.slope))


def test_a_result_shows_its_table_and_its_curves_at_once(pe_window, qtbot):
    """Drawing a result fills the table and draws the selected dims' curves in the same
    call."""
    win = pe_window
    panel = win.panel("neurons")
    assert panel.settled()
    before = panel.curve_items
    panel.draw(panel.result)
    assert panel.records.rowCount() == win.state.layer.d
    assert panel.curve_items is not before and panel.settled()
    assert sorted(panel.curve_items) == sorted(panel.plotted) == sorted(panel.selected)
    assert panel.selected == panel.table.selected()


def test_selection_overlays_those_curves_and_scaling(pe_window, qtbot):
    win, layer = pe_window, pe_window.state.layer
    panel = win.panel("neurons")
    st = neurons.neuron_stats(layer)
    P = layer.P.double().numpy()
    top = st.order("norm")[:DEFAULT_SELECTION].tolist()
    assert panel.plotted == top
    shown = curve_data(panel)
    assert sorted(shown) == sorted(top)
    for k in top:
        np.testing.assert_allclose(shown[k], P[:, k], rtol=1e-12)
    assert len(panel.legend.items) == DEFAULT_SELECTION

    # click one row, ctrl-click two more: exactly those three curves
    dims = rows(panel, COL_DIM)
    pick = [dims[7], dims[2], dims[20]]
    view = panel.table

    def row_point(k):
        return view.visualRect(panel.records.index(dims.index(k), COL_NORM)).center()

    for n, k in enumerate(pick):
        view.scrollTo(panel.records.index(dims.index(k), 0))
        qtbot.mouseClick(view.viewport(), Qt.LeftButton,
                         Qt.ControlModifier if n else Qt.NoModifier, row_point(k))
    assert sorted(panel.selected) == sorted(pick)
    shown = curve_data(panel)
    assert sorted(shown) == sorted(pick)
    for k in pick:
        np.testing.assert_allclose(shown[k], P[:, k], rtol=1e-12)

    # scaled by the vocabulary-mean sigma: same dims, data P / pos_mean
    panel.options.widget("scaled").setChecked(True)
    wait_idle(qtbot, win)
    assert sorted(panel.selected) == sorted(pick)
    scaled = P / layer.sigma_stats().pos_mean.double().numpy()[:, None]
    shown = curve_data(panel)
    assert sorted(shown) == sorted(pick)
    for k in pick:
        np.testing.assert_allclose(shown[k], scaled[:, k], rtol=1e-12)
    st_s = neurons.neuron_stats(layer, scaled=True)
    dims = rows(panel, COL_DIM)
    np.testing.assert_allclose(rows(panel, COL_NORM), st_s.norm[dims], rtol=1e-12)
    assert "σ" in panel.curve_plot.getAxis("left").labelText
    from PySide6.QtCore import QSettings

    from detokgui.gui.options import flush_settings

    flush_settings()  # written a few seconds after the change, or now
    assert QSettings().value("neurons/scaled", type=bool) is True

    # linear fits: one dashed line per curve, from the core's slope and intercept
    panel.options.widget("fits").setChecked(True)
    assert len(panel.fit_items) == len(pick)
    x = np.arange(layer.n_positions)
    fits = sorted(tuple(np.round(f.getData()[1][:2], 12)) for f in panel.fit_items)
    want = sorted(tuple(np.round(st_s.intercept[k] + st_s.slope[k] * x[:2], 12)) for k in pick)
    assert fits == want


def test_group_filter_and_remembered_settings(pe_window, qtbot):
    win, layer = pe_window, pe_window.state.layer
    panel = win.panel("neurons")
    panel.options.widget("group").setCurrentIndex(
        panel.options.widget("group").findData("periodic"))
    assert sorted(rows(panel, COL_DIM)) == PERIODIC
    assert sorted(panel.plotted) == PERIODIC  # the shown group's top dims
    panel.options.widget("group").setCurrentIndex(
        panel.options.widget("group").findData("linear"))
    assert sorted(rows(panel, COL_DIM)) == LINEAR
    # a selection survives the filter as far as the filter shows it
    sel = QItemSelection()
    for r in range(panel.records.rowCount()):
        if panel.table.dim_at_row(r) in (0, 2):
            sel.select(panel.records.index(r, 0), panel.records.index(r, COL_GROUP))
    panel.table.selectionModel().select(
        sel, QItemSelectionModel.ClearAndSelect | QItemSelectionModel.Rows)
    assert sorted(panel.plotted) == [0, 2]
    panel.options.widget("group").setCurrentIndex(
        panel.options.widget("group").findData("all"))
    assert panel.records.rowCount() == layer.d and sorted(panel.plotted) == [0, 2]
    panel.options.widget("group").setCurrentIndex(
        panel.options.widget("group").findData("linear"))
    panel.options.widget("scaled").setChecked(True)
    wait_idle(qtbot, win)

    # a new window remembers the group and the scaling
    from detokgui.gui.main_window import MainWindow

    win2 = MainWindow(model=None, device="cpu")
    qtbot.addWidget(win2)
    p2 = win2.panel("neurons")
    assert p2.options.widget("group").currentData() == "linear"
    assert p2.options.widget("scaled").isChecked()
    win2.close()


def test_clicking_the_curve_plot_sets_the_query_position(pe_window, qtbot):
    win = pe_window
    panel = win.panel("neurons")
    vb = panel.curve_plot.getViewBox()
    (x0, x1), (y0, y1) = vb.viewRange()
    target = 37 if x0 < 37 < x1 else int((x0 + x1) / 2)
    scene = vb.mapViewToScene(QPointF(target + 0.2, (y0 + 0.3 * (y1 - y0))))
    pos = panel.curve_frame.view.mapFromScene(scene)
    qtbot.mouseMove(panel.curve_frame.view.viewport(), pos)
    qtbot.waitUntil(lambda: f"j = {target}:" in panel.hover.text(), timeout=3000)
    qtbot.mouseClick(panel.curve_frame.view.viewport(), Qt.LeftButton, pos=pos)
    assert win.state.query_position == target
    assert panel.marker.value() == target
    win.state.set_query_position(90)  # from any other panel: the marker follows
    assert panel.marker.value() == 90
    panel.marker.setValue(12.4)  # dragging the marker: the state follows when it ends
    panel.marker.sigPositionChangeFinished.emit(panel.marker)
    assert win.state.query_position == 12 and panel.marker.value() == 12


def test_overlap_plot_equals_the_core(pe_window, qtbot):
    from pyqtgraph import BarGraphItem

    win, layer = pe_window, pe_window.state.layer
    panel = win.panel("neurons")

    def bars():
        items = [i for i in panel.overlap_view.plot.items if isinstance(i, BarGraphItem)]
        assert len(items) == 1
        return np.asarray(items[0].opts["height"])

    r, m = panel.overlap_view.r_spin.value(), panel.overlap_view.m_spin.value()
    want = neurons.embedding_overlap(layer, r, m)
    np.testing.assert_allclose(bars(), want.overlap, rtol=1e-12)
    assert panel.overlap.baseline == pytest.approx(m / layer.d)
    # a burst of changes: only the last one is drawn
    panel.overlap_view.m_spin.setValue(3)
    panel.options.widget("centre").setChecked(True)  # not debounced: a request for m=3 starts now
    panel.overlap_view.m_spin.setValue(7)
    panel.overlap_view.r_spin.setValue(6)
    panel.options.widget("scaled").setChecked(True)
    qtbot.waitUntil(lambda: not panel.overlap_timer.isActive(), timeout=5000)
    wait_idle(qtbot, win)
    want = neurons.embedding_overlap(layer, 6, 7, scaled=True, centre=True)
    np.testing.assert_array_equal(panel.overlap.dims, want.dims)
    np.testing.assert_allclose(bars(), want.overlap, rtol=1e-12)
    assert "of centred E" in frame_of(panel.overlap_view.plot).title_text()


def test_export_each_format(pe_window, qtbot, tmp_path):
    win, layer = pe_window, pe_window.state.layer
    panel = win.panel("neurons")
    frames = panel.plot_frames()
    assert len(frames) == 2
    for n, frame in enumerate(frames):
        for fmt in ("png", "svg", "csv"):
            frame.export(tmp_path / f"f{n}.{fmt}")
        assert non_background_pixels(tmp_path / f"f{n}.png") > 2000
        root = ET.parse(tmp_path / f"f{n}.svg").getroot()
        shapes = [e for e in root.iter() if e.tag.split("}")[-1] in ("path", "rect", "polyline",
                                                                      "text", "image")]
        assert len(shapes) > 10
    P = layer.P.double().numpy()
    with open(tmp_path / "f0.csv", newline="") as f:
        got = list(csv.DictReader(f))
    assert len(got) == len(panel.plotted) * layer.n_positions
    assert sorted({int(r["dim"]) for r in got}) == sorted(panel.plotted)
    for row in got[::5]:
        assert float(row["value"]) == pytest.approx(P[int(row["position"]), int(row["dim"])],
                                                    rel=1e-7, abs=1e-12)
    with open(tmp_path / "f1.csv", newline="") as f:
        got = list(csv.DictReader(f))
    want = neurons.embedding_overlap(layer, panel.overlap_view.r_spin.value(), panel.overlap_view.m_spin.value())
    assert [int(r["direction"]) for r in got] == list(range(len(want.overlap)))
    np.testing.assert_allclose([float(r["overlap"]) for r in got], want.overlap, rtol=1e-7)
    np.testing.assert_allclose([float(r["singular_value"]) for r in got],
                               want.singular_values, rtol=1e-7)
    # the statistics table of all dims
    assert panel.export_table(tmp_path / "table.csv") == layer.d
    with open(tmp_path / "table.csv", newline="") as f:
        got = list(csv.DictReader(f))
    st = neurons.neuron_stats(layer)
    np.testing.assert_allclose([float(r["norm"]) for r in got], st.norm, rtol=1e-7)
    assert [r["group"] for r in got] == st.group


def test_the_table_and_a_plot_export_to_the_folder_of_the_last_export(pe_window, qtbot,
                                                                       tmp_path, monkeypatch):
    """The neuron table's "Export table…" and a plot's export dialog propose the folder of
    the last export, whichever of them wrote it (a plot's dialog read only the settings
    file, not yet written a moment after the table's export)."""
    from PySide6.QtWidgets import QFileDialog

    panel = pe_window.panel("neurons")
    frame = panel.plot_frames()[0]
    qtbot.waitUntil(frame.has_data, timeout=60000)
    starts = []

    def save_as(path):
        def dialog(_parent, _title, start, file_filter):
            starts.append(Path(start))
            return str(path), file_filter
        monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(dialog))

    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    save_as(first / "neurons")  # the suffix is added
    panel.export_table_button.click()
    assert (first / "neurons.csv").stat().st_size > 0
    save_as(second / "curves")
    frame.export_dialog("csv")
    assert starts[1].parent == first
    assert (second / "curves.csv").stat().st_size > 0
    save_as(second / "table")
    panel.export_table_button.click()
    assert starts[2].parent == second


def test_the_legend_moves_under_a_narrow_plot_and_back(pe_window, qtbot):
    """Beside the plot it would leave a narrow window's curves no width (an 800-pixel window
    showed the legend and no curves): there it goes under the plot, in as many columns as
    fit, and back beside it when the window is wide again."""
    win = pe_window
    panel = win.panel("neurons")
    grid = panel.curve_frame.view.ci.layout
    vb = panel.curve_plot.getViewBox()

    def legend_cell():
        for r in range(grid.rowCount()):
            for c in range(grid.columnCount()):
                if grid.itemAt(r, c) is panel.legend:
                    return r, c
        return None

    assert legend_cell() == (0, 1)
    for width in (800, 900):
        resize_window(qtbot, win, width, 800)
        assert legend_cell() == (1, 0), width
        assert vb.width() >= 60, width  # the curves have room (beside the legend: none)
        assert len(panel.legend.items) == DEFAULT_SELECTION
    assert panel.legend.columnCount >= 2  # at 900 pixels two columns fit
    resize_window(qtbot, win, 1400, 900)
    assert legend_cell() == (0, 1) and panel.legend.columnCount == 1


def test_the_overlap_plot_fits_its_view_in_a_narrow_window(pe_window, qtbot):
    """Under the table of an 800-pixel window the overlap view is ~200 pixels wide: its
    options wrap onto three rows and its legend takes one column, so the plot keeps its
    height (the text line under it covered the legend) and is no wider than its view (the
    two-column legend widened it, cutting off its bars)."""
    win = pe_window
    panel = win.panel("neurons")
    ov = panel.overlap_view
    qtbot.waitUntil(lambda: ov.overlap is not None and len(ov.legend.items) == 2,
                    timeout=20000)
    for width in (800, 1400):
        resize_window(qtbot, win, width, 800)
        view = ov.frame.view
        assert ov.frame.geometry().bottom() < ov.info.geometry().top(), width
        assert ov.frame.height() >= ov.frame.minimumHeight(), width
        for item in (ov.legend, ov.plot):
            assert item.sceneBoundingRect().right() <= view.width() + 1, (width, item)
        assert ov.legend.columnCount == (1 if width == 800 else 2)
        label = ov.plot.getAxis("bottom").label  # the axis title, not cut at either end
        title = label.mapRectToScene(label.boundingRect())
        assert title.left() >= 0 and title.right() <= view.width() + 1, (width, title)
        # the text line, as drawn and while the mouse is over a bar, fits its width
        vb = ov.plot.getViewBox()
        for text in (ov.info.text(), "hover"):
            if text == "hover":
                ov._hover(vb.mapViewToScene(QPointF(0, float(ov.overlap.overlap[0]) / 2)))
                text = ov.info.text()
                assert text.startswith("direction 0"), text
            for line in text.split("\n"):
                assert (ov.info.fontMetrics().horizontalAdvance(line)
                        <= ov.info.contentsRect().width()), (width, line)


def test_the_plots_go_under_the_table_in_a_narrow_window(pe_window, qtbot):
    """Beside the table, an 800-pixel window left the plots a sliver: there they go under it,
    side by side, and back beside it in a wide window."""
    win = pe_window
    panel = win.panel("neurons")
    for width, beside in ((800, False), (1400, True), (800, False)):
        resize_window(qtbot, win, width, 850)
        table, curves, overlap = (top_left(w, panel) for w in
                                  (panel.table, panel.curve_frame, panel.overlap_view))
        if beside:
            assert curves.x() > table.x() + panel.table.width() - 5
            assert overlap.y() > curves.y()  # one above the other
        else:
            assert curves.y() > table.y() + panel.table.height() - 5
            assert overlap.x() > curves.x()  # side by side
        assert panel.curve_plot.getViewBox().width() >= 100, width
