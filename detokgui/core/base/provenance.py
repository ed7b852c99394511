"""Provenance records in exported files: what made a file, carried by the file itself or
beside it, and read back (`detokgui provenance FILE`).

A record is a plain JSON-serialisable dict (`core.model.provenance.provenance_record`
builds it from a layer): detokgui's version, the model (name, family, resolved commit, the
SHA-256 of its layer-0 tensors), the analysis with its conventions and options, the
corpus, the session, the date. It is stored as JSON text

    PNG   a text chunk with the keyword `PNG_KEY` (tEXt, or iTXt when not Latin-1)
    SVG   a <detokgui:provenance> element inside the document's <metadata>
    PDF   the document information dictionary's entry /DetokguiProvenance (`PDF_KEY`)
    CSV   a sidecar NAME.csv.json beside NAME.csv (`sidecar_path`): the CSV itself stays
          plain rows under a header, as pandas.read_csv and spreadsheets read it
    HTML  (the report, `figures.report`) a <script type="application/json"> element with
          the id `HTML_ID` in the page's <head>

so that figures and tables keep saying where they came from after they leave the folder
they were written to. No torch here: every writer (CLI, API, figures, window) and the
reader import this module.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

from detokgui.core.base.atomic import write_bytes, write_text
from detokgui.core.base.errors import InputError

FORMAT = "detokgui-provenance"
VERSION = 1
PNG_KEY = "detokgui-provenance"
PDF_KEY = "DetokguiProvenance"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_TEXT_CHUNKS = (b"tEXt", b"zTXt", b"iTXt")
SVG_NAMESPACE = "https://github.com/detokgui/detokgui/provenance/1"
SIDECAR_SUFFIX = ".json"
#: The id of the HTML report's <script type="application/json"> holding its record.
HTML_ID = "dg-provenance"
#: The file types a record can be read from (a CSV through its sidecar).
READABLE = (".png", ".svg", ".pdf", ".csv", ".json", ".html", ".htm")


def to_json(record: dict, indent: int | None = None) -> str:
    """The record as JSON text: ASCII only (non-ASCII characters escaped), so that it fits
    a PNG tEXt chunk and a PDF string as it is."""
    return json.dumps(record, ensure_ascii=True, indent=indent, sort_keys=False,
                      default=str)


def is_record(value) -> bool:
    return isinstance(value, dict) and value.get("format") == FORMAT


def sidecar_path(path: str | Path) -> Path:
    """The sidecar of a CSV file: NAME.csv -> NAME.csv.json."""
    path = Path(path)
    return path.with_name(path.name + SIDECAR_SUFFIX)


def write_sidecar(csv_path: str | Path, record: dict) -> Path:
    """Write `record` beside `csv_path` as NAME.csv.json (atomically); returns its path."""
    side = sidecar_path(csv_path)
    write_text(side, to_json(record, indent=2) + "\n")
    return side


# --------------------------------------------------------------------------- embedding


def matplotlib_metadata(fmt: str, record: dict | None) -> dict:
    """The entries of matplotlib's `savefig(metadata=...)` that carry `record` in a PNG or
    a PDF ({} for SVG: `svg_with` adds it to the saved document, as matplotlib's SVG
    writer takes Dublin Core keys only; {} without a record)."""
    if record is None:
        return {}
    if fmt == "png":
        return {PNG_KEY: to_json(record)}
    if fmt == "pdf":
        return {PDF_KEY: to_json(record)}
    return {}


def svg_with(svg: bytes, record: dict | None) -> bytes:
    """The SVG document `svg` with `record` as a <detokgui:provenance> element inside its
    <metadata> (made right after the root element's start tag when there is none)."""
    if record is None:
        return svg
    text = to_json(record).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    element = (f'<detokgui:provenance xmlns:detokgui="{SVG_NAMESPACE}">{text}'
               f"</detokgui:provenance>").encode("ascii")
    opening = re.search(rb"<metadata\b[^>]*>", svg)
    if opening is not None:
        return svg[: opening.end()] + element + svg[opening.end():]
    root = re.search(rb"<svg\b[^>]*>", svg)
    if root is None:
        raise ValueError("not an SVG document: no <svg> element")
    return svg[: root.end()] + b"<metadata>" + element + b"</metadata>" + svg[root.end():]


def _png_chunks(png: bytes):
    """(type, data, the whole chunk) of each chunk of a PNG, after its signature."""
    at = 8
    while at + 8 <= len(png):
        n = int.from_bytes(png[at: at + 4], "big")
        yield png[at + 4: at + 8], png[at + 8: at + 8 + n], png[at: at + 12 + n]
        at += 12 + n


def png_with(png: bytes, record: dict) -> bytes:
    """The PNG `png` with `record` in a tEXt chunk (keyword PNG_KEY) before its IEND, in
    place of an earlier record's chunk."""
    if png[:8] != PNG_SIGNATURE:
        raise ValueError("not a PNG file")
    out = [png[:8]]
    for kind, data, chunk in _png_chunks(png):
        if kind in PNG_TEXT_CHUNKS and data.partition(b"\0")[0] == PNG_KEY.encode("latin-1"):
            continue
        if kind == b"IEND":
            body = b"tEXt" + PNG_KEY.encode("latin-1") + b"\0" + to_json(record).encode("latin-1")
            out.append(len(body[4:]).to_bytes(4, "big") + body
                       + zlib.crc32(body).to_bytes(4, "big"))
        out.append(chunk)
    return b"".join(out)


def add_provenance(path: str | Path, record: dict) -> Path:
    """Put `record` into (PNG, SVG) or beside (CSV: the sidecar) the file at `path`, which
    a writer without a record wrote; the file is rewritten atomically. Returns the file
    holding the record. ValueError for other formats (a PDF gets its record as it is
    written: `matplotlib_metadata`)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return write_sidecar(path, record)
    if suffix == ".png":
        write_bytes(path, png_with(path.read_bytes(), record))
        return path
    if suffix == ".svg":
        write_bytes(path, svg_with(path.read_bytes(), record))
        return path
    raise ValueError(f"{path.name}: a record is added afterwards to PNG, SVG and CSV files "
                     "only")


# --------------------------------------------------------------------------- reading


def read_provenance(path: str | Path) -> dict | None:
    """The provenance record of an exported file (by its suffix: PNG, SVG, PDF, a CSV
    through its sidecar, or a sidecar itself), or None when the file carries none.
    InputError when the file cannot be read or is not of its suffix's type."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in READABLE:
        raise InputError(f"{path.name}: not a file detokgui writes provenance into (PNG, "
                         "SVG, PDF, an HTML report, or a CSV with its .csv.json sidecar)")
    if suffix == ".csv":
        side = sidecar_path(path)
        if not path.exists():
            raise InputError(f"{path}: no such file")
        if not side.exists():
            return None
        path, suffix = side, ".json"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    reader = {".png": _png_text, ".svg": _svg_text, ".pdf": _pdf_text, ".json": _json_text,
              ".html": _html_text, ".htm": _html_text}
    text = reader[suffix](data, path)
    if text is None:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        raise InputError(f"{path}: its provenance record is not valid JSON") from None
    if not is_record(record):
        return None
    return record


def _json_text(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 JSON file") from None


def _html_text(data: bytes, path: Path) -> str | None:
    """The text of the report's <script id="HTML_ID"> element, in its <head>."""
    text = data.decode("utf-8", errors="replace")
    head = text[: text.find("</head>")] if "</head>" in text else text
    if "<html" not in head.lower():
        raise InputError(f"{path}: not an HTML page")
    m = re.search(r'<script type="application/json" id="' + HTML_ID + r'">(.*?)</script>',
                  head, re.DOTALL)
    return None if m is None else m[1]


def _png_text(data: bytes, path: Path) -> str | None:
    """The text of the PNG_KEY chunk (tEXt, zTXt or iTXt), read chunk by chunk."""
    if data[:8] != PNG_SIGNATURE:
        raise InputError(f"{path}: not a PNG file")
    for kind, body, _ in _png_chunks(data):
        if kind == b"IEND":
            break
        if kind not in PNG_TEXT_CHUNKS:
            continue
        key, _, rest = body.partition(b"\0")
        if key.decode("latin-1") != PNG_KEY:
            continue
        try:
            if kind == b"tEXt":
                return rest.decode("latin-1")
            if kind == b"zTXt":
                return zlib.decompress(rest[1:]).decode("latin-1")
            compressed, rest = rest[0], rest[2:]
            rest = rest.split(b"\0", 2)[2]  # language tag, translated keyword
            return (zlib.decompress(rest) if compressed else rest).decode("utf-8")
        except (zlib.error, UnicodeDecodeError, IndexError):
            raise InputError(f"{path}: its provenance chunk is damaged") from None
    return None


def _svg_text(data: bytes, path: Path) -> str | None:
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise InputError(f"{path}: not an SVG document ({exc})") from None
    element = root.find(f".//{{{SVG_NAMESPACE}}}provenance")
    return None if element is None else (element.text or "")


_PDF_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f",
                b"(": b"(", b")": b")", b"\\": b"\\"}


def _pdf_text(data: bytes, path: Path) -> str | None:
    """The /DetokguiProvenance string of the document information dictionary (a literal
    string, as matplotlib writes it: uncompressed, escapes \\n \\( \\) \\\\ \\ddd)."""
    if not data.startswith(b"%PDF"):
        raise InputError(f"{path}: not a PDF file")
    found = None
    for match in re.finditer(rb"/" + PDF_KEY.encode() + rb"\s*\(", data):
        found = match  # the last: an incremental update rewrites the dictionary after
    if found is None:
        return None
    out = bytearray()
    depth, at = 1, found.end()
    while at < len(data):
        c = data[at: at + 1]
        if c == b"\\":
            nxt = data[at + 1: at + 2]
            if nxt in _PDF_ESCAPES:
                out += _PDF_ESCAPES[nxt]
                at += 2
            elif nxt.isdigit():
                digits = re.match(rb"[0-7]{1,3}", data[at + 1: at + 4]).group()
                out.append(int(digits, 8) & 0xFF)
                at += 1 + len(digits)
            else:  # a line continuation, or an unknown escape: the character itself
                at += 2 if nxt in (b"\n", b"\r") else 1
            continue
        if c == b"(":
            depth += 1
        elif c == b")":
            depth -= 1
            if depth == 0:
                break
        out += c
        at += 1
    raw = bytes(out)
    if raw.startswith(b"\xfe\xff"):
        return raw[2:].decode("utf-16-be", errors="replace")
    return raw.decode("latin-1")


# --------------------------------------------------------------------------- printing


def describe(record: dict) -> str:
    """The record as lines for a person: the headline facts first, then the whole record
    as indented JSON."""
    model = record.get("model") or {}
    lines = [f"made by detokgui {record.get('detokgui', '?')} on {record.get('created', '?')}"]
    if model:
        commit = model.get("revision")
        lines.append(f"model: {model.get('name', '?')} ({model.get('family', '?')})"
                     + (f", commit {commit}" if commit else ""))
        if model.get("layer0_sha256"):
            lines.append(f"layer-0 tensors SHA-256: {model['layer0_sha256']}")
    for key in ("analysis", "view", "session"):
        if record.get(key):
            lines.append(f"{key}: {record[key]}")
    lines.append(json.dumps(record, ensure_ascii=False, indent=2, default=str))
    return "\n".join(lines)
