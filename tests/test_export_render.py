"""Every exported SVG draws like its PNG, in Qt's renderer and in librsvg (rsvg-convert)."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from conftest import SAMPLE_CORPUS, wait_idle
from svgcheck import RSVG, assert_renders_like, png_array, render_svg
from test_cli import run_cli
from test_panels import BUTTON_VIEWS, VOCAB_VIEWS


def _show(win, qtbot, panel):
    win.show_view(panel.view_name)
    qtbot.waitUntil(lambda: panel.isVisible(), timeout=10000)


def _check_exports(win, qtbot, tmp_path, panels):
    win.state.set_corpus([str(SAMPLE_CORPUS)])  # the text views plot corpus statistics
    checked = []
    for panel in panels:
        options = getattr(panel, "options", None)
        if options is not None and hasattr(options.value, "max_texts"):
            options.set(max_texts=2)
        _show(win, qtbot, panel)
        for frame in panel.plot_frames():
            qtbot.waitUntil(frame.has_data, timeout=60000)
            wait_idle(qtbot, win)
            stem = f"{panel.view_name}-{frame.name}".replace(" ", "_").replace("/", "-")
            png, svg = tmp_path / f"{stem}.png", tmp_path / f"{stem}.svg"
            frame.export(png)
            frame.export(svg)
            assert_renders_like(png, svg)
            checked.append(stem)
    assert len(checked) >= len([p for p in panels if p.plot_frames()])
    if not RSVG:
        pytest.skip("checked with Qt's renderer only: rsvg-convert (librsvg2-bin) is missing")


def test_every_plot_of_every_view_exports_svg_like_png(window, qtbot, tmp_path, tiny_ckpt):
    """The comparison views with the same checkpoint as model B; the training series'
    plot (drawn after its Compute button) is checked in test_series."""
    window.compare_with(str(tiny_ckpt))
    qtbot.waitUntil(lambda: window.state.matching is not None, timeout=120000)
    _check_exports(window, qtbot, tmp_path,
                   [p for p in window.panels
                    if p.view_name not in VOCAB_VIEWS | BUTTON_VIEWS])


def test_every_plot_of_the_vocabulary_views_exports_svg_like_png(vocab_window, qtbot,
                                                                   tmp_path):
    """On the 400-token model (a whole-vocabulary pass of the 50,257-token one takes a
    minute); the query token is the corpus's most frequent, so that it has a ROC curve."""
    from detokgui.core.corpus.counts import layer_corpus_counts

    win = vocab_window
    counts = layer_corpus_counts(win.state.layer, [str(SAMPLE_CORPUS)])
    win.state.set_query_token(int(counts.unigrams.argmax()))
    _check_exports(win, qtbot, tmp_path,
                   [p for p in win.panels if p.view_name in VOCAB_VIEWS])


def test_cli_heatmap_svg_like_png(tiny_ckpt, tmp_path):
    text = " North Korea and South Korea are neighbours"
    for fmt in ("png", "svg"):
        r = run_cli("heatmap", "--model", str(tiny_ckpt), "--tokens", text, "--head", "2",
                    "--out", str(tmp_path / f"hm.{fmt}"))
        assert r.returncode == 0, r.stderr
    assert_renders_like(tmp_path / "hm.png", tmp_path / "hm.svg")
    if not RSVG:
        pytest.skip("checked with Qt's renderer only: rsvg-convert (librsvg2-bin) is missing")


def test_curves_outside_the_axes_are_clipped(qtbot, tmp_path):
    """A zoomed plot: its curve runs far outside the view box, which must clip it in
    the SVG as on screen (SVG Tiny, Qt's default, has no clipping)."""
    import pyqtgraph as pg

    from detokgui.gui.plots import PlotFrame

    frame = PlotFrame("zoomed")
    qtbot.addWidget(frame)
    plot = frame.view.addPlot(title="zoomed in")
    x = np.linspace(0, 10, 200)
    plot.plot(x, 50 * np.sin(x), pen=pg.mkPen("#d62728", width=0))
    plot.setYRange(-1, 1, padding=0)
    frame.resize(500, 350)
    frame.show()
    qtbot.waitExposed(frame)
    png, svg = tmp_path / "z.png", tmp_path / "z.svg"
    frame.export(png)
    frame.export(svg)
    assert_renders_like(png, svg)
    # Above the view box (the title's row) there is no red anywhere.
    top = frame.view.mapFromScene(plot.vb.sceneBoundingRect().topLeft()).y() * 2 - 10
    assert top > 40
    for renderer in ("qt", *(("rsvg",) if RSVG else ())):
        img = render_svg(svg, *png_array(png).shape[1::-1], renderer)
        band = img[:top]
        red = (band[..., 0] > 150) & (band[..., 1] < 120) & (band[..., 2] < 120)
        assert not red.any(), renderer


def test_cosmetic_strokes_are_baked_into_coordinates():
    """A hairline inside a group scaled x600 keeps its width in any renderer: the
    group's matrix moves into the points and the vector effect goes."""
    from detokgui.gui.svg import portable_svg

    src = b"""<?xml version="1.0"?>
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100">
<g stroke="#ff0000" stroke-width="1" transform="matrix(600,0,0,-2,10,90)">
<polyline fill="none" vector-effect="non-scaling-stroke" points="0,0 0.1,40 " />
<path vector-effect="non-scaling-stroke" d="M0,0 L0.1,1e1 C0,1 0,2 0.05,3 Z" />
<rect vector-effect="non-scaling-stroke" x="0" y="0" width="0.1" height="10" />
<text x="0" y="0">label</text>
</g></svg>"""
    root = ET.fromstring(portable_svg(src))
    ns = "{http://www.w3.org/2000/svg}"
    group = root.find(f"{ns}g")
    assert group.get("transform") is None
    line = group.find(f"{ns}polyline")
    assert line.get("vector-effect") is None
    assert line.get("points") == "10,90 70,10"
    assert group.find(f"{ns}path").get("d") == "M 10,90 L 70,70 C 10,88 10,86 40,84 Z"
    rect = group.find(f"{ns}rect")
    assert [rect.get(k) for k in ("x", "y", "width", "height")] == ["10", "70", "60", "20"]
    wrapper = group.find(f"{ns}g")  # the text keeps the matrix
    assert wrapper.get("transform") == "matrix(600,0,0,-2,10,90)"
    assert wrapper.find(f"{ns}text").text == "label"
