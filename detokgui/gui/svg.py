"""Make the SVG that Qt's QSvgGenerator writes render the same in every SVG renderer.

Qt draws a cosmetic pen (pyqtgraph's default: a width in screen pixels whatever the
zoom) as an element with `vector-effect="non-scaling-stroke"` inside a group that carries
the item's transform, e.g. `matrix(8.06,0,0,-2133.75,56,200)` for a curve in a plot's
data coordinates. Qt's own renderer honours the vector effect; librsvg, Cairo and
browsers scale the stroke by the group's matrix instead, so a 1-pixel line becomes a
solid block 2000 pixels wide. `portable_svg` applies each such group's matrix to the
coordinates of its stroked elements (the group keeps the matrix for the rest: text,
images), so that every stroke width is in the document's own units and no renderer needs
the vector effect.

It also enlarges embedded images drawn much larger than their pixel size (a heatmap of
8 x 8 tokens is an 8 x 8-pixel image drawn 700 pixels wide) by pixel repetition: Qt
draws them with sharp cell edges, other renderers interpolate them into blurs.
"""

from __future__ import annotations

import base64
import itertools
import math
import re
import xml.etree.ElementTree as ET

import numpy as np

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
_HREF = f"{{{XLINK_NS}}}href"

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_MATRIX = re.compile(rf"^\s*matrix\(\s*({_NUMBER})" + rf"\s*,\s*({_NUMBER})" * 5 + r"\s*\)\s*$")
_PATH_TOKEN = re.compile(rf"[A-Za-z]|{_NUMBER}")

# Path commands whose arguments are all absolute (x, y) points: an affine map applies
# to each point. Qt writes only M, L, C and Z.
_POINT_COMMANDS = set("MLCQST")
#: Embedded images whose pixels are drawn at least this many units wide are enlarged...
MIN_CELL_UNITS = 2
#: ... to their drawn size, but never beyond this many pixels per side.
IMAGE_MAX_SIDE = 4096


def _tag(e: ET.Element) -> str:
    return e.tag.rsplit("}", 1)[-1]


def _fmt(x: float) -> str:
    return f"{x:.6g}"


class _Affine:
    """x' = a x + c y + e,  y' = b x + d y + f (SVG's matrix(a, b, c, d, e, f))."""

    def __init__(self, a, b, c, d, e, f):
        self.a, self.b, self.c, self.d, self.e, self.f = a, b, c, d, e, f

    @classmethod
    def parse(cls, text: str | None) -> _Affine | None:
        m = _MATRIX.match(text or "")
        return cls(*(float(v) for v in m.groups())) if m else None

    def axis_aligned(self) -> bool:
        return self.b == 0 and self.c == 0

    def then(self, outer: _Affine) -> _Affine:
        """The map `self`, followed by `outer`."""
        o = outer
        return _Affine(o.a * self.a + o.c * self.b, o.b * self.a + o.d * self.b,
                       o.a * self.c + o.c * self.d, o.b * self.c + o.d * self.d,
                       o.a * self.e + o.c * self.f + o.e, o.b * self.e + o.d * self.f + o.f)

    def rect_to_local(self, rect):
        """The device rectangle `rect` (x0, y0, x1, y1) in this map's input coordinates;
        None unless the map is axis-aligned and invertible."""
        if not self.axis_aligned() or self.a == 0 or self.d == 0:
            return None
        xs = sorted(((rect[0] - self.e) / self.a, (rect[2] - self.e) / self.a))
        ys = sorted(((rect[1] - self.f) / self.d, (rect[3] - self.f) / self.d))
        return xs[0], ys[0], xs[1], ys[1]

    def point(self, x: float, y: float) -> tuple[float, float]:
        return self.a * x + self.c * y + self.e, self.b * x + self.d * y + self.f

    def points(self, text: str) -> str:
        nums = [float(v) for v in re.findall(_NUMBER, text)]
        pairs = (self.point(nums[i], nums[i + 1]) for i in range(0, len(nums) - 1, 2))
        return " ".join(f"{_fmt(x)},{_fmt(y)}" for x, y in pairs)

    def path(self, d: str) -> str | None:
        """The path with every point mapped; None for commands this cannot map (H, V, A
        or relative ones, which Qt does not write)."""
        out: list[str] = []
        pending: list[float] = []
        for tok in _PATH_TOKEN.findall(d):
            if tok.isalpha():
                if tok not in _POINT_COMMANDS and tok not in "Zz":
                    return None
                if len(pending) % 2:
                    return None
                out.append(tok)
                continue
            pending.append(float(tok))
            if len(pending) == 2:
                x, y = self.point(*pending)
                out.append(f"{_fmt(x)},{_fmt(y)}")
                pending.clear()
        return " ".join(out) if not pending else None


