"""The transfers behind `core.model.sources.hub`: a weight file's layer-0 tensors fetched over HTTP
with range requests (coalesced, sizes checked against the safetensors header), the whole
file when the server ignores ranges or the file is a `.bin`, progress reported while
bytes move, a dropped connection resumed from the bytes received.

For a safetensors file whose header is n bytes, with layer-0 tensors t at byte ranges
[8 + n + b_t, 8 + n + e_t), the bytes moved are

    min(FIRST_REQUEST, S) + sum over coalesced ranges (e - b)

and they are written, tensor after tensor, into one layer-0-only safetensors file.
"""

from __future__ import annotations

import json
import math
import queue
import re
import shutil
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from detokgui.core.base.errors import ModelLoadError

Report = Callable[[float, str], None]

#: Bytes asked for by the first request: the 8-byte length and, almost always, the whole
#: header (gpt2's is 15 kB, a 48-layer model's about 40 kB).
FIRST_REQUEST = 1 << 17
#: Two layer-0 ranges closer than this are fetched as one request.
COALESCE_GAP = 1 << 20
#: Bytes per read from the socket, and the longest wait for any (the reader thread's).
CHUNK = 1 << 16
#: Seconds between progress reports while bytes are moving (and while they are not).
REPORT_EVERY = 0.1
#: Seconds to wait for the hub's metadata (revision, file sizes) before calling it unreachable.
META_TIMEOUT = 10.0
#: Seconds without a byte before a download connection counts as dropped.
READ_TIMEOUT = 30.0
#: Retries of a dropped range, each resuming from the bytes already received.
RETRIES = 3
#: The share of the loading progress bar the download takes (Layer0.from_pretrained).
PROGRESS_SPAN = (0.02, 0.28)

_ST_SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
             "I8": 1, "U8": 1, "BOOL": 1}


@dataclass
class _Part:
    """Layer-0 tensors of one weight file: their header entries (offsets into `data`)
    and their bytes, one after another in `data` (a file in the staging folder)."""

    tensors: dict  # stored name -> {"dtype", "shape", "data_offsets"} (offsets into data)
    data: Path


def _family(name: str):
    """The adapter of model family `name` (`core.model.families.get`), imported on first
    use."""
    from detokgui.core.model.families import get  # torch: the CLI's parser imports this module

    return get(name)


def _names(available, shape, label: str, block: int | None) -> dict[str, str]:
    """{unprefixed: stored name} of layer 0's tensors, or block `block`'s, among
    `available` (`Family.resolve`, `Family.resolve_block`)."""
    family = _family(shape.family)
    if block is None:
        return family.resolve(available, shape, label)
    return family.resolve_block(available, shape, block, label)


def write_layer0(path: Path, parts: list[_Part], label: str,
                 written_by: str = "detokgui (layer 0 only)") -> None:
    """One safetensors file holding every part's tensors (their bytes copied as they are)."""
    header: dict = {"__metadata__": {"format": "pt", "written_by": written_by}}
    order = []
    offset = 0
    for part in parts:
        for key, info in sorted(part.tensors.items(), key=lambda kv: kv[1]["data_offsets"][0]):
            b, e = info["data_offsets"]
            header[key] = {"dtype": info["dtype"], "shape": info["shape"],
                           "data_offsets": [offset, offset + (e - b)]}
            order.append((part.data, b, e))
            offset += e - b
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(raw)))
        out.write(raw)
        for data, b, e in order:
            with open(data, "rb") as f:
                f.seek(b)
                left = e - b
                while left:
                    buf = f.read(min(left, 1 << 22))
                    if not buf:
                        raise ModelLoadError(f"{label}: a downloaded tensor is incomplete.")
                    out.write(buf)
                    left -= len(buf)
    for part in parts:
        part.data.unlink(missing_ok=True)


def _layer0_entries(header: dict, shape, label: str, file: str,
                    names: set[str] | None = None, block: int | None = None) -> dict:
    """{stored name: header entry} of the layer-0 tensors in a safetensors header (those
    of `names` when given, else the family's; block `block`'s when given), each checked:
    its byte count is prod(shape) x the dtype's size."""
    if names is None:
        names = set(_names(header.keys(), shape, label, block).values())
    out = {}
    for stored in sorted(names):
        info = header.get(stored)
        if info is None:
            continue
        try:
            b, e = (int(x) for x in info["data_offsets"])
            size = math.prod(int(s) for s in info["shape"]) * _ST_SIZES[info["dtype"]]
        except (KeyError, TypeError, ValueError):
            raise ModelLoadError(f"{label}: {file} has a bad or unsupported header entry for "
                                 f"{stored}.") from None
        if e - b != size or b < 0:
            raise ModelLoadError(f"{label}: {file}'s header gives {stored} {e - b} bytes; its "
                                 f"shape needs {size}. The file is corrupt.")
        out[stored] = {"dtype": info["dtype"], "shape": info["shape"], "data_offsets": [b, e]}
    return out


