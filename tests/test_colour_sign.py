"""One colour sign for every signed heatmap (`conventions.DIVERGING_COLOURS`: red < 0 < blue,
the paper's RdBu): the window's export, `detokgui export heatmap --out x.png` and
`dg.plot(dg.heatmap(...))` colour the same cell with the same hue.

The check: a few tokens and a head whose most extreme T_ee is positive (or negative), so
that the extreme cell, a large block of the image, gets the end colour of the scale; the
colour bar holds each end colour in a thin band only."""

import io

import numpy as np
import pytest
from conftest import close_jobs, open_window, wait_idle
from PIL import Image

from detokgui import cli
from detokgui.core.model.conventions import DIVERGING_COLOURS
from detokgui.core.token_side import affinity

TEXT = " North Korea and"


def _rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[k:k + 2], 16) for k in (1, 3, 5)], dtype=float)


BLUE, RED = _rgb(DIVERGING_COLOURS[-1]), _rgb(DIVERGING_COLOURS[0])


def _near(pixels: np.ndarray, colour: np.ndarray) -> int:
    return int((np.abs(pixels - colour).max(axis=-1) <= 6).sum())


def end_colour(png: bytes) -> str:
    """"blue" or "red": which end colour of the scale covers a cell-sized block."""
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float)
    blue, red = _near(pixels, BLUE), _near(pixels, RED)
    assert max(blue, red) > 400, (blue, red)  # a whole cell, not a colour bar's band
    assert min(blue, red) * 5 < max(blue, red), (blue, red)
    return "blue" if blue > red else "red"


@pytest.fixture(scope="module")
def case(tiny_layer):
    """(ids, {sign: head}): a head whose extreme cell is positive and one whose is negative."""
    ids = tiny_layer.tokenizer.encode(TEXT)
    values = affinity.affinity_block(tiny_layer, ids, ids).numpy()
    heads = {}
    for h, v in enumerate(values):
        sign = "+" if v.max() >= -v.min() else "-"
        heads.setdefault(sign, h)
    assert set(heads) == {"+", "-"}, "the random model should give both signs"
    return ids, heads


@pytest.mark.parametrize("sign,colour", [("+", "blue"), ("-", "red")])
def test_cli_and_api_colour_alike(tiny_ckpt, tiny_layer, case, tmp_path, capsys, sign, colour):
    import detokgui as dg

    ids, heads = case
    h = heads[sign]
    out = tmp_path / "h.png"
    assert cli.main(["heatmap", "--model", str(tiny_ckpt), "--tokens", TEXT, "--head", str(h),
                     "--out", str(out)]) == 0
    capsys.readouterr()
    assert end_colour(out.read_bytes()) == colour
    fig = dg.plot(dg.heatmap(tiny_layer, ids, heads=h, progress=False))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=200)
    assert end_colour(buf.getvalue()) == colour


def test_window_colours_as_the_exports(qtbot, tiny_ckpt, case, tmp_path):
    ids, heads = case
    win = open_window(qtbot, tiny_ckpt)
    try:
        hm = win.panel("heatmap")
        win.show_view("heatmap")
        win.panel("tokens").set_text(TEXT)
        for sign, colour in (("+", "blue"), ("-", "red")):
            win.state.set_head(heads[sign])
            wait_idle(qtbot, win)
            assert hm.tokens == ids and hm.heads == [heads[sign]]
            path = tmp_path / f"window{sign}.png"
            hm.plot_frames()[0].export(path)
            assert end_colour(path.read_bytes()) == colour, sign
    finally:
        close_jobs(win)
