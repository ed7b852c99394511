"""The Layer 1 page through the real window: a random two-layer GPT-2 checkpoint shows the
composition scores and the measured behaviour of `core.composition` (tested against the
explicit definition, TransformerLens and the whole model in test_composition), a click on a
cell selects its layer-0 head everywhere, its CSVs are those tables; a single-layer model
says so instead."""

import numpy as np
import pytest
from conftest import close_jobs, open_window, wait_idle
from PySide6.QtCore import QPointF, Qt
from tables import click_cell, column_texts
from test_export_render import check_vector_exports
from test_gui_text import read_csv, show

from detokgui.core import Layer0
from detokgui.core.base.progress import run
from detokgui.core.composition.behaviour import behaviour_job
from detokgui.core.composition.scores import KINDS, composition_job
from detokgui.core.model.sources.demo import write_random_checkpoint
from detokgui.core.model.titles import model_text


@pytest.fixture(scope="module")
def two_layers(tmp_path_factory):
    return write_random_checkpoint(tmp_path_factory.mktemp("two"), n_layer=2, n_head=4,
                                   n_embd=64, n_positions=64, seed=4)


def click_mosaic(qtbot, frame, mosaic, k, row, col):
    """A real click in the middle of cell (row, col) of map k."""
    x, y = mosaic.origin(k)
    scene = mosaic.vb.mapViewToScene(QPointF(x + col + 0.5, y + row + 0.5))
    qtbot.mouseClick(frame.view.viewport(), Qt.LeftButton, pos=frame.view.mapFromScene(scene))


def test_layer1_page_shows_composition_and_behaviour(qtbot, two_layers, tmp_path):
    win = open_window(qtbot, two_layers)
    try:
        panel = win.panel("layer1")
        panel.options.set(sequences=4)  # while hidden: computed once, when shown
        win.show_view("layer1")
        wait_idle(qtbot, win, timeout=180000)  # block 1, the baseline, two-block passes
        layer = Layer0.from_pretrained(str(two_layers), device="cpu")
        comp = run(composition_job(layer))
        beh = run(behaviour_job(layer, 4, None, 0, True))
        np.testing.assert_allclose(panel.mosaic.values, comp.scores, rtol=1e-6)
        assert [t.toPlainText() for t in panel.mosaic.titles[:3]] == [
            f"{k}-composition" for k in KINDS]
        assert f"{comp.baseline_hi:.4g}"[:4] in panel.frame.title_text()
        heights = panel.prev_bars.opts["height"], panel.ind_bars.opts["height"]
        np.testing.assert_allclose(heights[0], beh.previous_token[0], atol=1e-6)
        np.testing.assert_allclose(heights[1], beh.induction[1], atol=1e-6)
        assert column_texts(panel.circuit_view, 0) == [str(g) for g in range(4)]

        click_mosaic(qtbot, panel.frame, panel.mosaic, KINDS.index("K"), 2, 3)
        assert win.state.head == 2 and panel.layer1_head == 3
        assert "K-composition of layer-0 head 2 with layer-1 head 3" in panel.status.text()
        row = column_texts(panel.circuit_view, 0).index("1")
        click_cell(qtbot, panel.circuit_view, row, 1)
        assert win.state.head == comp.partner("K", 1) and panel.layer1_head == 1

        panel.frame.export(tmp_path / "comp.csv")
        rows = read_csv(tmp_path / "comp.csv")
        assert list(rows[0]) == ["layer0_head", "layer1_head", "kind", "score",
                                 "baseline_mean", "baseline_hi"]
        assert len(rows) == 3 * 4 * 4
        k = next(r for r in rows if (r["kind"], r["layer0_head"], r["layer1_head"])
                 == ("V", "1", "2"))
        assert abs(float(k["score"]) - comp.of("V")[1, 2]) < 1e-6
        panel.bars_frame.export(tmp_path / "beh.csv")
        assert len(read_csv(tmp_path / "beh.csv")) == 2 * 2 * 4
        model = model_text(win.state.layer)
        for frame in panel.plot_frames():  # the SVG and PDF: the figures of these tables
            check_vector_exports(frame, tmp_path, model, panel.title)
    finally:
        close_jobs(win)


def test_single_layer_model_says_so(window, qtbot):
    panel = show(window, qtbot, "layer1")
    assert "has a single layer" in panel.frame.title_text()
    assert panel.mosaic.values.shape[0] == 0 and panel.circuit.rowCount() == 0