def _bake(el: ET.Element, m: _Affine) -> bool:
    """Apply `m` to the geometry of a stroked element in place; False if it cannot."""
    tag = _tag(el)
    if tag in ("polyline", "polygon"):
        el.set("points", m.points(el.get("points", "")))
        return True
    if tag == "path":
        d = m.path(el.get("d", ""))
        if d is None:
            return False
        el.set("d", d)
        return True
    if tag == "line":
        for xa, ya in (("x1", "y1"), ("x2", "y2")):
            x, y = m.point(float(el.get(xa, 0)), float(el.get(ya, 0)))
            el.set(xa, _fmt(x))
            el.set(ya, _fmt(y))
        return True
    if tag == "rect" and m.axis_aligned() and not (el.get("rx") or el.get("ry")):
        x, y = float(el.get("x", 0)), float(el.get("y", 0))
        w, h = float(el.get("width", 0)), float(el.get("height", 0))
        (x0, y0), (x1, y1) = m.point(x, y), m.point(x + w, y + h)
        for k, v in (("x", min(x0, x1)), ("y", min(y0, y1)), ("width", abs(x1 - x0)),
                     ("height", abs(y1 - y0))):
            el.set(k, _fmt(v))
        return True
    if tag == "rect":  # rotated or sheared: a polygon through the mapped corners
        x, y = float(el.get("x", 0)), float(el.get("y", 0))
        w, h = float(el.get("width", 0)), float(el.get("height", 0))
        el.tag = f"{{{SVG_NS}}}polygon"
        corners = f"{x},{y} {x + w},{y} {x + w},{y + h} {x},{y + h}"
        for k in ("x", "y", "width", "height"):
            el.attrib.pop(k, None)
        el.set("points", m.points(corners))
        return True
    if tag in ("ellipse", "circle") and m.axis_aligned():
        cx, cy = m.point(float(el.get("cx", 0)), float(el.get("cy", 0)))
        if tag == "circle":
            r = float(el.get("r", 0))
            rx, ry = r * abs(m.a), r * abs(m.d)
            el.tag = f"{{{SVG_NS}}}ellipse"
            el.attrib.pop("r", None)
        else:
            rx, ry = float(el.get("rx", 0)) * abs(m.a), float(el.get("ry", 0)) * abs(m.d)
        for k, v in (("cx", cx), ("cy", cy), ("rx", rx), ("ry", ry)):
            el.set(k, _fmt(v))
        return True
    return False


def _flatten_cosmetic(group: ET.Element) -> None:
    """Move `group`'s transform into its non-scaling-stroke children; the other children
    keep it through a nested group each."""
    m = _Affine.parse(group.get("transform"))
    kids = list(group)
    if m is None or not any(k.get("vector-effect") == "non-scaling-stroke" for k in kids):
        return
    transform = group.attrib.pop("transform")
    for i, kid in enumerate(kids):
        if kid.get("vector-effect") == "non-scaling-stroke" and _bake(kid, m):
            del kid.attrib["vector-effect"]
            continue
        wrapper = ET.Element(f"{{{SVG_NS}}}g", {"transform": transform})
        group.remove(kid)
        wrapper.append(kid)
        group.insert(i, wrapper)


