"""Grid-line benchmark (not a test): one paint of a plot with a grid after its view's range
changed (its axes re-rendered, as after every change of data), with pyqtgraph's AxisItem
and with detokgui's GridAxis, in the same run.

    python benchmarks/bench_grid_axis.py [--repeats 80]

A 700 x 450 plot of a 1000-point curve with grid lines on both axes (alpha 0.25, as the
app's), its axes cached as the app caches them, with the app's setting of the C heap
(gui/process.py: new images' pages were faulted in afresh under an earlier one). Prints
the median GUI-thread CPU time of one paint with each axis, and GridAxis's as a ratio of
pyqtgraph's (target: at most 0.75).
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before Qt is imported

import argparse
import statistics
import sys
import time

TARGET = 0.75


def paint_ms(app, axis_class, repeats: int) -> float:
    import numpy as np
    import pyqtgraph as pg
    from PySide6.QtWidgets import QGraphicsItem

    view = pg.GraphicsLayoutWidget()
    view.resize(700, 450)
    plot = view.addPlot(axisItems={n: axis_class(n) for n in ("left", "bottom")})
    plot.plot(np.arange(1000.0), np.random.default_rng(0).normal(size=1000))
    plot.showGrid(x=True, y=True, alpha=0.25)
    axes = [plot.getAxis(n) for n in ("left", "bottom")]
    for ax in axes:
        ax.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
    view.show()
    for _ in range(20):
        app.processEvents()
    times = []
    for _ in range(repeats):
        for ax in axes:  # what a change of the view's range does to them
            ax.picture = None
            ax.update()
        t0 = time.thread_time()
        view.viewport().repaint()
        times.append(1000 * (time.thread_time() - t0))
    view.close()
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=80)
    args = p.parse_args()
    import pyqtgraph as pg
    from PySide6.QtWidgets import QApplication

    from detokgui.gui.grid_axis import GridAxis
    from detokgui.gui.process import MMAP_THRESHOLD, fix_mmap_threshold

    fix_mmap_threshold(MMAP_THRESHOLD)  # as the app's configure_process does
    app = QApplication([])
    pg.setConfigOptions(background="w", foreground="k", antialias=True)
    paint_ms(app, GridAxis, 10)  # warm up fonts and caches
    theirs = paint_ms(app, pg.AxisItem, args.repeats)
    ours = paint_ms(app, GridAxis, args.repeats)
    ratio = ours / theirs
    print(f"one paint with re-rendered axes, median of {args.repeats}: pyqtgraph's AxisItem "
          f"{theirs:.2f} ms, GridAxis {ours:.2f} ms; ratio {ratio:.2f} (target <= {TARGET})")
    sys.exit(0 if ratio <= TARGET else 1)


if __name__ == "__main__":
    main()
