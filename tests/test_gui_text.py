"""The Texts panels (C1-C3, C5, OV circuit) through the real window with the tiny random
checkpoint: what each shows equals the core functions (tested against HF in
test_empirical / test_circuits), clicks select tokens and positions, and without a corpus
they say how to choose one. Corpus work is kept to two or three texts."""

import csv
from pathlib import Path

import numpy as np
import pytest
from axes import axis_labels
from conftest import SAMPLE_CORPUS, wait_idle
from PySide6.QtCore import QPointF, Qt
from tables import cell_text, click_cell, column_texts

from detokgui.core.base.numbers import num
from detokgui.core.model.conventions import default_query_position
from detokgui.core.model.sources.demo import sample_corpus
from detokgui.core.model.tokens import display_token
from detokgui.core.text_side import circuits, empirical
from detokgui.core.text_side.empirical import SENTENCE_TERMS, TextSource
from detokgui.gui.corpus_hint import CorpusHint

CORPUS = [str(SAMPLE_CORPUS)]


def show(win, qtbot, view):
    win.show_view(view)
    wait_idle(qtbot, win)
    return win.panel(view)


def click_view(qtbot, frame, vb, x, y):
    """A real click at the data point (x, y) of the view box `vb` in `frame`."""
    pos = frame.view.mapFromScene(vb.mapViewToScene(QPointF(x, y)))
    qtbot.mouseClick(frame.view.viewport(), Qt.LeftButton, pos=pos)


def hover_view(qtbot, frame, vb, x, y):
    pos = frame.view.mapFromScene(vb.mapViewToScene(QPointF(x, y)))
    qtbot.mouseMove(frame.view.viewport(), pos)


def cell_point(grid, h, x):
    """The view position in head h's cell of small multiples `grid` at data x, half way
    up: for a real click or hover there."""
    y0, y1 = grid.y_range
    return grid.frame.view.mapFromScene(grid.scene_pos(h, x, (y0 + y1) / 2))


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_sentence_view(window, qtbot, tmp_path):
    win, layer, state = window, window.state.layer, window.state
    state.set_head(2)
    panel = show(win, qtbot, "sentence")
    ids = state.token_set
    assert len(ids) > 4 and panel.result.tokens == ids and panel.result.heads == [2]
    data = empirical.sentence(layer, ids, [2])
    lower = np.tri(len(ids), dtype=bool)
    assert [m for _, m in panel.placed] == list(SENTENCE_TERMS)
    assert panel.shown == "nine"
    for hm, (_, m) in zip(panel.nine, panel.placed):  # what is drawn, matrix by matrix
        np.testing.assert_allclose(hm.image.image[lower], data.values(m)[0][lower], rtol=1e-5,
                                   atol=1e-6)
        assert np.isnan(hm.image.image[~lower]).all()
    assert f"= {num(data.max_difference)}" in panel.exact.text()

    vb = panel.nine[0].getViewBox()
    hover_view(qtbot, panel.frame, vb, 1.5, 3.5)  # query i = 3, key j = 1
    qtbot.waitUntil(lambda: "i = 3" in panel.status.text(), timeout=3000)
    text = panel.status.text()
    assert repr(display_token(layer.tokenizer, ids[3])) in text
    assert repr(display_token(layer.tokenizer, ids[1])) in text
    for m in SENTENCE_TERMS:
        assert f"{m} {num(float(data.values(m)[0, 3, 1]))}" in text
    click_view(qtbot, panel.frame, vb, 1.5, 3.5)
    assert (state.query_token, state.key_token, state.query_position) == (ids[3], ids[1], 3)
    assert panel.nine[4].highlight.isVisible()

    panel.frame.export(tmp_path / "s.csv")
    rows = read_csv(tmp_path / "s.csv")
    n = len(ids)
    assert len(rows) == len(SENTENCE_TERMS) * n * (n + 1) // 2
    hit = next(r for r in rows if (r["term"], r["i"], r["j"]) == ("actual", "3", "1"))
    assert float(hit["value"]) == pytest.approx(float(data.actual[0, 3, 1]), rel=1e-6)

    # every head, one matrix: the model's own attention
    matrix = panel.options.widget("matrix")
    matrix.setCurrentIndex(matrix.findData("actual"))
    panel.options.widget("all_heads").setChecked(True)
    wait_idle(qtbot, win)
    assert panel.result.heads == list(range(layer.n_heads)) and panel.shown == "grid"
    # the colour bar says what its colours mean, "<" shown as text, not read as a tag
    assert mosaic_label(panel) == "red < 0 < blue"
    full = empirical.sentence(layer, ids)
    mosaic = panel.mosaic
    n = len(ids)
    for k in range(layer.n_heads):  # each head's map at its place in the one image
        x, y = mosaic.origin(k)
        shown = mosaic.image.image[y:y + n, x:x + n]
        np.testing.assert_allclose(shown[lower], full.actual[k][lower], atol=1e-6)
        assert np.isnan(shown[~lower]).all()
    x, y = mosaic.origin(3)
    click_view(qtbot, panel.frame, mosaic.vb, x + 0.5, y + 2.5)
    assert (state.head, state.query_position, state.key_token) == (3, 2, ids[0])
    assert mosaic.marks.path().toSubpathPolygons()  # the clicked cell, in every map


