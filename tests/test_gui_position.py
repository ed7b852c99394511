"""The position side (B1-B3, B5) through the real window (offscreen): the query-position
slider drives every plot with the values of the core functions, clicks choose a position,
every plot exports, and a checkpoint with other n_positions works end to end."""

import csv

import numpy as np
import pytest
from approx import roundings
from conftest import close_jobs, open_window
from exported import non_background_pixels, svg_shapes
from PySide6.QtCore import QPointF, Qt
from svgcheck import image_array

from detokgui.core.model.conventions import default_query_position
from detokgui.core.model.sources.demo import write_random_checkpoint
from detokgui.core.position_side import positional


def drawn(panel, i=None):
    """The panel shows its current request (at query position i, if given)."""
    def check():
        req = panel.shown_request
        return req is not None and panel.settled() and (i is None or req.i == i)
    return check


def show_bias(win, qtbot, i=None):
    win.show_view("bias")
    panel = win.panel("bias")
    qtbot.waitUntil(drawn(panel, i), timeout=10000)
    return panel


def curve_y(grid, name, h):
    """The y values series `name` of a SmallMultiples holds for head h, after checking
    that its curve item draws them: every point within the x range, y clipped to the
    cells' y range."""
    x, y = grid.data(name, h)
    (x0, x1), (y0, y1) = grid.x_range, grid.y_range
    keep = (x >= x0) & (x <= x1)
    xd, yd = grid.drawn(name, h)
    np.testing.assert_allclose(xd, x[keep], rtol=0, atol=1e-9 * (x1 - x0))
    np.testing.assert_allclose(yd, np.clip(y[keep], y0, y1), rtol=0, atol=1e-9 * (y1 - y0))
    return y


