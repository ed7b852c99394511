"""A plot axis whose translucent grid lines paint about ten times faster."""

from __future__ import annotations

from collections import defaultdict

from PySide6.QtCore import QLineF, QPoint, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QImage, QPaintEngine, QPainter, QPen, QTransform

from detokgui.gui.axis_specs import FastAxis

_TRANSLATE = QTransform.TransformationType.TxTranslate.value


class GridAxis(FastAxis):
    """pyqtgraph's AxisItem, laid out fast (FastAxis), with its grid lines (showGrid)
    painted fast on a raster device: the same pixels, to within a rounding step.

    Qt's raster engine blends a translucent one-pixel line a pixel row at a time: the
    ~40 grid lines of a 700 x 450 plot took ~5 ms each time its axes re-render (every
    change of the view's range), about half of the plot's paint. Here the lines of each
    pen are drawn opaque into an image (fast), and the image is drawn once at the pen's
    opacity. On any other device (an SVG export), or through a painter that scales
    or rotates, the axis paints as pyqtgraph's, in vectors."""

    def paint(self, p: QPainter, opt, widget) -> None:
        if self.grid is False or p.paintEngine().type() != QPaintEngine.Type.Raster \
                or p.worldTransform().type().value > _TRANSLATE \
                or p.viewTransformEnabled():
            super().paint(p, opt, widget)
            return
        p.save()
        try:
            if self.style["tickFont"]:
                p.setFont(self.style["tickFont"])
            specs = self.generateDrawSpecs(p)
            if specs is not None:
                self._draw(p, *specs)
        finally:
            p.restore()

    def _draw(self, p: QPainter, axis_spec, tick_specs, text_specs) -> None:
        """What AxisItem.drawPicture draws, in its order: the axis line, the ticks (grid
        lines), the tick labels clipped to the axis."""
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        p.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        pen, a, b = axis_spec
        p.setPen(pen)
        p.drawLine(a, b)
        grid = []
        for spec in tick_specs:
            if _translucent(spec[0]):
                grid.append(spec)
            else:
                p.setPen(spec[0])
                p.drawLine(spec[1], spec[2])
        draw_translucent_lines(p, grid)
        p.setPen(self.textPen())
        p.setClipRect(self.boundingRect().toAlignedRect(), Qt.ClipOperation.IntersectClip)
        for rect, flags, text in text_specs:
            p.drawText(rect, int(flags), text)


def _translucent(pen: QPen) -> bool:
    return pen.style() == Qt.PenStyle.SolidLine and pen.color().alpha() < 255 \
        and pen.brush().style() == Qt.BrushStyle.SolidPattern


def draw_translucent_lines(p: QPainter, specs: list[tuple[QPen, object, object]]) -> None:
    """Draw lines `(pen, p1, p2)` of solid translucent pens with an aliased `p` whose
    world transform is at most a translation: per pen, the lines opaque into an image
    covering them, then that image at the pen's opacity (what Qt computes for the pen's
    colour over the pixels beneath: a ⋅ c + (1 - a) ⋅ under)."""
    by_pen: dict[tuple, list] = defaultdict(list)
    pens: dict[tuple, QPen] = {}
    for pen, a, b in specs:
        key = (pen.color().rgba(), pen.widthF(), pen.isCosmetic())
        pens[key] = pen
        by_pen[key].append((a.x(), a.y(), b.x(), b.y()))
    shift = p.worldTransform()
    for key, ends in by_pen.items():
        pen = QPen(pens[key])
        alpha = pen.color().alphaF()
        opaque = QColor(pen.color())
        opaque.setAlpha(255)
        pen.setColor(opaque)
        xs = [e[0] for e in ends] + [e[2] for e in ends]
        ys = [e[1] for e in ends] + [e[3] for e in ends]
        pad = pen.widthF() + 2.0
        box = shift.mapRect(QRectF(min(xs) - pad, min(ys) - pad, max(xs) - min(xs) + 2 * pad,
                                   max(ys) - min(ys) + 2 * pad)).toAlignedRect()
        if box.isEmpty():
            continue
        image = _scratch_image(box.size())
        q = QPainter(image)
        q.setCompositionMode(QPainter.CompositionMode.CompositionMode_Source)
        q.fillRect(QRect(QPoint(0, 0), box.size()), Qt.GlobalColor.transparent)
        q.setCompositionMode(QPainter.CompositionMode.CompositionMode_SourceOver)
        q.setRenderHint(QPainter.RenderHint.Antialiasing, p.testRenderHint(
            QPainter.RenderHint.Antialiasing))
        q.setWorldTransform(shift * QTransform.fromTranslate(-box.x(), -box.y()))
        q.setPen(pen)
        q.drawLines([QLineF(*e) for e in ends])
        q.end()
        p.save()
        p.resetTransform()
        p.setOpacity(p.opacity() * alpha)
        p.drawImage(box.topLeft(), image, QRect(QPoint(0, 0), box.size()))
        p.restore()


# 16 MB: a plot filling a window on a 4K screen; a bigger one gets an image of its own
_SCRATCH_MAX_PIXELS = 4_000_000
_scratch: QImage | None = None


def _scratch_image(size: QSize) -> QImage:
    """An image at least `size` for the GUI thread to draw lines into: the same one each
    time while it fits, not a new one (~1 MB for a 650 x 420 plot) for each pen of each
    axis: bench_grid_axis 0.43-0.49x pyqtgraph's paint, against 0.52-0.55x with new ones."""
    global _scratch
    if _scratch is not None and _scratch.width() >= size.width() \
            and _scratch.height() >= size.height():
        return _scratch
    grown = size if _scratch is None else size.expandedTo(_scratch.size())
    if grown.width() * grown.height() > _SCRATCH_MAX_PIXELS:
        return QImage(size, QImage.Format.Format_ARGB32_Premultiplied)  # too big to keep
    _scratch = QImage(grown, QImage.Format.Format_ARGB32_Premultiplied)
    return _scratch
