"""B4 positional pattern and B7 key-position slopes, driven through the real window
(offscreen): values against the core and against a direct computation, linking through
the shared selection, and export."""

import csv
import math
import xml.etree.ElementTree as ET

import numpy as np
import torch
from conftest import resize_window, top_left, wait_idle
from exported import non_background_pixels
from PySide6.QtCore import QPointF, Qt
from tables import cell_text, click_cell

from detokgui.core.position_side import positional
from detokgui.gui.plots import frame_of

NORTH = 2258


def _sigma(x, eps):
    return torch.sqrt(x.var(dim=-1, unbiased=False) + eps)


_KEY_WEIGHTS: dict = {}


def key_weights(layer, n: int, convention: str) -> torch.Tensor:
    """w_j for j = 0..n straight from the definition (cached): E_v[1/sigma(e_v + p_j)]
    ("paper") or 1 / mean_v sigma(e_v + p_j) ("mean-sigma")."""
    cache = (id(layer), convention)
    have = _KEY_WEIGHTS.get(cache, torch.zeros(0, dtype=torch.float64))
    E, P = layer.E.double(), layer.P.double()
    extra = []
    for j in range(len(have), n + 1):
        s = _sigma(E + P[j], layer.eps)
        extra.append((1 / s).mean() if convention == "paper" else 1 / s.mean())
    if extra:
        have = torch.cat([have, torch.stack(extra)])
        _KEY_WEIGHTS[cache] = have
    return have[: n + 1]


def direct_pattern(layer, token: int, n: int, head: int, convention="paper") -> np.ndarray:
    """B4 from its definition, in float64: W^QK_h formed explicitly, every sigma computed
    from the embeddings (key weights over the whole vocabulary at each position)."""
    E, P = layer.E.double(), layer.P.double()
    Wq, Wk = layer.Wq[head].double(), layer.Wk[head].double()
    W = Wq @ Wk.T  # d x d
    b = layer.bq[head].double() @ Wk.T  # b^QK_h

    w = key_weights(layer, n, convention)
    s_n = _sigma(E[token] + P[n], layer.eps)
    keys = P[: n + 1]
    t_ep = (E[token] @ W @ keys.T) * w / s_n
    t_pp = (P[n] @ W @ keys.T) * w / s_n
    t_p = (keys @ b) * w
    scores = (t_ep + t_pp + t_p) / math.sqrt(layer.d_head)
    return torch.softmax(scores, dim=0).numpy()


def curve_data(item):
    x, y = item.getData()
    return np.asarray(x), np.asarray(y)


def click_scene(qtbot, frame, scene_pos):
    pos = frame.view.mapFromScene(scene_pos)
    qtbot.mouseClick(frame.view.viewport(), Qt.LeftButton, pos=pos)


