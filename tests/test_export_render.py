"""Every plot of every view exports SVG and PDF as the matplotlib figure of its table (the
figure `dg.plot` draws): the SVG holds the marks that table calls for (a curve per head
and series, a bar per row, a heatmap per head), names the model and the view, and draws
in librsvg (rsvg-convert) as matplotlib's own raster of the same figure; the PDF is one
page of the same size with the model in its metadata."""

import re

import pytest
from conftest import SAMPLE_CORPUS, wait_idle
from exported import pdf_info, svg_marks, svg_size, svg_text
from svgcheck import RSVG, assert_renders_like
from test_cli import run_cli
from test_panels import BUTTON_VIEWS, VOCAB_VIEWS

from detokgui.api.frames import frame as data_frame
from detokgui.api.plots import DRAWERS
from detokgui.core.model.titles import model_text
from detokgui.figures import style
from detokgui.figures.view_figure import draw


def _heads(df) -> int:
    return df["head"].nunique()


def _lines_per_head(df, column: str) -> int:
    return sum(rows[column].nunique() for _, rows in df.groupby("head"))


#: The marks (`exported.svg_marks`) that the figure of an analysis's table draws, from the
#: table: e.g. the bias view's T_pp plot a curve per head and sigma, the top-k view a bar
#: per row and a zero line per panel, a signed heatmap an image and a colour bar per head.
EXPECTED = {
    "topk": lambda df: {"bars": len(df), "lines": df.groupby(["head", df.columns[0]]).ngroups},
    "heatmap": lambda df: {"images": 2 * _heads(df)},
    "sentence": lambda df: {"images": 2 * df["term"].nunique()},
    "bias_tp": lambda df: {"lines": _heads(df), "collections": _heads(df)},
    "bias_tpp": lambda df: {"lines": _lines_per_head(df, "sigma")},
    "bias_total": lambda df: {"lines": _lines_per_head(df, "sigma")},
    "bias_softmax": lambda df: {"lines": _lines_per_head(df, "sigma")},
    "pattern_lines": lambda df: {"lines": _heads(df)},
    "pattern": lambda df: {"images": _heads(df) + 1},
    "slope_histogram": lambda df: {"bars": len(df)},
    "position_curve": lambda df: {"lines": 2 * _heads(df)},
    "position_variance": lambda df: {"lines": 1},
    "last_positions": lambda df: {"lines": _lines_per_head(df, "i")},
    "neuron_curves": lambda df: {"lines": df["dim"].nunique()},
    "embedding_overlap": lambda df: {"bars": len(df), "lines": 1},
    "empirical": lambda df: {"lines": 2 * _heads(df)},
    "kl": lambda df: {"lines": _lines_per_head(df, "term")},
    # the six terms' advantages, their sum and the zero line, per head; or the attention
    # to position 0 and 1/(i+1)
    "sinks": lambda df: {"lines": (2 if df.attrs.get("show") == "attention" else 8)
                         * _heads(df)},
    # three maps and the colour bar; a square on each pair above the baseline's band
    "composition": lambda df: {"images": 4,
                               "bars": int((df["score"] > df["baseline_hi"]).sum())},
    "behaviour": lambda df: {"bars": len(df) // 2},
    "validation": lambda df: {"lines": df["neuron"].nunique(),
                              "collections": df["neuron"].nunique()},
    "ov": lambda df: {"bars": len(df), "lines": _heads(df)},
    "compare": lambda df: {"images": 2, "bars": int((df["assigned"] == 1).sum())},
    "pattern_pair": lambda df: {"lines": df["model"].nunique()},
    "score_matrix": lambda df: {"images": 2},
    "auroc_means": lambda df: {"bars": len(df), "lines": 1},
    "roc": lambda df: {"lines": 2 * _heads(df)},
    "frequency": lambda df: {"images": _heads(df), "lines": _heads(df)},
    "neighbours": lambda df: {"bars": len(df), "lines": 1},
    "series": lambda df: {"lines": df[df.groupby("metric")["value"].transform("count") > 0]
                          .groupby(["metric", "head"]).ngroups},  # metrics with values
}


def check_vector_exports(frame, folder, model: str, view_title: str) -> dict:
    """Export `frame` as SVG and PDF and check both against its table; returns the SVG's
    marks."""
    assert frame.analysis in DRAWERS, (frame.name, frame.analysis)
    stem = re.sub(r"[^A-Za-z0-9]+", "_", f"{view_title}-{frame.name}")
    svg, pdf, png = (folder / f"{stem}.{ext}" for ext in ("svg", "pdf", "png"))
    frame.export(svg)
    frame.export(pdf)

    req = frame.figure_request()
    df = data_frame(req.table, req.analysis, req.layer, **req.attrs)
    marks = svg_marks(svg)
    want = EXPECTED[frame.analysis](df)
    assert {k: marks[k] for k in want} == want, (frame.name, marks)

    text = svg.read_text(encoding="utf-8")
    title = re.search(r"<title>(.*?)</title>", text, re.DOTALL).group(1)
    assert frame.name in title and model in title
    footer = svg_text(svg)
    assert model in footer and f"view: {view_title}" in footer, footer

    info = pdf_info(pdf)
    assert info["pages"] == 1 and model in info["Title"] and model in info["Subject"]
    w, h = svg_size(svg)
    assert info["size"] == pytest.approx((w, h), abs=0.5)  # the same figure, in pt

    with style.style():  # matplotlib's own raster of the figure, which the SVG must match
        style.save(draw(req), png, "png", dpi=100)
    if RSVG:
        assert_renders_like(png, svg, renderers=("rsvg",))
    return marks


def _check_views(win, qtbot, tmp_path, panels):
    win.state.set_corpus([str(SAMPLE_CORPUS)])  # the text views plot corpus statistics
    model = model_text(win.state.layer)
    checked = []
    for panel in panels:
        options = getattr(panel, "options", None)
        if options is not None and hasattr(options.value, "max_texts"):
            options.set(max_texts=2)
        win.show_view(panel.view_name)
        qtbot.waitUntil(lambda p=panel: p.isVisible(), timeout=10000)
        for frame in panel.plot_frames():
            qtbot.waitUntil(frame.has_data, timeout=60000)
            wait_idle(qtbot, win)
            check_vector_exports(frame, tmp_path, model, panel.title)
            checked.append(frame.analysis)
    assert len(checked) >= len([p for p in panels if p.plot_frames()])
    if not RSVG:
        pytest.skip("the SVGs' rendering is not checked: rsvg-convert (librsvg2-bin) is "
                    "missing")
    return checked


#: views that need a model with two layers (the tiny model has one): checked in
#: test_gui_layer1 with a two-layer checkpoint
TWO_LAYER_VIEWS = {"layer1"}


def test_every_plot_of_every_view_exports_svg_and_pdf(window, qtbot, tmp_path, tiny_ckpt):
    """The comparison views with the same checkpoint as model B; the training series'
    plot (drawn after its Compute button) is checked in test_series."""
    window.compare_with(str(tiny_ckpt))
    qtbot.waitUntil(lambda: window.state.matching is not None, timeout=120000)
    skip = VOCAB_VIEWS | BUTTON_VIEWS | TWO_LAYER_VIEWS
    _check_views(window, qtbot, tmp_path, [p for p in window.panels if p.view_name not in skip])


def test_every_plot_of_the_vocabulary_views_exports_svg_and_pdf(vocab_window, qtbot,
                                                                 tmp_path):
    """On the 400-token model (a whole-vocabulary pass of the 50,257-token one takes a
    minute); the query token is the corpus's most frequent, so that it has a ROC curve."""
    from detokgui.core.corpus.counts import layer_corpus_counts

    win = vocab_window
    counts = layer_corpus_counts(win.state.layer, [str(SAMPLE_CORPUS)])
    win.state.set_query_token(int(counts.unigrams.argmax()))
    _check_views(win, qtbot, tmp_path, [p for p in win.panels if p.view_name in VOCAB_VIEWS])


def test_cli_heatmap_svg_like_png(tiny_ckpt, tmp_path):
    text = " North Korea and South Korea are neighbours"
    for fmt in ("png", "svg"):
        r = run_cli("heatmap", "--model", str(tiny_ckpt), "--tokens", text, "--head", "2",
                    "--out", str(tmp_path / f"hm.{fmt}"))
        assert r.returncode == 0, r.stderr
    assert_renders_like(tmp_path / "hm.png", tmp_path / "hm.svg")
    if not RSVG:
        pytest.skip("checked with Qt's renderer only: rsvg-convert (librsvg2-bin) is missing")
