"""A view's SVG and PDF from the window: File > Export current view as PDF (and SVG)
draws the figure of the plot's table off the GUI thread and writes it; the footer states
the view's conventions as `dg.plot`'s does; a plot without data says so; the figures of
the window's own tables draw a panel per head and a curve per series."""

import os
import subprocess
import sys

import numpy as np
from conftest import wait_idle
from exported import pdf_info, svg_marks, svg_text
from PySide6.QtWidgets import QFileDialog
from svgcheck import image_array

from detokgui.api.frames import frame as data_frame
from detokgui.api.plots import plot
from detokgui.core.model.conventions import COLOUR_SIGN_NOTE
from detokgui.core.position_side.tables import (
    bias_lines_table,
    last_positions_table,
    position_band_table,
    token_position_curve_table,
)
from detokgui.figures import style


def test_file_menu_exports_the_current_view_as_pdf_in_a_job(window, qtbot, tmp_path,
                                                            monkeypatch):
    win = window
    file_menu = next(a.menu() for a in win.menuBar().actions() if a.text() == "&File")
    actions = {a.text(): a.shortcut().toString() for a in file_menu.actions()
               if a.text().startswith("Export current view")}
    assert actions == {f"Export current view as {f}…": k for f, k in (
        ("PNG", "Ctrl+Shift+P"), ("SVG", "Ctrl+Shift+S"), ("PDF", "Ctrl+Shift+E"),
        ("CSV", "Ctrl+Shift+C"))}
    win.show_view("topk")
    frame = win.panel("topk").plot_frames()[0]
    qtbot.waitUntil(frame.has_data, timeout=60000)
    wait_idle(qtbot, win)
    out = tmp_path / "topk"  # the suffix is added
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a, **k: (str(out), "PDF (*.pdf)")))
    written = []
    frame.exported.connect(written.append)
    win.export_current("pdf")
    assert "export " + str(out) + ".pdf" in win.jobs.running_keys()  # drawn by a job
    qtbot.waitUntil(lambda: bool(written), timeout=30000)
    assert written == [str(out) + ".pdf"]
    info = pdf_info(written[0])
    assert info["pages"] == 1 and "Top-k affinity" in info["Title"]
    assert "Saved Top-k affinity" in win.statusBar().currentMessage()


def test_the_footer_states_the_views_conventions(window, qtbot, tmp_path):
    """The token sigma and the colour sign of the heatmap, the position convention of the
    positional bias: what the PNG's footer says, the figure's says."""
    win = window
    for view, wanted in (("heatmap", ("sigma = mean over positions", COLOUR_SIGN_NOTE)),
                         ("bias", ("position σ: paper convention",))):
        win.show_view(view)
        frame = win.panel(view).plot_frames()[0]
        qtbot.waitUntil(frame.has_data, timeout=60000)
        wait_idle(qtbot, win)
        frame.export(tmp_path / f"{view}.svg")
        footer = svg_text(tmp_path / f"{view}.svg")
        for part in wanted:
            assert part in frame.footer() and part in footer, (view, part, footer)


def test_a_plot_without_data_says_so(window, qtbot, modal_dialogs):
    """The AUROC view without a corpus: nothing to draw, no file dialog."""
    win = window
    win.show_view("auroc")
    wait_idle(qtbot, win)
    for frame in win.panel("auroc").plot_frames():
        assert not frame.has_data()
        for fmt in ("svg", "pdf"):
            win.statusBar().clearMessage()
            frame.export_dialog(fmt)
            assert "nothing to export yet" in win.statusBar().currentMessage()


def _svg_of(tmp_path, table, analysis, layer, name):
    df = data_frame(table, analysis, layer)
    path = tmp_path / f"{name}.svg"
    with style.style():
        style.save(plot(df), path, "svg")
    return svg_marks(path)


