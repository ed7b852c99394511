"""Checks on exported files shared by the GUI tests."""

import html
import re
import xml.etree.ElementTree as ET
from pathlib import Path

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


SVG_NS = "{http://www.w3.org/2000/svg}"


def _clipped_path(group) -> bool:
    return any(e.get("clip-path") for e in group.iter(f"{SVG_NS}path"))


def svg_marks(path) -> dict[str, int]:
    """What a matplotlib SVG draws, counted from its element ids: "axes" (panels and
    colour bars), "lines" (Line2D artists with a path inside their axes: curves and
    reference lines, not tick marks), "bars" (patches inside their axes), "images"
    (heatmaps, colour bars, rasterised scatters) and "collections" (bands, scatters)."""
    root = ET.parse(path).getroot()
    marks = {"axes": 0, "lines": 0, "bars": 0, "images": 0, "collections": 0}
    for g in root.iter(f"{SVG_NS}g"):
        kind, _, number = (g.get("id") or "").rpartition("_")
        if not number.isdigit():
            continue
        if kind == "axes":
            marks["axes"] += 1
        elif kind == "line2d" and _clipped_path(g):
            marks["lines"] += 1
        elif kind == "patch" and _clipped_path(g):
            marks["bars"] += 1
        elif kind.endswith("Collection"):
            marks["collections"] += 1
    marks["images"] = sum(1 for _ in root.iter(f"{SVG_NS}image"))
    return marks


def svg_size(path) -> tuple[float, float]:
    """An SVG's width and height in pt (matplotlib writes them so)."""
    root = ET.parse(path).getroot()
    return tuple(float(root.get(k).removesuffix("pt")) for k in ("width", "height"))


def _pdf_string(data: bytes, start: int) -> str:
    """The PDF literal string "(...)" that opens at data[start], unescaped; UTF-16 with its
    byte-order mark or Latin-1, as PDF text strings are."""
    out, depth, i = bytearray(), 0, start
    escapes = {ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t", ord("b"): b"\b",
               ord("f"): b"\f"}
    while True:
        c = data[i]
        if c == ord("\\"):
            nxt = data[i + 1]
            octal = re.match(rb"[0-7]{1,3}", data[i + 1:i + 4])
            if octal:
                out.append(int(octal.group(), 8) & 0xFF)
                i += 1 + len(octal.group())
                continue
            out += escapes.get(nxt, bytes([nxt]))
            i += 2
            continue
        if c == ord("("):
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif c == ord(")"):
            depth -= 1
            if depth == 0:
                break
        out.append(c)
        i += 1
    raw = bytes(out)
    return raw[2:].decode("utf-16-be") if raw.startswith(b"\xfe\xff") else raw.decode("latin-1")


def pdf_info(path) -> dict:
    """A PDF read without a PDF library: its page count, the first page's size in pt
    (MediaBox) and its Title and Subject; it must start and end as a PDF file does."""
    with open(path, "rb") as f:
        data = f.read()
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF"), path
    info = {"pages": len(re.findall(rb"/Type\s*/Page\b(?!s)", data))}
    box = re.search(rb"/MediaBox\s*\[\s*([-\d.\s]+)\]", data)
    x0, y0, x1, y1 = (float(v) for v in box.group(1).split())
    info["size"] = (x1 - x0, y1 - y0)
    for key in ("Title", "Subject"):
        m = re.search(rb"/" + key.encode() + rb"\s*\(", data)
        info[key] = _pdf_string(data, m.end() - 1) if m else ""
    return info


def svg_text(path) -> str:
    """The text a matplotlib SVG draws as outlines, from the comment it writes before each
    line of it, the lines joined with spaces."""
    text = Path(path).read_text(encoding="utf-8")
    lines = re.findall(r"<!-- (.*?) -->", text, re.DOTALL)
    return html.unescape(" ".join(lines))
