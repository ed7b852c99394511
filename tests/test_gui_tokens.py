"""The token side of the application, driven through its real widgets (offscreen)."""

import csv
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import torch
from conftest import wait_idle
from exported import non_background_pixels
from PySide6.QtCore import Qt
from tables import cell_text, click_cell, row_count

from detokgui.core.model.sample import random_token_sample
from detokgui.core.model.tokens import display_token
from detokgui.core.token_side import affinity
from detokgui.gui.plots import head_color

KOREA, NORTH = 4969, 2258


def panel(win, name):
    return win.panel(name)


def test_model_loads_through_the_window(window):
    layer = window.state.layer
    facts = window.model_facts.text()
    assert "CPU" in facts and "V=50,257" in facts and "loaded in" in facts
    assert "4 heads" in facts and "d=64" in facts and "τ = √d′ = 4" in facts
    assert "GPT-2 architecture" in window.model_label.text()
    assert layer.summary in window.model_label.toolTip()  # "GPT-2 architecture, d=64, 4 heads"
    assert window.head_spin.maximum() == layer.n_heads - 1
    assert not window.banner.isVisible()
    assert window.state.query_token == KOREA  # the default query: ' Korea'


def test_search_select_topk_click_heatmap(window, qtbot):
    win, layer = window, window.state.layer
    tokens = panel(win, "tokens")
    qtbot.waitUntil(lambda: len(tokens.strings) == layer.n_vocab, timeout=10000)
    tokens.search.setText(" North")
    qtbot.waitUntil(lambda: row_count(tokens.results) > 0, timeout=5000)
    ids = tokens.results.token_ids()
    assert NORTH in ids and all("North" in tokens.strings[i] for i in ids)
    click_cell(qtbot, tokens.results, ids.index(NORTH), 2)
    assert win.state.query_token == NORTH

    topk = panel(win, "topk")
    win.show_view("topk")
    wait_idle(qtbot, win)
    expected = affinity.topk_keys(layer, NORTH, topk.options.widget("k").value())
    grid_tokens = [[cell_text(topk.grid, r, 1 + c) for c in range(layer.n_heads)]
                   for r in range(topk.options.widget("k").value())]
    for c in range(layer.n_heads):
        assert [row[c] for row in grid_tokens] == [
            display_token(layer.tokenizer, t) for t in expected.ids[c].tolist()]
    # one head in detail, head 2
    win.state.set_head(2)
    assert row_count(topk.detail) == topk.options.widget("k").value()
    detail_ids = [int(cell_text(topk.detail, r, 2)) for r in range(row_count(topk.detail))]
    assert detail_ids == expected.ids[2].tolist()
    scores = [float(cell_text(topk.detail, r, 3)) for r in range(row_count(topk.detail))]
    np.testing.assert_allclose(scores, expected.scores[2].numpy(), atol=1e-4)
    assert cell_text(topk.detail, 0, 4) == repr(
        layer.tokenizer.decode([detail_ids[0], NORTH]))

    # click the third key: it becomes the key token; the heatmap of the query's top-k marks it
    click_cell(qtbot, topk.detail, 2, 1)
    assert win.state.key_token == detail_ids[2]
    hm = panel(win, "heatmap")
    win.show_view("heatmap")
    source = hm.options.widget("source")
    source.setCurrentIndex(source.findData("topk"))
    wait_idle(qtbot, win)
    assert hm.tokens[0] == NORTH and detail_ids[2] in hm.tokens
    block = affinity.affinity_block(layer, hm.tokens, hm.tokens, heads=[2])[0].numpy()
    assert hm.shown is hm.single
    np.testing.assert_allclose(hm.single.values, block, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hm.single.image.image, block, rtol=1e-5, atol=1e-6)
    mark = hm.single.highlight
    assert mark.isVisible()
    assert mark.rect().x() == hm.tokens.index(detail_ids[2]) and mark.rect().y() == 0


def test_heatmap_click_selects_tokens_and_hover_describes(window, qtbot):
    win, layer = window, window.state.layer
    hm = panel(win, "heatmap")
    win.show_view("heatmap")
    panel(win, "tokens").set_text(" North Korea and South Korea")
    wait_idle(qtbot, win)
    ids = layer.tokenizer.encode(" North Korea and South Korea")
    assert hm.tokens == ids
    item = hm.single
    view = item.getViewBox()
    scene_pos = view.mapViewToScene(pg_point(2.5, 1.5))  # row 1 (query), col 2 (key)
    assert item.cell_at(scene_pos) == (1, 2)
    win_pos = hm.frame.view.mapFromScene(scene_pos)
    qtbot.mouseMove(hm.frame.view.viewport(), win_pos)
    qtbot.waitUntil(lambda: "query" in hm.status.text(), timeout=3000)
    assert repr(display_token(layer.tokenizer, ids[1])) in hm.status.text()
    qtbot.mouseClick(hm.frame.view.viewport(), Qt.LeftButton, pos=win_pos)
    assert win.state.query_token == ids[1] and win.state.key_token == ids[2]


