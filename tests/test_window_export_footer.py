"""A plot exported from the window says which model made it, as the CLI's and the API's
figures do: a footer under the plot (detokgui, the model with its family, shapes and
temperature, the view, the result's conventions), also kept as the PNG's Description text
and the SVG's <desc>; the SVG's <title> names the model too."""

import io
import xml.etree.ElementTree as ET

import numpy as np
from conftest import close_jobs, open_window, wait_idle
from PIL import Image

from detokgui.core.model.titles import model_text

VIEWS = ("topk", "heatmap", "bias", "sentence")


def _text_of(svg_path, tag: str) -> str:
    root = ET.parse(svg_path).getroot()
    return next(e.text or "" for e in root.iter() if e.tag.split("}")[-1] == tag)


def test_exports_carry_the_model_footer(qtbot, tiny_ckpt, tmp_path):
    win = open_window(qtbot, tiny_ckpt)
    try:
        model = model_text(win.state.layer)
        assert "tiny" in model and "4 heads" in model
        for view in VIEWS:
            win.show_view(view)
            wait_idle(qtbot, win)
            panel = win.panel(view)
            frame = panel.plot_frames()[0]
            footer = frame.footer()
            assert footer[:2] == [footer[0], model] and footer[0].startswith("detokgui ")
            assert f"view: {panel.title}" in footer

            png = tmp_path / f"{view}.png"
            frame.export(png)
            img = Image.open(io.BytesIO(png.read_bytes()))
            assert model in img.text["Description"], view
            # the footer is drawn below the plot: the band under the view's own height holds
            # grey text
            pixels = np.asarray(img.convert("L"), dtype=float)
            view_h = 2 * frame.view.height()  # exported at twice the screen size
            assert pixels.shape[0] > view_h + 10
            band = pixels[view_h:]
            assert (band < 200).sum() > 100, view

            svg = tmp_path / f"{view}.svg"
            frame.export(svg)
            assert model in _text_of(svg, "description") and model in _text_of(svg, "title"), view
        heatmap = win.panel("heatmap").plot_frames()[0].footer()
        assert any("red < 0 < blue" in part for part in heatmap)  # the colour sign
        assert any("sigma" in part for part in heatmap)  # the token sigma of the result
        assert any("position σ: paper" in part for part in win.panel("bias")
                   .plot_frames()[0].footer())
    finally:
        close_jobs(win)