def mosaic_label(panel) -> str:
    """The text the mosaic's colour bar shows beside it."""
    return panel.mosaic.colorbar.getAxis("right").label.toPlainText().strip()


def test_sentence_view_reads_a_corpus_text(window, qtbot):
    win, layer, state = window, window.state.layer, window.state
    panel = show(win, qtbot, "sentence")
    assert panel.hint.isHidden()  # the typed text needs no corpus
    source = panel.options.widget("source")
    source.setCurrentIndex(source.findData("corpus"))
    wait_idle(qtbot, win)
    assert not panel.hint.isHidden() and "Corpus" in panel.hint.label.text()
    assert panel.result is None
    qtbot.mouseClick(panel.hint.button, Qt.LeftButton)  # "Use sample corpus"
    qtbot.waitUntil(lambda: bool(state.corpus), timeout=10000)
    assert [Path(p) for p in state.corpus] == [sample_corpus()]
    assert panel.hint.isHidden() and "sample corpus" in win.corpus.label.text()
    panel.options.widget("index").setValue(2)
    wait_idle(qtbot, win)
    expected = empirical.text_window(layer, TextSource.corpus(state.corpus), 2)
    assert panel.result.tokens == expected
    data = empirical.sentence(layer, expected, [state.head])
    np.testing.assert_allclose(np.nan_to_num(panel.nine[-1].values),
                               data.actual[0], atol=1e-6)