def test_pattern_follows_token_position_and_head(window, qtbot):
    win, layer = window, window.state.layer
    pat = win.panel("pattern")
    win.show_view("pattern")
    tokens = win.panel("tokens")
    tokens.set_text(" North Korea")
    qtbot.waitUntil(lambda: tokens.text_tokens.token_ids()[:1] == [NORTH], timeout=5000)
    click_cell(qtbot, tokens.text_tokens, 0, 1)  # the token side selects ' North'
    assert win.state.query_token == NORTH
    pat.n_spin.setValue(50)
    assert win.state.query_position == 50
    win.state.set_head(2)
    wait_idle(qtbot, win)

    assert (pat.result.token, pat.result.n) == (NORTH, 50)
    core = positional.positional_pattern(layer, NORTH, 50, convention="paper")
    x, y = curve_data(pat.line_items[2])
    np.testing.assert_array_equal(x, np.arange(51))
    np.testing.assert_allclose(y, core.pattern[2], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(y, direct_pattern(layer, NORTH, 50, 2), rtol=1e-4, atol=1e-7)
    assert abs(y.sum() - 1) < 1e-5
    # the grid: 51 keys on 7 rows of 8, blank (NaN) past n, n outlined
    grid = pat.grid_values
    assert grid.shape == (7, 8)
    np.testing.assert_allclose(grid.ravel()[:51], core.pattern[2], rtol=1e-6)
    assert np.isnan(grid.ravel()[51:]).all()
    assert pat.grid_mark.isVisible() and pat.grid_mark.rect().topLeft() == QPointF(50 % 8, 50 // 8)

    # another head only redraws; the position spin box follows the shared state
    win.state.set_head(3)
    np.testing.assert_allclose(curve_data(pat.line_items[3])[1], core.pattern[3], rtol=1e-6)
    win.state.set_query_position(77)
    assert pat.n_spin.value() == 77
    wait_idle(qtbot, win)
    np.testing.assert_allclose(curve_data(pat.line_items[3])[1],
                               direct_pattern(layer, NORTH, 77, 3), rtol=1e-4, atol=1e-7)

    # all heads: one line per head, each equal to the core
    heads = pat.options.widget("heads")
    heads.setCurrentIndex(heads.findData("all"))
    assert sorted(pat.line_items) == list(range(layer.n_heads))
    core = positional.positional_pattern(layer, NORTH, 77, convention="paper")
    for h, item in pat.line_items.items():
        np.testing.assert_allclose(curve_data(item)[1], core.pattern[h], rtol=1e-6)

    # clicking a position on the line plot, then on the grid, sets the query position
    vb = pat.line_plot.getViewBox()
    click_scene(qtbot, pat.line_frame, vb.mapViewToScene(QPointF(20, float(core.pattern[3, 20]))))
    assert win.state.query_position == 20 and pat.n_spin.value() == 20
    wait_idle(qtbot, win)
    assert pat.result.n == 20 and pat.grid_values.shape == (5, 5)
    gvb = pat.grid_plot.getViewBox()
    click_scene(qtbot, pat.grid_frame, gvb.mapViewToScene(QPointF(2.5, 1.5)))  # row 1, col 2
    assert win.state.query_position == 1 * 5 + 2
    wait_idle(qtbot, win)
    assert pat.result.n == 7

    # the mean-sigma convention, labelled
    convention = pat.options.widget("convention")
    convention.setCurrentIndex(convention.findData("mean-sigma"))
    wait_idle(qtbot, win)
    assert pat.result.convention == "mean-sigma"
    np.testing.assert_allclose(curve_data(pat.line_items[3])[1],
                               direct_pattern(layer, NORTH, 7, 3, "mean-sigma"),
                               rtol=1e-4, atol=1e-7)
    assert "mean-σ convention" in frame_of(pat.line_plot).title_text()


def test_stale_pattern_is_dropped(window, qtbot):
    win = window
    pat = win.panel("pattern")
    win.show_view("pattern")
    for n in (10, 11, 12, 13):
        win.state.set_query_position(n)
    win.state.set_query_token(NORTH)
    wait_idle(qtbot, win)
    assert (pat.result.token, pat.result.n) == (NORTH, 13)
    assert len(curve_data(pat.line_items[win.state.head])[0]) == 14


def test_head_classification_table(window, qtbot):
    win, layer = window, window.state.layer
    pat = win.panel("pattern")
    win.show_view("pattern")
    wait_idle(qtbot, win)
    assert pat.classes.button.isEnabled()
    n = win.state.query_position
    assert pat.channel("classes").shown.n == n  # the n the plots show
    expected = {r["head"]: r for r in positional.classify_heads(layer, n).rows()}
    rows = pat.classes.rows()
    assert sorted(int(r["head"]) for r in rows) == list(range(layer.n_heads))
    for r in rows:
        e = expected[int(r["head"])]
        assert r["label"] == e["label"]
        for key in ("span", "span_fraction", "mean_distance", "recent_weight",
                    "self_rank_median", "self_top_fraction", "bias_slope"):
            assert math.isclose(float(r[key]), e[key], rel_tol=2e-3, abs_tol=1e-3 * (
                1 if key.endswith("fraction") or key == "recent_weight" else 0)), (key, r, e)
    # the reason is the row's tooltip; a click selects the head, also after sorting
    t = pat.classes.table
    size = win.size()
    resize_window(qtbot, win, 1024, 700)
    metrics = t.horizontalHeader().fontMetrics()
    for c in range(t.model().columnCount()):  # each header whole (equal widths cut them)
        title = t.model().headerData(c, Qt.Horizontal)
        assert t.columnWidth(c) >= metrics.horizontalAdvance(title), title
    resize_window(qtbot, win, size.width(), size.height())
    assert expected[int(cell_text(t, 0, 0))]["reason"] in t.model().index(0, 1).data(
        Qt.ToolTipRole)
    t.sortByColumn(2, Qt.DescendingOrder)  # by span
    spans = [float(cell_text(t, r, 2)) for r in range(t.model().rowCount())]
    assert spans == sorted(spans, reverse=True)
    widest = int(cell_text(t, 0, 0))
    click_cell(qtbot, t, 0, 3)
    assert win.state.head == widest
    assert [i.row() for i in t.selectionModel().selectedRows()] == [0]

    # "Classify heads" on an up-to-date table computes nothing
    ch = pat.channel("classes")
    before = ch.result
    qtbot.mouseClick(pat.classes.button, Qt.LeftButton)
    assert ch.pending is None and not win.jobs.busy and ch.result is before
    # another n: classified again at that n
    win.state.set_query_position(30)
    wait_idle(qtbot, win)
    assert ch.result is not before and ch.result.n == 30 and "n = 30" in pat.classes.label.text()
    expected = positional.classify_heads(layer, 30)
    assert [r["label"] for r in pat.classes.rows()] == [expected.labels[int(r["head"])]
                                                        for r in pat.classes.rows()]


def test_classification_can_be_cancelled_and_restarted(window, qtbot):
    win, layer = window, window.state.layer
    pat = win.panel("pattern")
    win.show_view("pattern")  # starts the classification once painted
    qtbot.waitUntil(lambda: not pat.classes.button.isEnabled(), timeout=5000)
    win.cancel_jobs()
    wait_idle(qtbot, win)
    assert "cancelled" in pat.classes.status.text()
    assert pat.classes.button.isEnabled() and pat.classes.table.model().rowCount() == 0
    qtbot.mouseClick(pat.classes.button, Qt.LeftButton)
    wait_idle(qtbot, win)
    assert pat.classes.table.model().rowCount() == layer.n_heads


def test_job_finished_just_before_cancel_reports_cancel(qtbot):
    """A job whose result is already queued when it is cancelled reports the cancel (a
    panel waiting for it must not stay at "computing…") and its result is dropped."""
    from PySide6.QtCore import QObject, Slot

    from detokgui.gui.jobs import JobRunner

    class Seen(QObject):
        def __init__(self):
            super().__init__()
            self.keys = []

        @Slot(str)
        def cancelled(self, key):
            self.keys.append(key)

    runner, seen, results = JobRunner(), Seen(), []
    runner.cancelled.connect(seen.cancelled)
    runner.submit("k", lambda: "done", results.append)
    runner.wait(5000)  # finished in the worker; its result waits in the event queue
    runner.cancel("k")
    qtbot.waitUntil(lambda: not runner.busy, timeout=5000)
    assert results == [] and seen.keys == ["k"]


def test_slopes_histogram_extremes_and_click(window, qtbot):
    win, layer = window, window.state.layer
    sl = win.panel("slopes")
    win.show_view("slopes")
    win.state.set_head(1)
    wait_idle(qtbot, win)
    res = positional.token_position_slopes(layer)
    counts, edges = positional.slope_histogram(res, 1, sl.options.widget("bins").value())
    x, y = curve_data(sl.hist_plot.listDataItems()[0])
    np.testing.assert_allclose(x, edges, rtol=1e-6)
    np.testing.assert_array_equal(y, counts)
    ext = positional.slope_extremes(res, sl.options.widget("k").value())
    assert sl.extreme_ids("top") == ext.top_ids[1].tolist()
    assert sl.extreme_ids("bottom") == ext.bottom_ids[1].tolist()
    assert float(cell_text(sl.tables["top"], 0, 2)) == float(f"{ext.top_values[1, 0]:.4g}")

    # clicking an extreme token selects it; the histogram marks it, the curve shows it
    target = ext.bottom_ids[1, 2].item()
    click_cell(qtbot, sl.tables["bottom"], 2, 0)
    assert win.state.query_token == target
    wait_idle(qtbot, win)
    assert sl.marker.isVisible() and math.isclose(sl.marker.value(), res.column(1)[target],
                                                  rel_tol=1e-6)
    raw, fit = sl.curve_plot.listDataItems()[:2]
    xs, fy = curve_data(fit)
    slope = np.polyfit(xs, fy, 1)[0]
    assert math.isclose(slope, res.column(1)[target], rel_tol=1e-4)
    np.testing.assert_allclose(np.polyfit(*curve_data(raw), 1)[0], slope, rtol=1e-4)
    assert [i.row() for i in sl.tables["bottom"].selectionModel().selectedRows()] == [2]

    # a fewer extremes / other bins request recomputes; the head switch only redraws
    sl.options.widget("k").setValue(5)
    wait_idle(qtbot, win)
    assert len(sl.extreme_ids("top")) == 5
    win.state.set_head(3)
    assert sl.extreme_ids("top") == positional.slope_extremes(res, 5).top_ids[3].tolist()

    # a click on the curve sets the shared query position, which the pattern panel uses
    vb = sl.curve_plot.getViewBox()
    click_scene(qtbot, sl.curve_frame, vb.mapViewToScene(QPointF(30, 0)))
    assert win.state.query_position == 30
    assert win.panel("pattern").n_spin.value() == 30


def test_slopes_plots_go_above_the_tables_in_a_narrow_window(window, qtbot):
    """Beside the plots, an 800-pixel window cut the extremes tables to ~110 pixels each:
    there the plots go above the tables, side by side, and back beside them when wide
    (this window is at least ~900 pixels wide: its panel is then ~600)."""
    win = window
    win.show_view("slopes")
    sl = win.panel("slopes")
    for width, beside in ((920, False), (1400, True), (920, False)):
        resize_window(qtbot, win, width, 850)
        hist, curve, top = (top_left(w, sl) for w in
                            (sl.hist_frame, sl.curve_frame, sl.tables["top"]))
        if beside:
            assert top.x() > hist.x() + sl.hist_frame.width() - 5
            assert curve.y() > hist.y()  # one above the other
        else:
            assert top.y() > hist.y() + sl.hist_frame.height() - 5
            assert curve.x() > hist.x() and curve.y() == hist.y()  # side by side
            assert sl.tables["top"].width() >= 200, width
        assert sl.hist_frame.width() >= 150 and sl.curve_frame.width() >= 150


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_export_each_format(window, qtbot, tmp_path):
    win, layer = window, window.state.layer
    win.state.set_query_token(NORTH)
    win.state.set_query_position(40)
    win.state.set_head(1)
    for name in ("pattern", "slopes"):
        win.show_view(name)
        wait_idle(qtbot, win)
        for k, frame in enumerate(win.panel(name).plot_frames()):
            for fmt in ("png", "svg", "csv"):
                frame.export(tmp_path / f"{name}{k}.{fmt}")
            assert non_background_pixels(tmp_path / f"{name}{k}.png") > 2000
            root = ET.parse(tmp_path / f"{name}{k}.svg").getroot()
            shapes = [e for e in root.iter()
                      if e.tag.split("}")[-1] in ("path", "rect", "image", "polyline", "text")]
            assert len(shapes) > 10

    core = positional.positional_pattern(layer, NORTH, 40, convention="paper")
    line = _rows(tmp_path / "pattern0.csv")  # the selected head's line
    assert len(line) == 41 and {r["head"] for r in line} == {"1"}
    assert {r["convention"] for r in line} == {"paper"}
    np.testing.assert_allclose([float(r["pattern"]) for r in line], core.pattern[1], rtol=1e-6)
    np.testing.assert_allclose([float(r["t_ep"]) for r in line], core.t_ep[1], rtol=1e-5)
    grid = _rows(tmp_path / "pattern1.csv")
    assert [(int(r["grid_row"]), int(r["grid_col"])) for r in grid] == [
        (j // 7, j % 7) for j in range(41)]  # ceil(sqrt(41)) = 7 columns

    res = positional.token_position_slopes(layer)
    counts, edges = positional.slope_histogram(res, 1, win.panel("slopes").options.widget("bins").value())
    hist = _rows(tmp_path / "slopes0.csv")
    assert [int(r["count"]) for r in hist] == counts.tolist()
    np.testing.assert_allclose([float(r["left"]) for r in hist], edges[:-1], rtol=1e-6)
    curve = _rows(tmp_path / "slopes1.csv")
    assert len(curve) == layer.n_positions and {r["token_id"] for r in curve} == {str(NORTH)}
    fit = np.array([float(r["fit"]) for r in curve])
    assert math.isclose(np.polyfit(np.arange(len(fit)), fit, 1)[0], res.column(1)[NORTH],
                        rel_tol=1e-4)
