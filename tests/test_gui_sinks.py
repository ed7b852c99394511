"""The attention-sink view through the real window with the tiny random checkpoint: what it
draws and lists equals `core.text_side.sinks` (tested against the model's own forward pass
in test_sinks), the table selects heads, the corpus source asks for a corpus, and its CSV
is the view's table."""

import numpy as np
from conftest import SAMPLE_CORPUS, wait_idle
from tables import click_cell, column_texts
from test_export_render import check_vector_exports
from test_gui_text import cell_point, read_csv, show

from detokgui.core.base.numbers import num
from detokgui.core.model.titles import model_text
from detokgui.core.text_side import sinks
from detokgui.core.text_side.empirical import TextSource

CORPUS = [str(SAMPLE_CORPUS)]


def test_sink_view_draws_the_core_profile(window, qtbot, tmp_path):
    win, layer, state = window, window.state.layer, window.state
    panel = show(win, qtbot, "sinks")
    panel.options.set(n_texts=3, length=24)
    wait_idle(qtbot, win)
    exp = sinks.sinks(layer, sinks.SampleTexts(3, 24))
    res = panel.result
    np.testing.assert_allclose(res.advantage, exp.advantage, equal_nan=True, atol=1e-6)
    np.testing.assert_allclose(res.attention, exp.attention, atol=1e-7)
    x, y = panel.grid.data("pe", 2)
    np.testing.assert_array_equal(x, np.arange(1, 24))
    np.testing.assert_allclose(y, exp.advantage[2, 2, 1:], atol=1e-6)
    _, total = panel.grid.data("advantage", 1)
    np.testing.assert_allclose(total, exp.total[1, 1:], atol=1e-5)
    assert panel.grid.curves["ee"].isVisible() and not panel.grid.curves["attention"].isVisible()
    assert "logit advantage of key position 0" in panel.grid.title_text()

    view = panel.summary_view
    heads = [int(t) for t in column_texts(view, 0)]
    assert sorted(heads) == list(range(layer.n_heads))
    terms = column_texts(view, view.model().columnCount() - 1)
    assert terms == [exp.sink_term(h) for h in heads]
    row = heads.index(3)
    click_cell(qtbot, view, row, 1)
    assert state.head == 3

    panel.options.set(show="attention")
    wait_idle(qtbot, win)
    assert panel.result is res  # drawn again, not computed
    assert panel.grid.curves["attention"].isVisible() and not panel.grid.curves["ee"].isVisible()
    _, att = panel.grid.data("attention", 0)
    np.testing.assert_allclose(att, exp.attention[0, 1:], atol=1e-7)
    _, uni = panel.grid.data("uniform", 0)
    np.testing.assert_allclose(uni, 1 / np.arange(2, 25))

    qtbot.mouseMove(panel.frame.view.viewport(), cell_point(panel.grid, 1, 7))
    qtbot.waitUntil(lambda: "i = 7" in panel.status.text(), timeout=3000)
    assert f"α(i→0) {num(float(exp.attention[1, 7]))}" in panel.status.text()

    # the SVG and PDF draw what the view shows: here the attention and 1/(i+1)
    marks = check_vector_exports(panel.frame, tmp_path, model_text(layer), panel.title)
    assert marks["lines"] == 2 * layer.n_heads

    panel.frame.export(tmp_path / "sinks.csv")
    rows = read_csv(tmp_path / "sinks.csv")
    assert len(rows) == layer.n_heads * 23
    assert {r["bos"] for r in rows} == {"False"}


def test_sink_view_reads_the_corpus(window, qtbot):
    win, layer, state = window, window.state.layer, window.state
    panel = show(win, qtbot, "sinks")
    panel.options.set(source="corpus", n_texts=2, prepend=True)
    wait_idle(qtbot, win)
    assert panel.result is None and "Choose a corpus" in panel.grid.title_text()
    assert not panel.options.widget("length").isEnabled()
    state.set_corpus(CORPUS)
    wait_idle(qtbot, win)
    exp = sinks.sinks(layer, TextSource.corpus(CORPUS, prepend_bos=True, max_texts=2))
    res = panel.result
    assert res.bos and res.source == exp.source and res.n == exp.n
    np.testing.assert_allclose(res.head_advantage, exp.head_advantage, atol=1e-6)
    assert "prepended BOS token" in panel.grid.title_text()