def pg_point(x, y):
    from PySide6.QtCore import QPointF

    return QPointF(x, y)


def test_all_heads_grid_and_layernorm_toggle(window, qtbot):
    win, layer = window, window.state.layer
    hm = panel(win, "heatmap")
    win.show_view("heatmap")
    source = hm.options.widget("source")
    source.setCurrentIndex(source.findData("sample"))
    hm.options.widget("size").setValue(12)
    hm.options.widget("all_heads").setChecked(True)
    wait_idle(qtbot, win)
    assert hm.shown is hm.mosaic and hm.mosaic.values.shape == (layer.n_heads, 12, 12)
    sample = random_token_sample(layer, 12, hm.options.widget("seed").value())
    assert hm.tokens == sample
    hm.options.widget("layernorm").setChecked(False)
    wait_idle(qtbot, win)
    raw = affinity.affinity_block(layer, sample, sample, affinity.SigmaChoice("none"))
    assert_mosaic_shows(hm.mosaic, raw.numpy())
    assert [t.toPlainText() for t in hm.mosaic.titles] == [f"head {h}"
                                                          for h in range(layer.n_heads)]


def assert_mosaic_shows(mosaic, values):
    """Every map of `values` [k, n, m] at its place in the mosaic's one image, on one
    colour scale symmetric about 0, and the colour bar on it."""
    image = mosaic.image.image
    for k in range(values.shape[0]):
        x, y = mosaic.origin(k)
        np.testing.assert_allclose(image[y:y + values.shape[1], x:x + values.shape[2]],
                                   values[k], rtol=1e-5, atol=1e-6)
    top = float(np.abs(values).max())
    assert mosaic.image.levels == pytest.approx((-top, top), rel=1e-5)
    assert mosaic.colorbar.levels() == pytest.approx((-top, top), rel=1e-5)


def test_all_heads_are_one_image_drawn_with_the_result(window, qtbot):
    """Turning on all heads draws every head's map into the mosaic when the result
    comes, in that one draw; the selected head's map is framed in its colour."""
    win, n = window, window.state.layer.n_heads
    hm = panel(win, "heatmap")
    win.show_view("heatmap")
    wait_idle(qtbot, win)
    assert hm.shown is hm.single
    at_draw = []
    hm.drawn.connect(lambda _name: at_draw.append(hm.mosaic.values.shape[0]))
    hm.options.widget("all_heads").setChecked(True)
    wait_idle(qtbot, win)
    assert at_draw and set(at_draw) == {n} and hm.settled() and hm.shown is hm.mosaic
    values = affinity.affinity_block(win.state.layer, hm.tokens, hm.tokens,
                                     win.state.sigma)
    assert_mosaic_shows(hm.mosaic, values.numpy())
    win.state.set_head(3)
    rect = hm.mosaic.selected.rect()
    assert hm.mosaic.selected.isVisible() and (rect.x(), rect.y()) == hm.mosaic.origin(3)
    assert hm.mosaic.selected.pen().color().name() == head_color(3)
    x, y = hm.mosaic.origin(2)  # map of head 2, query row 1, key column 3
    pos = hm.frame.view.mapFromScene(hm.mosaic.vb.mapViewToScene(pg_point(x + 3.5, y + 1.5)))
    qtbot.mouseMove(hm.frame.view.viewport(), pos)
    qtbot.waitUntil(lambda: hm.status.text().startswith("head 2 "), timeout=3000)
    assert f"value {values[2, 1, 3]:.4g}" in hm.status.text()
    qtbot.mouseClick(hm.frame.view.viewport(), Qt.LeftButton, pos=pos)
    state = win.state
    assert (state.head, state.query_token, state.key_token) == (2, hm.tokens[1], hm.tokens[3])