def _sharpen_image(el: ET.Element, scale: tuple[float, float]) -> None:
    """Enlarge a small embedded PNG by repeating each pixel (QImage.scaled's nearest
    neighbour does not make equal blocks)."""
    href = el.get(_HREF) or el.get("href") or ""
    prefix = "data:image/png;base64,"
    if not href.startswith(prefix):
        return
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice
    from PySide6.QtGui import QImage

    img = QImage.fromData(QByteArray(base64.b64decode(href[len(prefix):])), "PNG")
    if img.isNull() or img.width() == 0 or img.height() == 0:
        return
    fx = math.ceil(float(el.get("width", 0)) * scale[0] / img.width())
    fy = math.ceil(float(el.get("height", 0)) * scale[1] / img.height())
    fx = min(fx, IMAGE_MAX_SIDE // img.width())
    fy = min(fy, IMAGE_MAX_SIDE // img.height())
    if min(fx, fy) < MIN_CELL_UNITS:
        return
    img = img.convertToFormat(QImage.Format_ARGB32)
    w, h = img.width(), img.height()
    pixels = np.frombuffer(img.constBits(), np.uint8).reshape(h, img.bytesPerLine())[:, : 4 * w]
    pixels = np.repeat(np.repeat(pixels.reshape(h, w, 4), fy, axis=0), fx, axis=1)
    pixels = np.ascontiguousarray(pixels)
    big = QImage(pixels.data, w * fx, h * fy, 4 * w * fx, QImage.Format_ARGB32)
    buf = QBuffer()
    buf.open(QIODevice.WriteOnly)
    big.save(buf, "PNG")
    data = base64.b64encode(bytes(buf.data())).decode("ascii")
    el.set(_HREF if el.get(_HREF) is not None else "href", prefix + data)


_IDENTITY = _Affine(1.0, 0.0, 0.0, 1.0, 0.0, 0.0)

# --------------------------------------------------------------------------- clipping


def _clip_rects(root: ET.Element) -> dict[str, tuple[float, float, float, float]]:
    """Clip paths that are one axis-aligned rectangle: id -> (x0, y0, x1, y1)."""
    out = {}
    for cp in root.iter(f"{{{SVG_NS}}}clipPath"):
        kids = list(cp)
        if len(kids) != 1 or _tag(kids[0]) != "path" or cp.get("transform"):
            continue
        toks = _PATH_TOKEN.findall(kids[0].get("d", ""))
        nums = [float(t) for t in toks if not t.isalpha()]
        cmds = "".join(t for t in toks if t.isalpha())
        if cmds.rstrip("Z") not in ("MLLL", "MLLLL") or len(nums) < 8:
            continue
        xs, ys = set(nums[0::2]), set(nums[1::2])
        if len(xs) == 2 and len(ys) == 2:
            out[cp.get("id")] = (min(xs), min(ys), max(xs), max(ys))
    return out


def _clip_segment(p, q, r):
    """Liang-Barsky: the part of segment p-q inside rectangle r, or None."""
    (x0, y0), (x1, y1) = p, q
    dx, dy = x1 - x0, y1 - y0
    t0, t1 = 0.0, 1.0
    for den, num in ((-dx, x0 - r[0]), (dx, r[2] - x0), (-dy, y0 - r[1]), (dy, r[3] - y0)):
        if den == 0:
            if num < 0:
                return None
            continue
        t = num / den
        if den < 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return None
    return (x0 + t0 * dx, y0 + t0 * dy), (x0 + t1 * dx, y0 + t1 * dy)


def clip_polyline(points, rect) -> list[list[tuple[float, float]]]:
    """The pieces of a polyline inside `rect`."""
    pieces: list[list] = []
    for p, q in itertools.pairwise(points):
        seg = _clip_segment(p, q, rect)
        if seg is None:
            continue
        if pieces and pieces[-1][-1] == seg[0]:
            pieces[-1].append(seg[1])
        else:
            pieces.append([seg[0], seg[1]])
    if len(points) == 1 and _inside(points[0], rect):
        pieces.append(list(points))
    return pieces


def _inside(p, r) -> bool:
    return r[0] <= p[0] <= r[2] and r[1] <= p[1] <= r[3]


def clip_polygon(points, rect) -> list[tuple[float, float]]:
    """Sutherland-Hodgman: a filled polygon cut to `rect`."""
    out = list(points)
    edges = ((0, rect[0], 1), (0, rect[2], -1), (1, rect[1], 1), (1, rect[3], -1))
    for axis, bound, sign in edges:
        src, out = out, []
        for i, cur in enumerate(src):
            prev = src[i - 1]
            cur_in = sign * (cur[axis] - bound) >= 0
            prev_in = sign * (prev[axis] - bound) >= 0
            if cur_in != prev_in:
                t = (bound - prev[axis]) / (cur[axis] - prev[axis])
                out.append((prev[0] + t * (cur[0] - prev[0]), prev[1] + t * (cur[1] - prev[1])))
            if cur_in:
                out.append(cur)
        if not out:
            break
    return out


def _pairs(nums):
    return [(nums[i], nums[i + 1]) for i in range(0, len(nums) - 1, 2)]


def _fmt_points(points) -> str:
    return " ".join(f"{_fmt(x)},{_fmt(y)}" for x, y in points)


def _subpaths(d: str):
    """[(points, closed)] of a path made of M, L and Z only; None otherwise."""
    subs: list = []
    cmd, nums = None, []
    for tok in _PATH_TOKEN.findall(d) + ["M"]:
        if not tok.isalpha():
            nums.append(float(tok))
            continue
        if tok not in "MLZ":
            return None
        if cmd == "M" and nums:
            subs.append([_pairs(nums), False])
        elif cmd == "L" and subs:
            subs[-1][0].extend(_pairs(nums))
        if tok == "Z" and subs:
            subs[-1][1] = True
        cmd, nums = tok, []
    return subs


def _bbox(nums):
    xs, ys = nums[0::2], nums[1::2]
    return (min(xs), min(ys), max(xs), max(ys)) if xs and ys else None


def _clip_element(el: ET.Element, rect, filled: bool) -> bool:
    """Cut `el` to `rect` (its own coordinates); False if nothing of it is left."""
    tag = _tag(el)
    if tag in ("polyline", "polygon"):
        pts = _pairs([float(v) for v in re.findall(_NUMBER, el.get("points", ""))])
        if tag == "polygon" and (filled or el.get("fill", "none") != "none"):
            kept = clip_polygon(pts, rect)
            el.set("points", _fmt_points(kept))
            return len(kept) >= 3
        if tag == "polygon" and pts:
            pts = pts + pts[:1]
        pieces = clip_polyline(pts, rect)
        if len(pieces) == 1:
            el.tag = f"{{{SVG_NS}}}polyline"
            el.set("fill", "none")
            el.set("points", _fmt_points(pieces[0]))
        elif pieces:
            el.tag = f"{{{SVG_NS}}}path"
            el.attrib.pop("points", None)
            el.set("fill", "none")
            el.set("d", " ".join("M " + " L ".join(f"{_fmt(x)},{_fmt(y)}" for x, y in piece)
                                 for piece in pieces))
        return bool(pieces)
    if tag == "path":
        subs = _subpaths(el.get("d", ""))
        if subs is None:  # curves: keep unless wholly outside
            box = _bbox([float(v) for v in re.findall(_NUMBER, el.get("d", ""))])
            return box is None or not _disjoint(box, rect)
        parts = []
        fill = filled or el.get("fill", "none") not in ("none",)
        for pts, closed in subs:
            if fill:
                kept = clip_polygon(pts, rect)
                if len(kept) >= 3:
                    parts.append("M " + " L ".join(f"{_fmt(x)},{_fmt(y)}" for x, y in kept)
                                 + " Z")
                continue
            for piece in clip_polyline(pts + (pts[:1] if closed else []), rect):
                parts.append("M " + " L ".join(f"{_fmt(x)},{_fmt(y)}" for x, y in piece))
        el.set("d", " ".join(parts))
        return bool(parts)
    if tag == "rect":
        x, y = float(el.get("x", 0)), float(el.get("y", 0))
        box = (x, y, x + float(el.get("width", 0)), y + float(el.get("height", 0)))
        if _disjoint(box, rect):
            return False
        x0, y0 = max(box[0], rect[0]), max(box[1], rect[1])
        x1, y1 = min(box[2], rect[2]), min(box[3], rect[3])
        for k, v in (("x", x0), ("y", y0), ("width", x1 - x0), ("height", y1 - y0)):
            el.set(k, _fmt(v))
        return True
    if tag in ("image", "text"):  # too costly to cut; dropped only when wholly outside
        if tag == "text":
            return True
        x, y = float(el.get("x", 0)), float(el.get("y", 0))
        box = (x, y, x + float(el.get("width", 0)), y + float(el.get("height", 0)))
        return not _disjoint(box, rect)
    return True


def _disjoint(a, b) -> bool:
    return a[2] < b[0] or b[2] < a[0] or a[3] < b[1] or b[3] < a[1]


# --------------------------------------------------------------------------- walk


class _Context:
    """What a node inherits: the map from its coordinates to the document's, the device
    clip rectangle, whether shapes are filled, and how much the map stretches x and y."""

    def __init__(self, tf=_IDENTITY, clip=None, filled=False):
        self.tf, self.clip, self.filled = tf, clip, filled

    def enter(self, el: ET.Element, clips) -> _Context:
        tf, clip, filled = self.tf, self.clip, self.filled
        m = _Affine.parse(el.get("transform"))
        if m is not None:
            tf = m.then(tf)
        ref = re.match(r"url\(#([^)]+)\)", el.get("clip-path", "") or "")
        if ref:
            rect = clips.get(ref.group(1))
            clip = rect if clip is None or rect is None else (
                max(clip[0], rect[0]), max(clip[1], rect[1]),
                min(clip[2], rect[2]), min(clip[3], rect[3]))
        if el.get("fill") is not None:
            filled = el.get("fill") != "none"
        return _Context(tf, clip, filled)

    def scale(self) -> tuple[float, float]:
        return math.hypot(self.tf.a, self.tf.b), math.hypot(self.tf.c, self.tf.d)


def _walk(el: ET.Element, ctx: _Context, clips) -> None:
    if _tag(el) in ("defs", "clipPath"):
        return
    if _tag(el) == "g":
        _flatten_cosmetic(el)
    ctx = ctx.enter(el, clips)
    if _tag(el) == "image":
        _sharpen_image(el, ctx.scale())
    for kid in list(el):
        kid_ctx = ctx.enter(kid, clips)
        if kid_ctx.clip is not None and _tag(kid) != "g":
            local = kid_ctx.tf.rect_to_local(kid_ctx.clip)
            if local is not None and not _clip_element(kid, local, kid_ctx.filled):
                el.remove(kid)
                continue
        _walk(kid, ctx, clips)


def portable_svg(data: bytes) -> bytes:
    """QSvgGenerator's output, rewritten as described in the module docstring."""
    ET.register_namespace("", SVG_NS)
    ET.register_namespace("xlink", XLINK_NS)
    root = ET.fromstring(data)
    _walk(root, _Context(), _clip_rects(root))
    return b'<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n' + ET.tostring(
        root, encoding="utf-8", xml_declaration=False
    )
