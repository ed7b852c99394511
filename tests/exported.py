"""Checks on exported files shared by the GUI tests."""

import xml.etree.ElementTree as ET

import numpy as np

SHAPE_TAGS = ("path", "rect", "image", "polyline", "text")


def non_background_pixels(path) -> int:
    """How many pixels of a PNG are not (near) white."""
    from PySide6.QtGui import QImage

    img = QImage(str(path))
    assert not img.isNull(), f"{path} is not a readable image"
    rgb = img.convertToFormat(QImage.Format_RGB32)  # held: the array below reads its pixels
    arr = np.frombuffer(rgb.constBits(), np.uint8)
    arr = arr.reshape(rgb.height(), rgb.bytesPerLine() // 4, 4)[:, : rgb.width(), :3]
    return int((arr < 240).any(axis=-1).sum())


def svg_shapes(path) -> list:
    """The drawing elements of an SVG file (it must parse as XML)."""
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg")
    return [e for e in root.iter() if e.tag.split("}")[-1] in SHAPE_TAGS]