def test_export_each_format(window, qtbot, tmp_path):
    win, layer = window, window.state.layer
    for name in ("topk", "heatmap"):
        win.show_view(name)
        wait_idle(qtbot, win)
        frame = panel(win, name).plot_frames()[0]
        for fmt in ("png", "svg", "csv"):
            frame.export(tmp_path / f"{name}.{fmt}")
        assert non_background_pixels(tmp_path / f"{name}.png") > 2000
        root = ET.parse(tmp_path / f"{name}.svg").getroot()
        shapes = [e for e in root.iter() if e.tag.split("}")[-1] in ("path", "rect", "image",
                                                                      "polyline", "text")]
        assert len(shapes) > 10
    with open(tmp_path / "topk.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    res = affinity.topk_keys(layer, win.state.query_token,
                             panel(win, "topk").options.widget("k").value())
    assert len(rows) == res.ids.numel()
    for row in rows:
        h, rank = int(row["head"]), int(row["rank"])
        assert int(row["key_id"]) == res.ids[h, rank - 1].item()
        assert abs(float(row["score"]) - res.scores[h, rank - 1].item()) < 1e-5
    with open(tmp_path / "heatmap.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    hm = panel(win, "heatmap")
    n = len(hm.tokens)
    assert len(rows) == n * n
    block = affinity.affinity_block(layer, hm.tokens, hm.tokens, heads=hm.heads)
    for row in rows[::7]:
        v = block[0, int(row["query_index"]), int(row["key_index"])].item()
        assert abs(float(row["value"]) - v) < 1e-5


def test_sigma_convention_is_shared_and_used(window, qtbot):
    win, layer = window, window.state.layer
    topk = panel(win, "topk")
    win.show_view("topk")
    choice = affinity.SigmaChoice("at", (3, 1))
    win.state.set_sigma(choice)
    wait_idle(qtbot, win)
    expected = affinity.topk_keys(layer, win.state.query_token,
                                  topk.options.widget("k").value(), choice)
    assert torch.equal(topk.result.ids, expected.ids)
    assert "i=3, j=1" in topk.status.text()
    direction = topk.options.widget("direction")
    direction.setCurrentIndex(direction.findData("queries"))
    win.state.set_key_token(NORTH)
    wait_idle(qtbot, win)
    rev = affinity.topk_queries(layer, NORTH, topk.options.widget("k").value(), choice)
    assert topk.result.direction == "queries" and torch.equal(topk.result.ids, rev.ids)


def test_failed_load_keeps_window_usable(qtbot, tmp_path, tiny_ckpt):
    from detokgui.gui.main_window import MainWindow

    win = MainWindow(model=str(tmp_path / "missing"), device="cpu")
    qtbot.addWidget(win)
    win.show()
    qtbot.waitUntil(lambda: win.load_error is not None, timeout=20000)
    assert win.banner.isVisible() and "There is no folder" in win.banner.text()
    assert win.state.layer is None
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text('{"model_type": "llama", "rope_theta": 1e4}')
    win.load_model(str(tmp_path / "bad"))
    qtbot.waitUntil(lambda: win.load_error is not None and "rotary" in win.load_error, timeout=20000)
    win.load_model(str(tiny_ckpt))  # the menu's "try another" path
    qtbot.waitUntil(lambda: win.state.layer is not None, timeout=60000)
    assert not win.banner.isVisible()
    assert str(tiny_ckpt) in win.recent_models()
    wait_idle(qtbot, win)


def test_right_click_offers_export(window, qtbot):
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QContextMenuEvent
    from PySide6.QtWidgets import QApplication

    win = window
    win.show_view("heatmap")
    wait_idle(qtbot, win)
    frame = panel(win, "heatmap").plot_frames()[0]
    center = frame.view.viewport().rect().center()
    QApplication.sendEvent(frame.view.viewport(),
                           QContextMenuEvent(QContextMenuEvent.Mouse, QPoint(center)))
    qtbot.waitUntil(lambda: QApplication.activePopupWidget() is not None, timeout=3000)
    menu = QApplication.activePopupWidget()
    assert [a.text() for a in menu.actions()] == ["Export PNG…", "Export SVG…", "Export PDF…",
                                                  "Export CSV…"]
    menu.close()


def test_file_export_asks_which_plot(window, qtbot, tmp_path, monkeypatch):
    """File > Export on a view with several plots exports the one the user picks."""
    from PySide6.QtWidgets import QFileDialog, QInputDialog

    win = window
    win.show_view("bias")
    wait_idle(qtbot, win)
    frames = win.panel("bias").plot_frames()
    assert len(frames) > 1
    qtbot.waitUntil(lambda: all(f.table_fn() is not None for f in frames), timeout=30000)
    asked = []

    def pick(parent, title, label, items, current, editable):
        asked.append(list(items))
        return items[1], True

    out = tmp_path / "second.csv"
    monkeypatch.setattr(QInputDialog, "getItem", staticmethod(pick))
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a, **k: (str(out), "CSV (*.csv)")))
    win.export_current("csv")
    assert asked == [[f.name for f in frames]]
    header, rows = frames[1].table_fn()
    with open(out, newline="") as f:
        written = list(csv.reader(f))
    assert written[0] == list(header) and len(written) - 1 == len(list(rows))


def test_control_characters_are_shown_escaped():
    """GPT-2's byte tokens for control characters show as \\xNN (\\n, \\t, \\r for those):
    visible on screen and valid in an exported SVG, where XML forbids them raw."""
    from detokgui.core.model.tokens import gpt2_tokenizer

    tok = gpt2_tokenizer()
    for byte in (*range(32), 127):
        (tid,) = tok.encode(chr(byte))
        shown = display_token(tok, tid)
        assert shown == {10: "\\n", 9: "\\t", 13: "\\r"}.get(byte, f"\\x{byte:02x}"), byte
        assert all(ord(c) >= 32 for c in shown)
