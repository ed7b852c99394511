"""Grid-line benchmark (not a test): the paint of a plot with grid lines after its range
changes, as the window's plots get it (`gui.plots.add_plot(grid="xy")`), against the same
plot with its axes painted unclipped into their own pixmaps (what add_plot made before:
the baseline), in the same run.

pyqtgraph draws an axis's grid lines (translucent, across the whole plot) as part of the
axis. Qt's raster engine draws translucent lines without a clip pixel by pixel, ~100x
slower than under a clip; add_plot's plots clip their children (the axes paint under the
plot's rectangle) and paint their grid axes directly. Target: ratio <= 0.5.

    python benchmarks/bench_grid.py [--steps 40] [--size 700x420]
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before Qt is imported

import argparse
import random
import statistics
import time

TARGET = 0.5


def grid_plot(baseline: bool):
    """A PlotFrame with add_plot's grid plot and a 1024-point curve; `baseline`: with its
    axes cached and unclipped, as before."""
    import numpy as np
    from PySide6.QtWidgets import QGraphicsItem

    from detokgui.gui.plots import PlotFrame, add_plot

    frame = PlotFrame("grid", lambda: None)
    plot = add_plot(frame, grid="xy", bottom="position j", left="value")
    plot.plot(np.arange(1024), np.cumsum(np.random.default_rng(0).normal(size=1024)),
              antialias=True)
    if baseline:
        plot.setFlag(QGraphicsItem.ItemClipsChildrenToShape, False)
        for name in ("left", "bottom"):
            plot.getAxis(name).setCacheMode(QGraphicsItem.DeviceCoordinateCache)
    return frame, plot


def paint_ms(app, frame, plot, steps: int, seed: int) -> list[float]:
    """GUI time of each synchronous repaint after a new x and y range."""
    rng = random.Random(seed)
    out = []
    for _ in range(steps):
        y0 = rng.uniform(-30, 30)
        x0 = rng.uniform(0, 300)
        plot.setRange(xRange=(x0, x0 + rng.uniform(50, 900)),
                      yRange=(y0, y0 + rng.uniform(0.5, 40)), padding=0)
        t0 = time.perf_counter()
        frame.view.viewport().repaint()
        out.append(1000 * (time.perf_counter() - t0))
        app.processEvents()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--size", default="700x420", help="the plot frame's size, WxH pixels")
    args = ap.parse_args()
    w, h = (int(v) for v in args.size.split("x"))

    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    frames = {}
    for name in ("add_plot", "baseline"):
        frame, plot = grid_plot(name == "baseline")
        frame.resize(w, h)
        frame.show()
        frames[name] = (frame, plot)
    for _ in range(3):
        app.processEvents()
    times = {name: [] for name in frames}
    for rnd in range(4):  # alternate, so that the host's load falls on both alike
        for name, (frame, plot) in frames.items():
            times[name] += paint_ms(app, frame, plot, args.steps // 4, seed=rnd)
    med = {name: statistics.median(t) for name, t in times.items()}
    ratio = med["add_plot"] / med["baseline"]
    print(f"paint after a range change, {w}x{h}, median of {len(times['add_plot'])}:")
    print(f"  add_plot (clipped, uncached grid axes) {med['add_plot']:6.2f} ms")
    print(f"  baseline (cached, unclipped)           {med['baseline']:6.2f} ms")
    print(f"  ratio {ratio:.2f} (target <= {TARGET})  {'ok' if ratio <= TARGET else 'MISSED'}")
    raise SystemExit(0 if ratio <= TARGET else 1)


if __name__ == "__main__":
    main()