def assert_bias_plots(panel, layer, i, sigma="mean", convention="paper"):
    """Every visible cell of every plot shows the core functions' values at i."""
    heads = panel.result.heads
    assert panel.result.convention == convention
    lines = positional.bias_lines(layer, i, heads, convention=convention)
    b3 = positional.positional_bias(layer, i, sigma, heads, convention)
    band = positional.position_bias_band(layer, heads, convention)
    tp = panel.grids["tp"]
    polygons = tp.band_items["band"].path().toSubpathPolygons()
    assert len(polygons) == len(heads)  # one outline per cell, in the order of the heads
    for r, h in enumerate(heads):
        grid = panel.grids["tpp"]
        for s in ("mean", "max", "min"):
            np.testing.assert_allclose(curve_y(grid, s, h), lines[s].t_pp[r], rtol=1e-6,
                                       atol=1e-6)
            np.testing.assert_array_equal(grid.data(s, h)[0], np.arange(i + 1))
        np.testing.assert_allclose(curve_y(panel.grids["total"], "total", h), b3.total[r],
                                   rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(curve_y(panel.grids["softmax"], "softmax", h),
                                   b3.softmax[r], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(curve_y(tp, "mean", h), band.mean[r], rtol=1e-6, atol=1e-6)
        j, lower, upper = tp.band("band", h)
        np.testing.assert_allclose(lower, band.lower[r], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(upper, band.upper[r], rtol=1e-6, atol=1e-6)
        # drawn along lower and back along upper, every key in view, clipped to the cell
        outline = polygons[r]
        pts = np.array([(outline.at(k).x(), outline.at(k).y()) for k in range(outline.size())])
        xs, ys = tp.to_data(h, pts[:, 0], pts[:, 1])
        (x0, x1), (y0, y1) = tp.x_range, tp.y_range
        keep = (j >= x0) & (j <= x1)
        assert outline.size() >= 2 * keep.sum()
        assert xs.min() == pytest.approx(j[keep][0]) and xs.max() == pytest.approx(j[keep][-1])
        assert ys.min() == pytest.approx(max(y0, lower[keep].min()), rel=1e-6, abs=1e-6)
        assert ys.max() == pytest.approx(min(y1, upper[keep].max()), rel=1e-6, abs=1e-6)
    for key in ("tp", "tpp", "total", "softmax"):
        grid = panel.grids[key]
        assert grid.marker_at[0] == i  # j = i, in every cell
        marks = grid.markers.path()
        assert marks.elementCount() == 2 * len(heads)
        for k in range(0, marks.elementCount(), 2):
            h = heads[k // 2]
            assert grid.to_data(h, marks.elementAt(k).x, 0)[0] == pytest.approx(i)


def test_slider_drives_all_plots_with_core_values(window, qtbot):
    win, layer = window, window.state.layer
    panel = show_bias(win, qtbot)
    # the default query position: the paper's 500 scaled to the model's positions
    assert win.state.query_position == default_query_position(layer.n_positions)
    assert panel.slider.maximum() == panel.spin.maximum() == layer.n_positions - 1
    panel.heads_box.set_mode("all")
    panel.slider.setValue(77)
    assert win.state.query_position == 77 and panel.spin.value() == 77
    qtbot.waitUntil(drawn(panel, 77), timeout=10000)
    assert panel.result.heads == list(range(layer.n_heads))
    for grid in panel.grids.values():
        assert grid.heads == list(range(layer.n_heads))
    assert_bias_plots(panel, layer, 77)
    # the causal region: keys past i are shaded in every cell
    grid = panel.grids["softmax"]
    shaded = grid.masked.path().toSubpathPolygons()
    assert len(shaded) == layer.n_heads
    left = shaded[0].boundingRect().left()
    assert grid.to_data(0, left, 0)[0] == pytest.approx(77.5)
    # the spin box and the shared state drive it too
    panel.spin.setValue(5)
    assert win.state.query_position == 5 and panel.slider.value() == 5
    qtbot.waitUntil(drawn(panel, 5), timeout=10000)
    assert_bias_plots(panel, layer, 5)
    win.state.set_query_position(layer.n_positions - 1)
    assert panel.slider.value() == layer.n_positions - 1
    qtbot.waitUntil(drawn(panel, layer.n_positions - 1), timeout=10000)
    assert_bias_plots(panel, layer, layer.n_positions - 1)


def test_sigma_raw_window_and_head_choice(window, qtbot):
    win, layer = window, window.state.layer
    panel = show_bias(win, qtbot)
    win.state.set_query_position(60)
    win.state.set_head(2)
    qtbot.waitUntil(drawn(panel, 60), timeout=10000)
    assert panel.result.heads == [2]  # the selected head
    box = panel.options.widget("b3_sigma")
    box.setCurrentIndex(box.findData("max"))
    qtbot.waitUntil(drawn(panel, 60), timeout=10000)
    assert panel.result.b3_sigma == "max"
    assert_bias_plots(panel, layer, 60, "max")
    assert "σ max" in panel.grids["total"].title_text()

    panel.options.widget("raw").setChecked(True)
    tp = panel.grids["tp"]
    band = positional.position_bias_band(layer, [2], "paper")
    assert tp.curves["raw"].isVisible() and not tp.curves["mean"].isVisible()
    assert not tp.band_items["band"].isVisible()
    np.testing.assert_allclose(curve_y(tp, "raw", 2), band.raw[0], rtol=1e-6)
    assert "without LayerNorm" in tp.title_text()

    panel.options.widget("window_size").setValue(10)
    panel.options.widget("window").setChecked(True)
    qtbot.waitUntil(panel.settled, timeout=5000)
    for key in ("tp", "tpp", "total", "softmax"):
        x0, x1 = panel.grids[key].x_range
        assert x0 == pytest.approx(50.5) and 60 < x1 <= 62  # keys 51..60 and the mask past i
        xd, _ = panel.grids[key].drawn("raw" if key == "tp" else
                                      {"tpp": "mean"}.get(key, key), 2)
        last = np.floor(x1) if key == "tp" else 60  # T_p: every key in view, past i too
        assert xd.min() == pytest.approx(51) and xd.max() == pytest.approx(last)
    panel.options.widget("window").setChecked(False)
    qtbot.waitUntil(panel.settled, timeout=5000)
    x0, x1 = panel.grids["tpp"].x_range
    assert x0 < 0 and 60 < x1

    panel.heads_box.set_mode("set", "3, 1")
    qtbot.waitUntil(drawn(panel, 60), timeout=10000)
    assert panel.result.heads == [1, 3] and panel.grids["softmax"].heads == [1, 3]
    assert_bias_plots(panel, layer, 60, "max")


def _paper_by_hand(layer, i, heads):
    """The authors' position terms straight from the sigma table: every key term divided by
    each token's own sigma(e_v + p_j) and averaged over v; sigma_i = vocabulary mean."""
    import torch

    S = layer.sigma_stats().table.double()  # [V, L]
    w = (1.0 / S).mean(0)  # E_v[1/S[v, j]]
    P, hs = layer.P.double(), list(heads)
    raw_p = torch.stack([layer.bQK[h].double() @ P.T for h in hs])  # [h, L]
    q = torch.stack([P[i] @ layer.Wq[h].double() for h in hs])  # [h, d']
    k = torch.stack([P @ layer.Wk[h].double() for h in hs])  # [h, L, d']
    raw_pp = torch.einsum("hd,hjd->hj", q, k)[:, : i + 1]
    t_pp = raw_pp / S[:, i].mean() * w[: i + 1]
    per_token = raw_p[:, None, :] / S[None]  # [h, V, L]
    lo = torch.quantile(per_token, 0.025, dim=1)
    hi = torch.quantile(per_token, 0.975, dim=1)
    return (raw_p * w).numpy(), lo.numpy(), hi.numpy(), t_pp.numpy()


def test_paper_convention_by_default_and_mean_sigma_as_option(window, qtbot, tmp_path):
    win, layer = window, window.state.layer
    panel = show_bias(win, qtbot)
    win.state.set_head(1)
    win.state.set_query_position(30)
    qtbot.waitUntil(drawn(panel, 30), timeout=10000)
    assert panel.options.widget("convention").currentData() == "paper"
    t_p, lo, hi, t_pp = _paper_by_hand(layer, 30, [1])
    tp = panel.grids["tp"]
    np.testing.assert_allclose(curve_y(tp, "mean", 1), t_p[0], rtol=1e-4, atol=1e-5)
    _j, lower, upper = tp.band("band", 1)
    np.testing.assert_allclose(lower, lo[0], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(upper, hi[0], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(curve_y(panel.grids["tpp"], "mean", 1), t_pp[0],
                               rtol=1e-4, atol=1e-5)
    for key in ("tp", "tpp", "total", "softmax"):  # every title names the convention
        assert "paper convention" in panel.grids[key].title_text()
    assert "Fig 3-A" in tp.title_text() and "B1" not in tp.title_text()

    box = panel.options.widget("convention")
    box.setCurrentIndex(box.findData("mean-sigma"))
    qtbot.waitUntil(lambda: drawn(panel, 30)() and panel.result.convention == "mean-sigma",
                    timeout=10000)
    assert_bias_plots(panel, layer, 30, convention="mean-sigma")
    for key in ("tp", "tpp", "total", "softmax"):
        assert "mean-σ convention" in panel.grids[key].title_text()
    panel.plot_frames()[1].export(tmp_path / "tpp.csv")
    assert {row["convention"] for row in _rows(tmp_path / "tpp.csv")} == {"mean-sigma"}


def test_settings_are_remembered(window, qtbot):
    from detokgui.gui.panels.positional_bias import PositionalBiasPanel

    win = window
    panel = show_bias(win, qtbot)
    panel.options.widget("window").setChecked(True)
    panel.options.widget("window_size").setValue(17)
    box = panel.options.widget("b3_sigma")
    box.setCurrentIndex(box.findData("none"))
    panel.options.widget("show_total").setChecked(False)
    panel.heads_box.set_mode("set", "0,2")
    again = PositionalBiasPanel(win.state, win.jobs)
    qtbot.addWidget(again)
    assert again.options.widget("window").isChecked()
    assert again.options.widget("window_size").value() == 17
    assert again.options.widget("b3_sigma").currentData() == "none"
    assert not again.options.widget("show_total").isChecked()
    assert again.heads_box.mode == "set" and again.heads_box.edit.text() == "0,2"
    assert not panel.frames["total"].isVisible()


def test_dragging_never_queues_work(window, qtbot, monkeypatch):
    import threading

    win = window
    panel = show_bias(win, qtbot)
    panel.heads_box.set_mode("all")
    qtbot.waitUntil(drawn(panel), timeout=10000)
    running, most, lock = [0], [0], threading.Lock()
    original = win.jobs.submit

    def submit(key, fn, on_done=None, **kw):
        if key != panel.job_key():
            return original(key, fn, on_done, **kw)

        def counted():  # on the worker thread: how many computations run at once
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            try:
                return fn()
            finally:
                with lock:
                    running[0] -= 1
        return original(key, counted, on_done, **kw)

    monkeypatch.setattr(win.jobs, "submit", submit)
    from PySide6.QtWidgets import QApplication

    for i in range(120):
        panel.slider.setValue(i)
        if i % 3 == 0:
            QApplication.processEvents()
    qtbot.waitUntil(drawn(panel, 119), timeout=10000)
    assert most[0] == 1  # never more than one computation at a time
    assert_bias_plots(panel, win.state.layer, 119)


def test_a_result_draws_every_plot_of_every_head_at_once(window, qtbot):
    """Showing all heads draws every head's cell of the four plots when the result is
    drawn, in that one call (one plot item per figure: no cells to build)."""
    win = window
    panel = show_bias(win, qtbot)
    n_heads = win.state.layer.n_heads
    assert panel.result.heads != list(range(n_heads))
    at_draw = []

    def check(_name):
        i = panel.result.i
        at_draw.append([sorted(h for h in g.heads if len(g.data(s, h)[0]) == i + 1)
                        for g, s in ((panel.grids["tpp"], "min"),
                                     (panel.grids["softmax"], "softmax"))])

    panel.drawn.connect(check)
    panel.heads_box.set_mode("all")
    qtbot.waitUntil(lambda: bool(at_draw), timeout=10000)
    assert at_draw[0] == [list(range(n_heads))] * 2
    qtbot.waitUntil(drawn(panel), timeout=10000)
    assert_bias_plots(panel, win.state.layer, win.state.query_position)


def test_a_slider_step_lays_out_nothing(window, qtbot):
    """A step of the query position changes the i in three titles and redraws the plots,
    but asks for no layout pass of the panel (issue 41: each QLabel title and the status
    line naming i laid out the window up to the main window, on every step)."""
    from PySide6.QtCore import QEvent, QObject

    win = window
    panel = show_bias(win, qtbot)
    win.state.set_query_position(60)
    qtbot.waitUntil(drawn(panel, 60), timeout=10000)
    qtbot.wait(50)
    status = panel.status.text()
    watched = [panel, panel.split, *(s for s, _ in panel.rows), *panel.frames.values()]
    requests = []

    class Layouts(QObject):
        def eventFilter(self, obj, ev):
            if ev.type() == QEvent.LayoutRequest:
                requests.append(obj)
            return False

    spy = Layouts()
    for w in watched:
        w.installEventFilter(spy)
    panel.slider.setValue(61)
    qtbot.waitUntil(drawn(panel, 61), timeout=10000)
    qtbot.wait(50)
    for key in ("tpp", "total", "softmax"):
        assert "i = 61" in panel.grids[key].title_text()
    assert panel.status.text() == status and "i = " not in status
    assert requests == []


def test_a_page_shown_again_is_on_screen_as_drawn(window, qtbot):
    """A page shown after its data changed, then given a new query position: what the
    window shows (its backing store, as the screen gets it) is what the plot draws afresh.
    With the plots' scenes reporting their changes through a connected `changed` signal,
    Qt repainted the plot but not its axis's labels: the y labels of the range before
    stayed on screen beside the new curve."""
    win = window
    pattern = win.panel("pattern")
    win.show_view("pattern")
    qtbot.waitUntil(drawn(pattern), timeout=10000)
    frame = pattern.line_frame
    for i, token in ((115, 28), (30, 900), (90, 28)):
        show_bias(win, qtbot)
        win.state.set_query_token(token)
        win.state.set_query_position(46)
        win.state.set_query_position(65)
        qtbot.waitUntil(drawn(win.panel("bias"), 65), timeout=10000)
        win.show_view("pattern")
        win.state.set_query_position(i)
        qtbot.waitUntil(lambda n=i: drawn(pattern)() and pattern.shown_request.n == n,
                        timeout=10000)
        qtbot.wait(300)
        corner = frame.view.mapTo(win, frame.view.rect().topLeft())
        screen = image_array(win.screen().grabWindow(
            win.winId(), corner.x(), corner.y(), frame.view.width(), frame.view.height()
        ).toImage())
        fresh = image_array(frame.view.grab().toImage())
        assert screen.shape == fresh.shape
        assert (np.abs(screen - fresh).max(axis=2) > 40).sum() == 0, f"i = {i}"


def test_click_on_a_plot_chooses_the_query_position(window, qtbot):
    win = window
    panel = show_bias(win, qtbot)
    win.state.set_query_position(90)
    qtbot.waitUntil(drawn(panel, 90), timeout=10000)
    frame = panel.frames["tpp"]
    grid = panel.grids["tpp"]
    (x0, x1) = grid.x_range
    scene_pos = grid.vb.mapViewToScene(QPointF((20.2 - x0) / (x1 - x0), 0.5))  # one cell
    pos = frame.view.mapFromScene(scene_pos)
    qtbot.mouseMove(frame.view.viewport(), pos)
    qtbot.waitUntil(lambda: "j = 20" in panel.status.text() and "T_pp" in panel.status.text(),
                    timeout=3000)
    qtbot.mouseClick(frame.view.viewport(), Qt.LeftButton, pos=pos)
    assert win.state.query_position == 20
    qtbot.waitUntil(drawn(panel, 20), timeout=10000)
    assert panel.slider.value() == 20

    win.show_view("position-stats")
    stats = win.panel("position-stats")
    qtbot.waitUntil(lambda: stats.result is not None, timeout=10000)
    assert stats.marker.value() == 20  # shows the shared query position
    vb = stats.var_plot.getViewBox()
    (_x0, _x1), (y0, y1) = vb.viewRange()
    pos = stats.var_frame.view.mapFromScene(vb.mapViewToScene(QPointF(33, (y0 + y1) / 2)))
    qtbot.mouseClick(stats.var_frame.view.viewport(), Qt.LeftButton, pos=pos)
    assert win.state.query_position == 33 and stats.marker.value() == 33


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_export_each_format(window, qtbot, tmp_path):
    win, layer = window, window.state.layer
    L = layer.n_positions
    panel = show_bias(win, qtbot)
    panel.heads_box.set_mode("set", "0,3")
    win.state.set_query_position(40)
    qtbot.waitUntil(drawn(panel, 40), timeout=10000)
    names = dict(zip(("tp", "tpp", "total", "softmax"), panel.plot_frames()))
    for key, frame in names.items():
        for fmt in ("png", "svg", "csv"):
            frame.export(tmp_path / f"{key}.{fmt}")
        assert non_background_pixels(tmp_path / f"{key}.png") > 2000
        assert len(svg_shapes(tmp_path / f"{key}.svg")) > 10
    rows = _rows(tmp_path / "tp.csv")
    band = positional.position_bias_band(layer, [0, 3], "paper")
    assert len(rows) == 2 * L and {row["convention"] for row in rows} == {"paper"}
    for row in rows[::9]:
        r = [0, 3].index(int(row["head"]))
        j = int(row["j"])
        assert float(row["raw"]) == pytest.approx(float(band.raw[r, j]), rel=1e-6, abs=1e-7)
        assert float(row["lower"]) == pytest.approx(float(band.lower[r, j]), rel=1e-6, abs=1e-7)
        assert float(row["t_p_mean"]) == pytest.approx(float(band.mean[r, j]), rel=1e-6, abs=1e-7)
    rows = _rows(tmp_path / "tpp.csv")
    assert len(rows) == 2 * 3 * 41 and {r["sigma"] for r in rows} == {"mean", "max", "min"}
    lines = positional.bias_lines(layer, 40, [0, 3], convention="paper")
    assert {row["convention"] for row in rows} == {"paper"}
    for row in rows[::5]:
        r, j = [0, 3].index(int(row["head"])), int(row["j"])
        assert int(row["i"]) == 40
        assert float(row["t_pp"]) == pytest.approx(float(lines[row["sigma"]].t_pp[r, j]),
                                                   rel=1e-6, abs=1e-7)
    rows = _rows(tmp_path / "softmax.csv")
    b3 = positional.positional_bias(layer, 40, "mean", [0, 3], "paper")
    assert len(rows) == 2 * 41
    for row in rows:
        r, j = [0, 3].index(int(row["head"])), int(row["j"])
        assert float(row["softmax"]) == pytest.approx(float(b3.softmax[r, j]), rel=1e-6, abs=1e-9)
        assert float(row["total"]) == pytest.approx(float(b3.total[r, j]), rel=1e-6, abs=1e-7)

    win.show_view("position-stats")
    stats = win.panel("position-stats")
    stats.heads_box.set_mode("all")
    qtbot.waitUntil(lambda: stats.settled() and stats.shown_request is not None
                    and len(stats.shown_request.heads) == layer.n_heads, timeout=10000)
    var_frame, last_frame = stats.plot_frames()
    for name, frame in (("variance", var_frame), ("last", last_frame)):
        for fmt in ("png", "svg", "csv"):
            frame.export(tmp_path / f"{name}.{fmt}")
        assert non_background_pixels(tmp_path / f"{name}.png") > 2000
        assert len(svg_shapes(tmp_path / f"{name}.svg")) > 10
    rows = _rows(tmp_path / "variance.csv")
    var = positional.position_variance(layer)
    assert len(rows) == L
    np.testing.assert_allclose([float(r["variance"]) for r in rows], var, rtol=1e-6)
    rows = _rows(tmp_path / "last.csv")
    assert len(rows) == layer.n_heads * sum(i + 1 for i in range(L - 5, L))
    last = positional.raw_pp_last_positions(layer, 5)
    for row in rows[::11]:
        h, i, j = int(row["head"]), int(row["i"]), int(row["j"])
        assert float(row["raw_t_pp"]) == pytest.approx(
            float(last.values[h, i - (L - 5), j]), rel=1e-6, abs=1e-7)


def _direct_b5(folder):
    """Position-embedding variance and raw T_pp straight from the checkpoint's tensors:
    ln_1's centring and gamma folded into W^Q, W^K by hand
    (docs/math/folding.md#the-folded-tensors)."""
    from safetensors.torch import load_file

    sd = load_file(str(folder / "model.safetensors"))
    cfg = __import__("json").loads((folder / "config.json").read_text())
    P = sd["transformer.wpe.weight"].double()
    gamma = sd["transformer.h.0.ln_1.weight"].double()
    W = sd["transformer.h.0.attn.c_attn.weight"].double()  # [d, 3d], columns q | k | v
    d, H = cfg["n_embd"], cfg["n_head"]
    dh = d // H
    Pc = (P - P.mean(dim=1, keepdim=True)) * gamma
    var = ((P - P.mean(dim=1, keepdim=True)) ** 2).mean(dim=1)
    q = (Pc @ W[:, :d]).reshape(-1, H, dh)
    k = (Pc @ W[:, d: 2 * d]).reshape(-1, H, dh)
    return var.numpy(), q, k


def test_position_stats_against_direct_computation(window, qtbot, tiny_ckpt):
    win, layer = window, window.state.layer
    L = layer.n_positions
    var, q, k = _direct_b5(tiny_ckpt)
    win.show_view("position-stats")
    stats = win.panel("position-stats")
    stats.heads_box.set_mode("set", "1,2")
    qtbot.waitUntil(lambda: stats.settled() and stats.shown_request is not None
                    and stats.shown_request.heads == (1, 2), timeout=10000)
    x, y = stats.var_curve.getOriginalDataset()
    np.testing.assert_array_equal(x, np.arange(L))
    np.testing.assert_allclose(y, var, rtol=1e-5)
    assert np.argmax(var) == 0  # the demo checkpoint's position 0 is scaled up, like GPT-2's
    vb = stats.var_plot.getViewBox()

    def labels_inside():  # the ends' labels are inside the plot, not cut off
        area = vb.sceneBoundingRect()
        return all(area.contains(t.mapRectToScene(t.boundingRect())) for t in stats.end_labels)

    stats.var_frame.view.repaint()  # pyqtgraph ranges the view when it paints
    qtbot.waitUntil(labels_inside, timeout=3000)
    # the panel's value, shown to 3 digits; the direct one may round to the other side
    assert any(f"Var(p_0) = {s}" in stats.status.text() for s in roundings(var[0], "{:.3g}", 1e-5))
    grid = stats.grid
    colors = grid.title_text()
    for i in range(L - 5, L):
        assert f"i = {i}" in colors
    for h in (1, 2):
        for n, i in enumerate(range(L - 5, L)):
            xs = grid.data(f"q{n}", h)[0]
            expected = (k[: i + 1, h] @ q[i, h]).numpy()  # (p_i Wq_h)(p_j Wk_h)^T, j <= i
            np.testing.assert_array_equal(xs, np.arange(i + 1))
            np.testing.assert_allclose(curve_y(grid, f"q{n}", h), expected, rtol=1e-4,
                                       atol=1e-5)
    stats.options.widget("count").setValue(2)
    qtbot.waitUntil(lambda: stats.settled() and stats.shown_request.count == 2, timeout=10000)
    assert [c.isVisible() for c in grid.curves.values()] == [True, True, False, False, False]
    np.testing.assert_allclose(curve_y(grid, "q1", 1), (k[:L, 1] @ q[L - 1, 1]).numpy(),
                               rtol=1e-4, atol=1e-5)


def test_checkpoint_with_256_positions_end_to_end(qtbot, tmp_path):
    folder = write_random_checkpoint(tmp_path / "p256", n_embd=64, n_head=4, n_positions=256,
                                     seed=7)
    win = open_window(qtbot, folder)
    try:
        layer = win.state.layer
        assert layer.n_positions == 256
        panel = show_bias(win, qtbot)
        assert panel.slider.maximum() == 255 and panel.spin.maximum() == 255
        assert panel.position.max_label.text() == "of 255"
        panel.heads_box.set_mode("all")
        panel.slider.setValue(255)
        qtbot.waitUntil(drawn(panel, 255), timeout=10000)
        assert_bias_plots(panel, layer, 255)
        panel.options.widget("window").setChecked(True)  # window at the last position
        qtbot.waitUntil(panel.settled, timeout=5000)
        x0, _x1 = panel.grids["softmax"].x_range
        assert x0 == pytest.approx(255 - panel.options.widget("window_size").value() + 0.5)
        frame = panel.plot_frames()[1]
        assert frame.export(tmp_path / "tpp.csv") == 4 * 3 * 256

        win.show_view("position-stats")
        stats = win.panel("position-stats")
        qtbot.waitUntil(lambda: stats.result is not None, timeout=10000)
        assert stats.result.variance.shape == (256,)
        assert stats.result.last.positions == [251, 252, 253, 254, 255]
        var, q, k = _direct_b5(folder)
        np.testing.assert_allclose(stats.var_curve.getOriginalDataset()[1], var, rtol=1e-5)
        h = win.state.head
        np.testing.assert_allclose(curve_y(stats.grid, "q4", h), (k[:, h] @ q[255, h]).numpy(),
                                   rtol=1e-4, atol=1e-5)
    finally:
        close_jobs(win)


def test_head_lists_and_stable_ranges():
    from detokgui.core.base.plot_axes import stable_range
    from detokgui.gui.head_controls import parse_heads

    assert parse_heads("3, 0-1 7 99", 8) == [0, 1, 3, 7]
    r = stable_range(None, -3.2, 4.1)
    assert r[0] <= -3.2 and r[1] >= 4.1
    assert stable_range(r, -3.0, 4.0) == r  # small changes keep the axes still
    assert stable_range(r, -30.0, 4.0) != r
    assert stable_range(None, 0.0, 0.3, zero_based=True)[0] == 0.0


def test_pyside_keeps_singleton_refcounts(qapp):
    """PySide6 6.12.0 drops a reference to None per void call and to True per signal emit
    on Python <= 3.11 (pyqtgraph makes thousands per redraw; the app then aborts with
    none_dealloc). pyproject excludes 6.12.*; this guards against a bad PySide6."""
    import sys

    from PySide6.QtCore import QObject, Signal
    from PySide6.QtWidgets import QWidget

    class Emitter(QObject):
        ping = Signal(bool)

    w, e = QWidget(), Emitter()
    e.ping.connect(lambda _v: None)
    before = [sys.getrefcount(o) for o in (None, True, False)]
    for _ in range(2000):
        w.update()
        e.ping.emit(True)
        e.ping.emit(False)
    after = [sys.getrefcount(o) for o in (None, True, False)]
    assert all(abs(a - b) < 100 for a, b in zip(after, before)), (before, after)
