"""A colour bar: a colour map's gradient beside an axis of the values it stands for, tied
to the images it colours.

pyqtgraph's ColorBarItem is a whole PlotItem (four axes, a view box, a title, menus) and
interactive; the heatmaps need the gradient and one axis, not a control.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QGraphicsGridLayout, QSizePolicy

from detokgui.core.model.conventions import INK_COLOUR


class _Gradient(pg.GraphicsWidget):
    """The colour map from its low end (bottom) to its high end (top), framed."""

    def __init__(self, colormap: pg.ColorMap, width: float):
        super().__init__()
        self.setFixedWidth(width)
        self.setSizePolicy(QSizePolicy.Fixed, QSizePolicy.Expanding)
        lut = colormap.getLookupTable(nPts=256, alpha=True)[::-1]  # row 0 = the top
        self._lut = np.ascontiguousarray(lut[:, None, :], dtype=np.uint8)
        self.image = QImage(self._lut.data, 1, 256, 4, QImage.Format.Format_RGBA8888)

    def paint(self, painter, *_):
        rect = self.rect()
        painter.drawImage(rect, self.image)
        painter.setPen(pg.mkPen(INK_COLOUR, width=1))  # cosmetic
        painter.drawRect(rect)


class ColorBar(pg.GraphicsWidget):
    """What ColorBarItem(interactive=False) shows and does, with its method names:
    `setImageItem(images)` gives them the bar's colour map and levels, and `setLevels((lo,
    hi))` sets the levels of the bar and its images (set an image's levels through its
    bar). `axis` (also `getAxis("right")`) is the value axis: its label says what the
    colours mean."""

    def __init__(self, colormap: pg.ColorMap | str, width: float = 12,
                 values: tuple[float, float] = (0.0, 1.0), label: str = ""):
        super().__init__()
        self._colormap = pg.colormap.get(colormap) if isinstance(colormap, str) else colormap
        self._images: list[weakref.ref] = []
        self.values = (float(values[0]), float(values[1]))
        self.gradient = _Gradient(self._colormap, width)
        self.axis = pg.AxisItem("right", pen=INK_COLOUR, textPen=INK_COLOUR)
        self.axis.enableAutoSIPrefix(False)  # real values on the ticks, as plain_axes does
        self.axis.setRange(*self.values)
        if label:
            self.axis.setLabel(label)
        layout = QGraphicsGridLayout()
        layout.setContentsMargins(2, 8, 2, 8)  # room for the end ticks' labels
        layout.setHorizontalSpacing(0)
        layout.addItem(self.gradient, 0, 0)
        layout.addItem(self.axis, 0, 1)
        self.setLayout(layout)
        self.setSizePolicy(QSizePolicy.Fixed, QSizePolicy.Expanding)

    def getAxis(self, name: str) -> pg.AxisItem:
        if name != "right":
            raise KeyError(f"a colour bar has only its right axis, not {name!r}")
        return self.axis

    def images(self) -> list[pg.ImageItem]:
        """The images it colours that still exist."""
        return [img for img in (ref() for ref in self._images) if img is not None]

    def setImageItem(self, images: pg.ImageItem | Iterable[pg.ImageItem]) -> None:
        """Colour these images (instead of those before) with the bar's map and levels."""
        images = [images] if isinstance(images, pg.ImageItem) else list(images)
        self._images = [weakref.ref(img) for img in images]
        for img in images:
            img.setColorMap(self._colormap)
            img.setLevels(self.values)

    def levels(self) -> tuple[float, float]:
        return self.values

    def setLevels(self, values: tuple[float, float]) -> None:
        """The values at the bottom and the top of the bar, and of its images' colours."""
        lo, hi = float(values[0]), float(values[1])
        if lo > hi:
            lo = hi = (lo + hi) / 2
        self.values = (lo, hi)
        self.axis.setRange(lo, hi)
        for img in self.images():
            img.setLevels(self.values)
