"""B1-B3 Positional bias (the paper's Fig 3-A..D, 8-10): for every visible head, T_p over
key position j with its band over the vocabulary (or raw, without LayerNorm), T_pp(i, j)
at the query position i for the mean / max / min sigma of the query position, and
T_pp + T_p with its softmax at the model's temperature tau. One query-position slider drives
every plot; a window control zooms on the last w keys before i (Fig 3-E).

The sigma convention (core.model.conventions): "paper" (the authors' figures, the default: keys
weighted by E_v[1/sigma(e_v+p_j)], 95% bands) or "mean-sigma" (1/mean_v sigma on both
sides, min..max band); every title and CSV names the one it shows."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Slot
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QLabel, QSplitter, QVBoxLayout
from superqt.utils import signals_blocked

from detokgui.core.base.plot_axes import data_range, growing_x_range, stable_range, window_x_range
from detokgui.core.model.conventions import (
    DEFAULT_POSITION_CONVENTION,
    POSITION_SIGMAS,
    TEMPERATURE_HINT,
)
from detokgui.core.position_side import titles
from detokgui.core.position_side.positional import BiasFigures, bias_figures
from detokgui.core.position_side.tables import bias_lines_table, position_band_table
from detokgui.gui.head_controls import HeadChooser, state_heads
from detokgui.gui.option_rows import STRETCH, OptionRow, check, combo, custom, option, spin, toggle
from detokgui.gui.panels.base import Panel
from detokgui.gui.plots import SIGMA_COLORS, PlotFrame
from detokgui.gui.position import ConventionBox, QueryPositionControl, connect_position_clicks
from detokgui.gui.small_multiples import SmallMultiples

DEFAULT_WINDOW = 32
LINE_SIGMAS = ("mean", "max", "min")  # the B2 lines
SIGMA_ITEM = {"mean": "σ_i = vocabulary mean", "max": "σ_i = vocabulary max",
              "min": "σ_i = vocabulary min", "none": "no LayerNorm (raw)"}
# key, frame name (export file stem), button text, tooltip
FRAMES = (
    ("tp", "Positional bias T_p", "T_p",
     "position self-assertion T_p(j) over every key position (Fig 3-A; raw: Fig 8)"),
    ("tpp", "Positional bias T_pp", "T_pp",
     ("position-position term T_pp(i, j) at the query position, for σ mean / max / min "
     "(Fig 3-B, 9)")),
    ("total", "Positional bias T_pp + T_p", "T_pp + T_p",
     "T_pp + T_p at the query position (Fig 3-C)"),
    ("softmax", "Positional bias softmax", "softmax",
     ("softmax over j <= i of (T_pp + T_p) / τ: attention from position alone "
      f"(Fig 3-D, 10); {TEMPERATURE_HINT}")),
)


def _show(key: str):
    """The Options field show_<key>: whether the plot of FRAMES' `key` is shown."""
    _, _, text, tip = next(f for f in FRAMES if f[0] == key)
    return option(True, toggle(text, f"Show or hide this plot — {tip}"))


@dataclass(frozen=True)
class Options:
    heads: str = option("selected", custom(HeadChooser))
    b3_sigma: str = option("mean", combo(  # the sigma of T_pp + T_p and its softmax (B3)
        ((s, SIGMA_ITEM[s]) for s in POSITION_SIGMAS),
        "The σ of T_pp + T_p and its softmax: the vocabulary's mean,\n"
        "max or min of σ(e_v + p_i) (at the query position under the\n"
        "paper convention, on both sides under mean σ), or none (raw).\n"
        "(The T_pp plot always shows mean, max and min.)"))
    convention: str = option(DEFAULT_POSITION_CONVENTION, custom(ConventionBox))  # conventions.POSITION_CONVENTIONS
    raw: bool = option(False, check(  # T_p without LayerNorm
        "T_p without LayerNorm",
        "Off: T_p with LayerNorm (per the convention) and its band over\n"
        "the vocabulary.\nOn: the raw b^QK p_j^T, 'without LayerNorm' (Fig 8)."))
    window: bool = option(False, check("Window",
                                       "Zoom every plot on the last w key positions before i\n"
                                       "(the paper's Fig 3-E view)"))
    window_size: int = option(DEFAULT_WINDOW, spin(
        2, 100_000, "w: how many key positions (i-w+1 .. i) the window shows"))
    show_tp: bool = _show("tp")
    show_tpp: bool = _show("tpp")
    show_total: bool = _show("total")
    show_softmax: bool = _show("softmax")


@dataclass(frozen=True)
class Request:
    serial: int
    i: int
    heads: tuple[int, ...]
    b3_sigma: str
    convention: str