def coalesce(spans: list[tuple[int, int]], gap: int = COALESCE_GAP) -> list[tuple[int, int]]:
    """Sorted [begin, end) byte spans, merged where less than `gap` bytes lie between."""
    merged: list[list[int]] = []
    for b, e in sorted(spans):
        if merged and b - merged[-1][1] < gap:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([b, e])
    return [(b, e) for b, e in merged]


# --------------------------------------------------------------------------- HTTP


class _RangeIgnored(Exception):
    """The server answered a range request with the whole file (200)."""


class _Dropped(Exception):
    """The connection ended before the bytes asked for arrived."""


class Client:
    """Downloads of one commit's files, with one progress meter over all of them."""

    def __init__(self, repo: str, commit: str, label: str, report: Report, endpoint: str,
                 what: str = "layer 0"):
        self.repo, self.commit, self.label, self.report = repo, commit, label, report
        self.endpoint = endpoint
        self.what = what  # what is downloading, for the progress line ("block 1")
        self.stage: Path | None = None
        self.received = 0  # bytes of body received, all files
        self.total = 0  # bytes this download expects (for the progress fraction)
        self.done = 0
        self.sized = False  # total known (the header read): the fraction can move
        self.started = time.monotonic()
        self.last_report = 0.0

    # ------------------------------------------------------------ addresses

    def url(self, filename: str) -> str:
        from huggingface_hub import hf_hub_url

        return hf_hub_url(self.repo, filename, revision=self.commit, endpoint=self.endpoint)

    def headers(self, url: str) -> dict:
        """The hub's headers (user agent; the token only for the hub's own address, never
        for the storage a file redirects to)."""
        from huggingface_hub.utils import build_hf_headers

        same = _origin(url) == _origin(self.endpoint)
        h = build_hf_headers(token=None if same else False)
        h["Accept-Encoding"] = "identity"
        return h

    def metadata(self, filename: str):
        import httpx2
        from huggingface_hub import get_hf_file_metadata

        try:
            return get_hf_file_metadata(self.url(filename), timeout=META_TIMEOUT,
                                        endpoint=self.endpoint)
        except httpx2.TransportError as exc:
            raise ModelLoadError(f"The hub stopped answering while {self.label} was opened "
                                 f"({type(exc).__name__}); try again.") from None

    # ------------------------------------------------------------ progress

    def tick(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last_report < REPORT_EVERY:
            return
        self.last_report = now
        lo, hi = PROGRESS_SPAN
        frac = self.done / self.total if self.total and self.sized else 0.0
        speed = self.done / max(now - self.started, 1e-3)
        self.report(lo + (hi - lo) * min(frac, 1.0),
                    f"Downloading {self.label} {self.what}: {_mb(self.done)} / {_mb(self.total)} MB, "
                    f"{_mb(speed)} MB/s")

    # ------------------------------------------------------------ transfers

    def small(self, filename: str, dest: Path) -> Path:
        """A whole small file (config, tokenizer, index) to `dest`."""
        with open(dest, "wb") as f:
            self.get(self.url(filename), f, None, count=False)
        return dest

    def get(self, url: str, out, span: tuple[int, int] | None, count: bool = True) -> None:
        """The bytes [begin, end) of `url` (the whole body when `span` is None) written to
        `out` from its current position. A connection dropped after some bytes is resumed
        with a Range from where it stopped, up to RETRIES times without progress.
        _RangeIgnored when the server sends the whole file for a range."""
        begin, end = span if span else (0, None)
        pos = begin
        tries = 0
        while True:
            try:
                pos = self._stream(url, out, pos, end, ranged=span is not None or pos > 0,
                                   count=count)
                return
            except _RangeIgnored:
                if span is not None and begin == 0 and pos == 0:
                    raise  # the first request of a file: the caller takes it whole
                raise ModelLoadError(
                    f"The hub stopped honouring range requests while {self.label} was "
                    "downloading; nothing was kept — try again.") from None
            except _Dropped as exc:
                moved, pos = exc.args[0] > pos, exc.args[0]
                tries = 0 if moved else tries + 1
                if tries >= RETRIES or end is None and not exc.args[1]:
                    where = f"{_mb(pos - begin)} of {_mb((end or pos) - begin)} MB"
                    raise ModelLoadError(
                        f"The connection to the hub dropped while {self.label} was "
                        f"downloading ({where}); nothing was kept — try again.") from None

    def _stream(self, url: str, out, pos: int, end: int | None, ranged: bool,
                count: bool) -> int:
        """One GET from byte `pos`; returns the position reached (= end). The socket is
        read on a helper thread so that `report` runs every REPORT_EVERY seconds even
        while no byte arrives, and Cancel returns at once."""
        import httpx2
        from huggingface_hub.utils import get_session, hf_raise_for_status

        headers = self.headers(url)
        if ranged:
            headers["Range"] = f"bytes={pos}-" + ("" if end is None else f"{end - 1}")
        q: queue.Queue = queue.Queue(maxsize=64)
        stop = threading.Event()

        def put(item) -> bool:
            while not stop.is_set():
                try:
                    q.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        def pump() -> None:
            try:
                timeout = httpx2.Timeout(READ_TIMEOUT, connect=META_TIMEOUT)
                with get_session().stream("GET", url, headers=headers, timeout=timeout,
                                          follow_redirects=True) as r:
                    if r.status_code >= 400:
                        r.read()
                        hf_raise_for_status(r)
                    if not put(("head", r)):
                        return
                    for chunk in r.iter_raw(CHUNK):
                        if stop.is_set() or not put(("data", chunk)):
                            return
                put(("end", None))
            except BaseException as exc:  # noqa: BLE001  (handed to the caller's thread)
                put(("error", exc))

        threading.Thread(target=pump, daemon=True, name="detokgui-download").start()
        resumable = True
        try:
            while True:
                try:
                    kind, val = q.get(timeout=REPORT_EVERY)
                except queue.Empty:
                    self.tick()
                    continue
                if kind == "head":
                    if ranged and val.status_code == 200:
                        raise _RangeIgnored()
                    if ranged and val.status_code == 206:
                        got = _content_range_start(val.headers.get("Content-Range"))
                        if got != pos:
                            raise ModelLoadError(f"The hub sent bytes from {got} of {url} when "
                                                 f"{pos} were asked for.")
                    resumable = ranged or "bytes" in val.headers.get("Accept-Ranges", "")
                elif kind == "data":
                    if end is not None and pos + len(val) > end:
                        val = val[: end - pos]
                    out.write(val)
                    pos += len(val)
                    self.received += len(val)
                    if count:
                        self.done += len(val)
                    self.tick()
                    if end is not None and pos >= end:
                        return pos
                elif kind == "end":
                    if end is not None and pos < end:
                        raise _Dropped(pos, resumable)
                    return pos
                else:
                    if isinstance(val, (httpx2.TransportError, httpx2.StreamError)):
                        raise _Dropped(pos, resumable)
                    raise val
        finally:
            stop.set()

    # ------------------------------------------------------------ weight files

    def safetensors_layer0(self, filename: str, meta, shape,
                           names: set[str] | None = None, block: int | None = None) -> _Part:
        """The layer-0 tensors of one safetensors file (those of `names`, stored names, when
        given; else found through the family; block `block`'s instead of layer 0's when
        given): header by range request, then the coalesced ranges; the whole file when
        the server ignores ranges."""
        url = meta.location or self.url(filename)
        size = meta.size
        first = min(FIRST_REQUEST, size) if size else FIRST_REQUEST
        self.total += first
        head_path = self.stage / f".{filename}.head"
        try:
            with open(head_path, "wb") as f:
                self.get(url, f, (0, first))
        except _RangeIgnored:
            head_path.unlink(missing_ok=True)
            return self._whole_safetensors(filename, url, size, shape, names, block)
        raw = head_path.read_bytes()
        head_path.unlink()
        (n,) = struct.unpack("<Q", raw[:8])
        if n < 2 or (size and 8 + n > size):
            raise ModelLoadError(f"{self.label}: {filename} on the hub is not a safetensors file "
                                 "(its header length is impossible).")
        if 8 + n > len(raw):
            buf = _Buffer()
            self.total += 8 + n - len(raw)
            self.get(url, buf, (len(raw), 8 + n))
            raw += bytes(buf.data)
        header = _parse_header(raw[8 : 8 + n], self.label, filename)
        wanted = _layer0_entries(header, shape, self.label, filename, names, block)
        data_start = 8 + n
        spans = [(data_start + i["data_offsets"][0], data_start + i["data_offsets"][1])
                 for i in wanted.values()]
        if size and any(e > size for _, e in spans):
            raise ModelLoadError(f"{self.label}: {filename}'s header points past its end "
                                 f"({size} bytes); the file on the hub is corrupt.")
        ranges = coalesce(spans)
        self.total += sum(e - b for b, e in ranges)
        self.sized = True
        self.tick(force=True)
        data = self.stage / f".{filename}.layer0"
        placed: dict = {}
        with open(data, "wb") as f:
            for b, e in ranges:
                at = f.tell()
                self.get(url, f, (b, e))
                if f.tell() - at != e - b:
                    raise ModelLoadError(f"{self.label}: {filename} sent {f.tell() - at} bytes "
                                         f"for a range of {e - b}.")
                for key, info in wanted.items():
                    tb, te = (data_start + o for o in info["data_offsets"])
                    if b <= tb and te <= e:
                        placed[key] = {**info, "data_offsets": [at + tb - b, at + te - b]}
        return _Part(placed, data)

    def _whole(self, filename: str, url: str, size: int | None) -> Path:
        """The whole file, streamed into the staging folder (the server ignores ranges, or
        a .bin, which is a pickle and must be read whole)."""
        self.total += size or 0
        self.sized = bool(size)
        path = self.stage / f".{filename}.whole"
        with open(path, "wb") as f:
            self.get(url, f, None)
        if size and path.stat().st_size != size:
            raise ModelLoadError(f"{self.label}: {filename} arrived with "
                                 f"{path.stat().st_size} of its {size} bytes; try again.")
        return path

    def _whole_safetensors(self, filename: str, url: str, size: int | None, shape,
                           names: set[str] | None, block: int | None = None) -> _Part:
        path = self._whole(filename, url, size)
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = _parse_header(f.read(n), self.label, filename)
        wanted = _layer0_entries(header, shape, self.label, filename, names, block)
        data = self.stage / f".{filename}.layer0"
        placed = {}
        with open(path, "rb") as src, open(data, "wb") as out:
            for key, info in sorted(wanted.items(), key=lambda kv: kv[1]["data_offsets"][0]):
                b, e = info["data_offsets"]
                src.seek(8 + n + b)
                at = out.tell()
                out.write(src.read(e - b))
                placed[key] = {**info, "data_offsets": [at, at + e - b]}
        path.unlink()
        return _Part(placed, data)

    def sharded_layer0(self, index_name: str, shape, block: int | None = None) -> list[_Part]:
        """The layer-0 tensors of a sharded checkpoint (block `block`'s when given): only
        the shards that hold them."""

        index = self.small(index_name, self.stage / f".{index_name}")
        try:
            weight_map = json.loads(index.read_text("utf-8"))["weight_map"]
            names = _names(weight_map, shape, self.label, block)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelLoadError(f"{self.label}: {index_name} cannot be read ({exc}).") from None
        index.unlink()
        shards: list[str] = []
        for stored in names.values():
            shard = weight_map.get(stored)
            if shard is not None and shard not in shards:
                shards.append(shard)
        wanted = set(names.values())
        return [self.safetensors_layer0(s, self.metadata(s), shape, wanted) for s in shards]

    def bin_layer0(self, filename: str, meta, shape, block: int | None = None) -> _Part:
        """A .bin checkpoint, downloaded whole; only its layer-0 tensors (block `block`'s
        when given) are kept."""
        import torch
        from safetensors.torch import save_file

        from detokgui.core.model.sources.checkpoint_files import load_bin  # torch, see _family

        path = self._whole(filename, meta.location or self.url(filename), meta.size)
        state = load_bin(path, self.label)
        names = _names(state, shape, self.label, block)
        keep = {v: state[v].contiguous().clone() for v in names.values()
                if isinstance(state.get(v), torch.Tensor)}
        del state
        path.unlink()
        tmp = self.stage / f".{filename}.layer0.safetensors"
        save_file(keep, str(tmp))
        with open(tmp, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
        header.pop("__metadata__", None)
        data = self.stage / f".{filename}.layer0"
        with open(tmp, "rb") as src, open(data, "wb") as out:
            src.seek(8 + n)
            shutil.copyfileobj(src, out)
        tmp.unlink()
        return _Part(header, data)


class _Buffer:
    def __init__(self):
        self.data = bytearray()

    def write(self, b: bytes) -> None:
        self.data += b


def _parse_header(raw: bytes, label: str, filename: str) -> dict:
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ModelLoadError(f"{label}: {filename}'s header is not valid JSON; the file on "
                             "the hub is not a safetensors file.") from None
    if not isinstance(header, dict):
        raise ModelLoadError(f"{label}: {filename}'s header is not a table of tensors.")
    header.pop("__metadata__", None)
    return header


def _content_range_start(value: str | None) -> int | None:
    m = re.match(r"\s*bytes\s+(\d+)-\d+/", value or "")
    return int(m.group(1)) if m else None


def _origin(url: str) -> tuple:
    u = urlparse(url)
    return (u.scheme, (u.hostname or "").lower(), u.port or {"http": 80, "https": 443}.get(u.scheme))


def _mb(n: float) -> str:
    return f"{n / 1e6:.0f}" if n >= 10e6 else f"{n / 1e6:.1f}"