def test_the_window_tables_draw_a_panel_per_head(tiny_layer, tmp_path):
    """The position views' figures for three heads: a panel each, a curve per sigma (T_pp),
    per query position (the last positions' T_pp) and raw + fit (key position)."""
    layer, heads = tiny_layer, [0, 1, 3]
    marks = _svg_of(tmp_path, bias_lines_table(layer, 20, heads=heads), "bias_tpp", layer,
                    "tpp")
    assert marks["lines"] == 3 * 3 and marks["axes"] == 3
    marks = _svg_of(tmp_path, bias_lines_table(layer, 20, ("max",), heads), "bias_softmax",
                    layer, "softmax")
    assert marks["lines"] == 3 and marks["axes"] == 3
    marks = _svg_of(tmp_path, position_band_table(layer, heads), "bias_tp", layer, "tp")
    assert marks["lines"] == marks["collections"] == marks["axes"] == 3
    marks = _svg_of(tmp_path, last_positions_table(layer, 4, heads), "last_positions", layer,
                    "last")
    assert marks["lines"] == 3 * 4 and marks["axes"] == 3
    marks = _svg_of(tmp_path, token_position_curve_table(layer, 4969, heads),
                    "position_curve", layer, "curve")
    assert marks["lines"] == 3 * 2 and marks["axes"] == 3


_NO_MATPLOTLIB_ON_EXPORT = """
import os, sys, time
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtCore import QEventLoop, QTimer
from PySide6.QtWidgets import QApplication

app = QApplication([])
from detokgui.gui.main_window import MainWindow


def wait(ok, seconds=120):
    end = time.monotonic() + seconds
    while not ok() and time.monotonic() < end:
        loop = QEventLoop()
        QTimer.singleShot(20, loop.quit)
        loop.exec()


win = MainWindow(model="demo", device="cpu")
win.show()
wait(lambda: win.state.layer is not None and not win.jobs.busy)
win.show_view("bias")
frame = win.panel("bias").plot_frames()[1]
wait(lambda: frame.has_data() and not win.jobs.busy)
req = frame.figure_request()
frame.export(os.path.join(sys.argv[1], "bias.png"))
for exporter in (win.figure_exporter, win.report_exporter):  # File > Export … dialogs
    exporter.dialog("corpus").close()
print(len(req.table[1]), "matplotlib" in sys.modules, flush=True)
os._exit(0)
"""


def test_the_gui_thread_reads_a_vector_export_without_loading_matplotlib(tmp_path):
    """What an SVG/PDF export reads on the GUI thread (`PlotFrame.figure_request`) and a
    PNG export with its footer load no matplotlib, nor do the File > Export all figures and
    Export report dialogs: importing it takes a few hundred ms, which the worker drawing the
    figures spends instead. In a process of its own, as the
    app runs (the test process has matplotlib loaded already)."""
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    out = subprocess.run([sys.executable, "-c", _NO_MATPLOTLIB_ON_EXPORT, str(tmp_path)],
                         check=False, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    rows, loaded = out.stdout.split()
    assert int(rows) > 0 and loaded == "False", out.stdout
    assert (tmp_path / "bias.png").stat().st_size > 0


def test_a_png_export_draws_the_cached_axes_afresh_at_its_scale(window, qtbot):
    """The axes, their labels and the titles are kept as pixmaps of the screen
    (`plots.plain_axes`); a PNG export (twice the screen's size) still draws them at its
    own scale: the same pixels as with every cache turned off, not a screen pixmap scaled
    up."""
    from PySide6.QtGui import QImage
    from PySide6.QtWidgets import QGraphicsItem

    from detokgui.gui.plots import render_png

    win = window
    win.show_view("slopes")
    frame = win.panel("slopes").hist_frame
    qtbot.waitUntil(frame.has_data, timeout=60000)
    wait_idle(qtbot, win)
    qtbot.wait(100)  # painted on screen: the caches are filled
    items = frame.view.scene().items()
    cached = [i for i in items if i.cacheMode() == QGraphicsItem.DeviceCoordinateCache]
    assert len(cached) >= 4  # the histogram's axes, their labels and its title at least
    with_cache = image_array(QImage.fromData(render_png(frame)))
    for item in cached:
        item.setCacheMode(QGraphicsItem.NoCache)
    without = image_array(QImage.fromData(render_png(frame)))
    assert with_cache.shape == without.shape
    # a screen pixmap scaled up would blur every glyph: thousands of pixels; drawn afresh,
    # at most a pixel at the end of a line (the cached item's clip) differs
    differ = (np.abs(with_cache - without).max(axis=2) > 2).sum()
    assert differ <= 4, differ