def _pen(sigma: str):
    """The line of a σ's curves (the figures' colours), a hairline: Qt strokes a wide
    antialiased line many times slower, too slow for a slider."""
    return pg.mkPen(SIGMA_COLORS.get(sigma, SIGMA_COLORS["none"]), width=1)


class PositionalBiasPanel(Panel):
    title = "Positional bias"
    view_name = "bias"
    tooltip = "How position alone biases attention: T_p, T_pp and their softmax at a query position (B1-B3)"

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        # All heads at i = L-1 take ~1-2 ms at GPT-2-small size: on the job runner, coalesced
        # so that a dragged slider never queues work and redraws as fast as it computes.
        self.channel().coalesce = True
        self.draw_ms = 0.0  # GUI-thread time of the last draw, all its plots together
        self._b1_key = None  # what the T_p curves and band hold
        self._x_range = None  # x range of the T_pp / total / softmax plots
        lay = QVBoxLayout(self)

        self.options = OptionRow("bias", Options, self)
        self.heads_box = self.options.widget("heads")
        lay.addLayout(self.options.row(
            "heads", "convention", ("b3_sigma", "raw"), ("window", "window_size"), STRETCH,
            (QLabel("Show"), *(f"show_{key}" for key, *_ in FRAMES))))

        self.position = QueryPositionControl(
            state, "Query position i", slider=True,
            tip="Query position i (0-based), shared with every panel.\n"
                "Drag to redraw all visible heads; click a plot to jump there.")
        self.slider, self.spin = self.position.slider, self.position.spin
        lay.addWidget(self.position)

        self.frames: dict[str, PlotFrame] = {}
        self.grids: dict[str, SmallMultiples] = {}
        for key, name, _text, _tip in FRAMES:
            frame = PlotFrame(name, lambda k=key: self._table(k), analysis=f"bias_{key}")
            frame.setMinimumSize(160, 120)
            self.frames[key] = frame
            grid = SmallMultiples(frame, state, x_label="key position j")
            self.grids[key] = grid
            connect_position_clicks(frame.view.scene(),
                                    lambda p, g=grid: g.position(p, self._n_positions()),
                                    self.state.set_query_position)
            frame.view.scene().sigMouseMoved.connect(lambda pos, k=key: self._hover(k, pos))
        tp = self.grids["tp"]
        band = QColor(SIGMA_COLORS["mean"])
        band.setAlpha(64)  # the figures' band alpha
        tp.add_band("band", band)
        tp.add_series("mean", _pen("mean"), steady=True)
        tp.add_series("raw", _pen("mean"), steady=True)
        for s in LINE_SIGMAS:
            self.grids["tpp"].add_series(s, _pen(s))
        self.grids["total"].add_series("total", _pen("mean"))
        self.grids["softmax"].add_series("softmax", _pen("mean"))
        self.split = QSplitter(Qt.Vertical)
        self.rows = []
        for keys in (("tp", "tpp"), ("total", "softmax")):
            s = QSplitter(Qt.Horizontal)
            for k in keys:
                s.addWidget(self.frames[k])
            self.split.addWidget(s)
            self.rows.append((s, keys))
        lay.addWidget(self.split, 1)
        self.status.setToolTip("Hover over a plot to read its values; click to choose the "
                               "query position")
        lay.addWidget(self.status)
        self._apply_shown()
        self.options.changed.connect(self._options_changed)

    def plot_frames(self):
        return [self.frames[key] for key, *_ in FRAMES]

    def _n_positions(self) -> int:
        return self.layer.n_positions if self.layer is not None else 0

    # ------------------------------------------------------------------ state

    def model_changed(self, layer) -> None:
        self._b1_key = None
        if layer is not None:
            window_size = self.options.widget("window_size")
            with signals_blocked(window_size):
                window_size.setMaximum(layer.n_positions)
            self.options.apply()

    @Slot(object)
    def _options_changed(self, _opts) -> None:
        self._apply_shown()
        self.refresh()  # heads or σ: recompute (drawn when it arrives); the rest only redraws
        if self.channel().pending is None:
            self.redraw()

    def _apply_shown(self) -> None:
        for split, keys in self.rows:
            for k in keys:
                self.frames[k].setVisible(self._shown(k))
            split.setVisible(any(self._shown(k) for k in keys))

    # ------------------------------------------------------------------ compute

    def request(self):
        opts = self.options.value
        return Request(self.serial, self.state.query_position,
                       tuple(state_heads(opts.heads, self.state)), opts.b3_sigma, opts.convention)

    @staticmethod
    def compute(layer, req: Request) -> BiasFigures:
        return bias_figures(layer, req.i, list(req.heads), req.b3_sigma, req.convention,
                            LINE_SIGMAS)

    # ------------------------------------------------------------------ draw

    def _shown(self, key: str) -> bool:
        return getattr(self.options.value, f"show_{key}")

    def draw(self, res: BiasFigures | None) -> None:
        """Show `res` in every shown plot: a figure is one plot with a curve item per
        series, so all heads of all four plots redraw in one pass."""
        if res is None:
            return
        t0 = time.perf_counter()
        i, heads = res.i, res.heads
        opts = self.options.value
        if opts.window:
            xr, a, b = window_x_range(i, opts.window_size)
        else:  # keys 0..i, with a strip of the masked keys past i
            self._x_range = growing_x_range(self._x_range, i)
            xr, a, b = self._x_range, 0, i + 1
        for key, *_ in FRAMES:
            if self._shown(key):
                self.grids[key].set_heads(heads)
                getattr(self, f"_draw_{key}")(self.grids[key], res, xr, a, b)
        # Without i (the slider and the titles show it): a status line whose text changes
        # lays out the window again, on every step of a drag.
        keys = (f"the last w = {opts.window_size} keys up to i" if opts.window
                else "keys j = 0..i")
        self.status.setText(f"{len(heads)} head{'s' if len(heads) != 1 else ''} · {keys} · "
                            "hover to read values, click to choose i")
        self.draw_ms = 1000 * (time.perf_counter() - t0)

    def _draw_tp(self, grid: SmallMultiples, res, xr, a, b) -> None:
        raw = self.options.value.raw
        band, L = res.band, self.layer.n_positions
        x_range = xr if self.options.value.window else (-0.02 * L, L - 1 + 0.02 * L)
        lo_j = max(0, int(np.floor(x_range[0] + 0.5)))
        hi_j = min(L, int(np.ceil(x_range[1])) + 1)
        arrays = [band.raw] if raw else [band.lower, band.upper, band.mean]
        grid.set_ranges(x_range, stable_range(grid.y_range, *data_range(arrays, lo_j, hi_j)))
        grid.set_marker(res.i, x_range[1])
        key = (self.serial, band.convention, tuple(res.heads))
        if self._b1_key != key:  # T_p does not depend on i: the slider moves the marker only
            self._b1_key = key
            js = np.arange(L)
            grid.set_band("band", js, band.lower, band.upper)
            grid.set_series("mean", js, band.mean)
            grid.set_series("raw", js, band.raw)
        grid.band_items["band"].setVisible(not raw)
        grid.show_series("mean", not raw)
        grid.show_series("raw", raw)
        grid.set_title(titles.tp_title(raw, band.convention))

    def _draw_tpp(self, grid: SmallMultiples, res, xr, a, b) -> None:
        arrays = [res.lines[s].t_pp for s in LINE_SIGMAS]
        grid.set_ranges(xr, stable_range(grid.y_range, *data_range(arrays, a, b)))
        grid.set_marker(res.i, xr[1])
        J = np.arange(res.i + 1)
        for s in LINE_SIGMAS:
            grid.set_series(s, J, res.lines[s].t_pp)
        grid.set_title(titles.tpp_title(res.i, {s: SIGMA_COLORS[s] for s in LINE_SIGMAS},
                                        res.convention))

    def _draw_total(self, grid: SmallMultiples, res, xr, a, b) -> None:
        self._draw_one(grid, "total", res, res.b3.total, xr, a, b)
        grid.set_title(titles.total_title(res.i, res.b3_sigma, res.convention))

    def _draw_softmax(self, grid: SmallMultiples, res, xr, a, b) -> None:
        # the largest probability jumps as i moves: keep the range while it stays above 1/4
        self._draw_one(grid, "softmax", res, res.b3.softmax, xr, a, b, zero_based=True,
                       min_fill=0.25)
        grid.set_title(titles.softmax_title(self.layer, res.i, res.b3_sigma, res.convention))

    @staticmethod
    def _draw_one(grid: SmallMultiples, name, res, values, xr, a, b, **range_kw) -> None:
        """One series, values [heads, i+1] in the colour of its σ, the y range from keys
        a..b-1."""
        grid.set_ranges(xr, stable_range(grid.y_range, *data_range([values], a, b), **range_kw))
        grid.set_marker(res.i, xr[1])
        grid.curves[name].setPen(_pen(res.b3_sigma))
        grid.set_series(name, np.arange(res.i + 1), values)

    # ------------------------------------------------------------------ hover & export

    def _hover(self, key: str, pos) -> None:
        res = self.result
        hit = self.grids[key].position_at(pos, self._n_positions())
        if res is not None and hit is not None and hit[0] in res.heads:
            self.status.setText(titles.bias_hover(res, key, *hit, self.options.value.raw))

    def _table(self, key: str):
        res = self.result
        if res is None:
            return None
        if key == "tp":
            return position_band_table(self.layer, res.heads, res.convention)
        sigmas = LINE_SIGMAS if key == "tpp" else (res.b3_sigma,)
        return bias_lines_table(self.layer, res.i, sigmas, res.heads, res.convention)
