"""Rasterise an exported SVG (librsvg's rsvg-convert, the renderer of GNOME and of many
converters, or Qt's QSvgRenderer) and compare it with matplotlib's own PNG of the same
figure: the SVG must draw the same lines, cells and text in another renderer."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np

RSVG = shutil.which("rsvg-convert")
#: Block size (PNG pixels) of the comparison grid: 8 PNG pixels = 4 screen pixels.
BLOCK = 8


def image_array(img) -> np.ndarray:
    """A QImage as an [h, w, 3] int array."""
    from PySide6.QtGui import QImage

    img = img.convertToFormat(QImage.Format_RGB32)
    a = np.frombuffer(img.constBits(), np.uint8).reshape(img.height(), img.bytesPerLine() // 4, 4)
    return a[:, : img.width(), 2::-1].astype(np.int16)  # BGRA in memory -> RGB


def png_array(path) -> np.ndarray:
    from PySide6.QtGui import QImage

    img = QImage(str(path))
    assert not img.isNull(), f"{path} is not a readable image"
    return image_array(img)


def render_svg(path: Path, width: int, height: int, renderer: str) -> np.ndarray:
    """The SVG drawn at width x height on white."""
    if renderer == "rsvg":
        out = path.with_suffix(".rsvg.png")
        subprocess.run([RSVG, "-w", str(width), "-h", str(height), "-b", "white", "-o", str(out),
                        str(path)], check=True, capture_output=True, timeout=120)
        return png_array(out)
    from PySide6.QtGui import QColor, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    r = QSvgRenderer(str(path))
    assert r.isValid(), f"Qt cannot parse {path}"
    img = QImage(width, height, QImage.Format_RGB32)
    img.fill(QColor("white"))
    p = QPainter(img)
    r.render(p)
    p.end()
    return image_array(img)


def _ink(a: np.ndarray) -> np.ndarray:
    """Blocks holding anything clearly darker or more coloured than white."""
    h, w = a.shape[0] // BLOCK * BLOCK, a.shape[1] // BLOCK * BLOCK
    dark = (255 - a[:h, :w]).max(-1)
    return dark.reshape(h // BLOCK, BLOCK, w // BLOCK, BLOCK).max((1, 3)) > 64


def _grow(m: np.ndarray) -> np.ndarray:
    p = np.pad(m, 1)
    out = np.zeros_like(m)
    for dy in range(3):
        for dx in range(3):
            out |= p[dy:dy + m.shape[0], dx:dx + m.shape[1]]
    return out


def differences(png: np.ndarray, svg: np.ndarray) -> tuple[float, float]:
    """(ink, colour): the share of blocks with ink in one image and none within one block
    in the other (a line drawn elsewhere, missing or far too thick), and the share of
    4 x 4-block areas whose mean colour differs by more than 48 (wrong fills)."""
    assert png.shape == svg.shape
    a, b = _ink(png), _ink(svg)
    ink = float(((a & ~_grow(b)) | (b & ~_grow(a))).mean())
    k = 4 * BLOCK
    h, w = png.shape[0] // k * k, png.shape[1] // k * k

    def means(x):
        return x[:h, :w].reshape(h // k, k, w // k, k, 3).mean((1, 3))

    colour = float((np.abs(means(png) - means(svg)).max(-1) > 48).mean())
    return ink, colour


#: What an SVG may differ from its PNG by: text is drawn as outlines in the SVG and by
#: matplotlib's font rasteriser in the PNG, a rasterised scatter is resampled, and a spine
#: on the figure's edge falls on one side or the other of the last pixel: at most 0.011
#: (ink) and 0 (colour) on the demo model's view figures, 0 for most. A heatmap drawn
#: smoothed (interpolation "none" in librsvg) differs in colour, a missing curve in ink.
MAX_INK, MAX_COLOUR = 0.02, 0.01


def assert_renders_like(png_path: Path, svg_path: Path, renderers=None) -> None:
    png = png_array(png_path)
    h, w = png.shape[:2]
    for renderer in renderers or ("qt", *(("rsvg",) if RSVG else ())):
        ink, colour = differences(png, render_svg(svg_path, w, h, renderer))
        assert ink < MAX_INK and colour < MAX_COLOUR, (
            f"{svg_path.name} drawn by {renderer} differs from {png_path.name}: "
            f"ink {ink:.4f} (max {MAX_INK}), colour {colour:.4f} (max {MAX_COLOUR})"
        )
