"""plots.laid_out_once: a heatmap grid of twelve tiles is laid out once, not after each
tile (issue 16), and ends where item-by-item adding puts it."""

import pyqtgraph as pg
import pytest

from detokgui.gui.plots import laid_out_once


def grid_view(qtbot):
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    view.resize(600, 400)
    view.show()
    qtbot.waitExposed(view)
    return view


def add_tiles(view, n=12, cols=4):
    tiles = [pg.ViewBox() for _ in range(n)]
    for k, vb in enumerate(tiles):
        view.addItem(vb, row=k // cols, col=k % cols)
    return tiles


def test_tiles_added_in_the_block_are_laid_out_once_where_they_would_be(qtbot):
    plain = grid_view(qtbot)
    want = [t.geometry() for t in add_tiles(plain)]

    view = grid_view(qtbot)
    layouts = []
    grid = view.ci.layout
    with laid_out_once(view.ci):
        tiles = add_tiles(view)
        layouts.append([t.geometry() for t in tiles])  # not laid out yet
    assert all(g.isEmpty() for g in layouts[0])
    assert [t.geometry() for t in tiles] == want
    assert "activate" not in vars(grid)  # pyqtgraph lays it out again after the block

    extra = pg.ViewBox()
    view.addItem(extra, row=3, col=0)
    assert not extra.geometry().isEmpty()
    view.ci.removeItem(extra)


def test_an_error_in_the_block_leaves_the_layout_as_it_was(qtbot):
    view = grid_view(qtbot)
    with pytest.raises(RuntimeError), laid_out_once(view.ci):
        add_tiles(view, n=2)
        raise RuntimeError("drawing failed")
    assert "activate" not in vars(view.ci.layout)
    extra = pg.ViewBox()
    view.addItem(extra, row=2, col=0)
    assert not extra.geometry().isEmpty()