def test_empirical_vs_predicted(window, qtbot, tmp_path):
    win, layer, state = window, window.state.layer, window.state
    panel = show(win, qtbot, "empirical")
    assert panel.result is None and "Choose a corpus" in panel.grid.title_text()
    hint = panel.findChild(CorpusHint)
    assert not hint.isHidden() and "Use sample corpus" == hint.button.text()
    panel.options.widget("max_texts").setValue(3)
    state.set_query_position(20)
    state.set_corpus(CORPUS)
    wait_idle(qtbot, win)
    assert hint.isHidden()
    res, heads = panel.result, list(range(layer.n_heads))
    exp = empirical.empirical_attention(layer, TextSource.corpus(CORPUS, max_texts=3), 20,
                                        heads, "paper")
    assert (res.i, res.heads, res.windows) == (20, heads, exp.windows)
    for name in ("empirical", "predicted", "pattern"):
        np.testing.assert_allclose(getattr(res, name), getattr(exp, name), atol=1e-9)
        x, y = panel.grid.data(name, 1)
        np.testing.assert_array_equal(x, np.arange(21))
        np.testing.assert_allclose(y, getattr(exp, name)[1])
        xd, yd = panel.grid.drawn(name, 1)  # what its curve item draws in head 1's cell
        np.testing.assert_allclose(xd, x, atol=1e-9)
        (y0, y1) = panel.grid.y_range
        np.testing.assert_allclose(yd, np.clip(y, y0, y1), atol=1e-9 * (y1 - y0))
    title = panel.grid.title_text()
    assert f"{exp.windows} windows" in title and "paper convention" in title

    convention = panel.options.widget("convention")
    convention.setCurrentIndex(convention.findData("mean-sigma"))
    wait_idle(qtbot, win)
    np.testing.assert_allclose(panel.result.predicted,
                               empirical.b3_prediction(layer, 20, heads, "mean-sigma"))
    assert "mean-sigma convention" in panel.grid.title_text()

    panel.frame.export(tmp_path / "e.csv")
    rows = read_csv(tmp_path / "e.csv")
    assert list(rows[0]) == ["head", "j", "empirical", "predicted", "pattern", "windows",
                             "convention", "temperature"]
    assert len(rows) == len(heads) * 21 and {r["convention"] for r in rows} == {"mean-sigma"}

    panel.default_button.click()
    # the paper's 500 scaled to this model's 128 positions, as everywhere
    assert state.query_position == default_query_position(layer.n_positions) == 62
    qtbot.mouseClick(panel.frame.view.viewport(), Qt.LeftButton,
                     pos=cell_point(panel.grid, 0, 10))
    assert state.query_position == 10
    wait_idle(qtbot, win)
    assert panel.result.i == 10


def test_six_term_contribution(window, qtbot, tmp_path):
    win, layer, state = window, window.state.layer, window.state
    panel = show(win, qtbot, "kl")
    assert panel.result is None and "Choose a corpus" in panel.grid.title_text()
    panel.options.widget("max_texts").setValue(2)
    definition = panel.options.widget("definition")
    definition.setCurrentIndex(definition.findData("code"))
    state.set_corpus(CORPUS)
    wait_idle(qtbot, win)
    exp = empirical.kl(layer, TextSource.corpus(CORPUS, max_texts=2), "code")
    res = panel.result
    np.testing.assert_allclose(res.contribution, exp.contribution, equal_nan=True)
    n = int(np.count_nonzero(exp.texts))
    x, y = panel.grid.data("pp", 2)
    np.testing.assert_array_equal(x, np.arange(n))
    np.testing.assert_allclose(y, exp.line(2, "pp")[:n])
    xd, yd = panel.grid.drawn("pp", 2)
    (y0, y1) = panel.grid.y_range
    np.testing.assert_allclose(xd, x, atol=1e-9)
    np.testing.assert_allclose(yd, np.clip(y, y0, y1), atol=1e-9 * (y1 - y0))
    assert "authors' code" in panel.grid.title_text()
    panel.frame.export(tmp_path / "kl.csv")
    rows = read_csv(tmp_path / "kl.csv")
    assert {r["definition"] for r in rows} == {"code"}
    assert len(rows) == layer.n_heads * 6 * n

    panel.heads_box.set_mode("selected")
    state.set_head(1)
    wait_idle(qtbot, win)
    assert panel.grid.heads == [1] and panel.result is res  # drawn again, not computed
    qtbot.mouseMove(panel.frame.view.viewport(), cell_point(panel.grid, 1, 7))
    qtbot.waitUntil(lambda: "i = 7" in panel.status.text(), timeout=3000)
    assert f"ee {num(float(exp.line(1, 'ee')[7]))}" in panel.status.text()


def test_contextual_neurons(window, qtbot):
    win, layer, state = window, window.state.layer, window.state
    panel = show(win, qtbot, "contextual")
    b4 = circuits.contextual_heads(layer)
    assert b4 and panel.result.heads == b4
    assert [b.isChecked() for b in panel.heads_box.boxes] == [
        h in b4 for h in range(layer.n_heads)]
    first = panel.neuron
    assert first == int(panel.result.ranking.order[0])  # the top neuron is shown first

    panel.heads_box.auto.setChecked(False)  # choose the heads: B4's and head 0
    panel.heads_box.boxes[0].click()
    wait_idle(qtbot, win)
    heads = sorted({0, *b4})
    assert panel.result.heads == heads
    circuit = circuits.contextual_circuit(layer, heads)
    rank = circuits.rank_neurons(layer, circuit, 10, panel.options.widget("k").value())
    assert [int(t) for t in column_texts(panel.table, 1)[:10]] == rank.order[:10].tolist()
    assert cell_text(panel.table, 0, 2) == num(float(rank.size[rank.order[0]]))
    assert panel.neuron == first  # kept while the heads change

    click_cell(qtbot, panel.table, 2, 1)
    m = int(rank.order[2])
    assert panel.neuron == m
    wait_idle(qtbot, win)
    nt = circuits.neuron_tokens(layer, circuit, m, panel.options.widget("k").value())
    assert [panel.tokens.token_at(r, 1) for r in range(3)] == nt.top_ids[:3].tolist()
    assert cell_text(panel.tokens, 0, 4) == num(float(nt.bottom_values[0]))
    click_cell(qtbot, panel.tokens, 1, 3)  # a token that lowers it
    assert state.query_token == int(nt.bottom_ids[1])

    val = panel.channel("validation")
    assert val.result is None and not panel.findChild(CorpusHint).isHidden()
    panel.options.widget("max_texts").setValue(2)
    state.set_corpus(CORPUS)
    wait_idle(qtbot, win)
    exp = circuits.neuron_validation(layer, circuit, [m], TextSource.corpus(CORPUS, max_texts=2),
                                     20000)
    assert val.result.points == exp.points and val.result.neurons == [m]
    np.testing.assert_allclose(val.result.correlation, exp.correlation, rtol=1e-6)
    x, y = panel.points.getData()
    np.testing.assert_allclose(x, exp.predicted[0], rtol=1e-5)
    np.testing.assert_allclose(y, exp.actual[0], rtol=1e-5)
    assert f"r = {num(float(exp.correlation[0]))}" in panel.validation_status.text()


def test_ov_circuit(window, qtbot, tmp_path):
    win, layer, state = window, window.state.layer, window.state
    panel = show(win, qtbot, "ov")
    heads = list(range(layer.n_heads))
    q = state.query_token
    exp = circuits.ov_topk(layer, q, "outputs", heads, panel.options.widget("k").value())
    k = exp.top_ids.shape[1]
    assert len(column_texts(panel.table, 0)) == len(heads) * k
    assert panel.table.token_at(k + 1, 2) == int(exp.top_ids[1, 1])  # head 1, rank 2
    assert cell_text(panel.table, k + 1, 5) == num(float(exp.bottom_scores[1, 1]))
    assert "ln_f" in panel.status.text() and exp.final_norm in panel.status.text()
    ticks = sorted(axis_labels(panel.plot.getAxis("left")))
    assert [t for _, t in ticks][:k] == [display_token(layer.tokenizer, int(t))
                                         for t in exp.top_ids[state.head]]
    panel.frame.export(tmp_path / "ov.csv")
    assert len(read_csv(tmp_path / "ov.csv")) == len(heads) * 2 * k

    click_cell(qtbot, panel.table, 0, 2)  # head 0's most promoted output
    assert state.query_token == int(exp.top_ids[0, 0])

    direction = panel.options.widget("direction")
    direction.setCurrentIndex(direction.findData("sources"))
    wait_idle(qtbot, win)
    if state.key_token < 0:
        assert panel.result is None and "key token" in panel.status.text()
        state.set_key_token(q)
        wait_idle(qtbot, win)
    rev = circuits.ov_topk(layer, state.key_token, "sources", heads,
                           panel.options.widget("k").value())
    np.testing.assert_array_equal(panel.result.top_ids, rev.top_ids)
    np.testing.assert_allclose(panel.result.bottom_scores, rev.bottom_scores)
