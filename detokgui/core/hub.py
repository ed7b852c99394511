"""Hub models, layer 0 only: resolve `NAME@REVISION` to a commit, read the safetensors
header with an HTTP range request, fetch only the byte ranges of the layer-0 tensors and
keep them as a small local checkpoint folder in detokgui's cache, which the local reading
path (`core.checkpoint`) then loads like any folder.

Built on huggingface_hub's own pieces: `HfApi.model_info` resolves the revision (branch,
tag or commit) to the commit sha and lists the files, `hf_hub_url` and
`get_hf_file_metadata` give each file's address, size and ETag, `get_session` is the HTTP
client (offline mode, proxies, user agent), `build_hf_headers` the token (HF_TOKEN or
`hf auth login`), `hf_raise_for_status` the error classes; `HF_ENDPOINT` is read at each
call.

For a safetensors file of size S whose header is n bytes, with layer-0 tensors t at byte
ranges [8 + n + b_t, 8 + n + e_t), the transfer is

    8 + n + sum over coalesced ranges (e - b)           (gpt2-xl: 0.45 of 6.4 GB)

Cache layout, under `paths.cache_root() / "hub"`:

    owner--name/refs/<revision>                the commit a branch or tag resolved to last
    owner--name/<commit>-<etag>/               config.json, model.safetensors (layer 0 only),
                                               tokenizer files, hub.json (where it came from)

A folder appears whole or not at all (`atomic.atomic_folder`); a killed download leaves a
`.NAME.XXXX.part` folder that a later run ignores and, once stale, removes.
"""

from __future__ import annotations

import errno
import json
import math
import os
import queue
import re
import shutil
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlparse

from detokgui.core.errors import Cancelled, ModelLoadError

Report = Callable[[float, str], None]

#: A revision that is already a full commit sha needs no resolving.
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
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

TOKENIZER_FILES = (
    "tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json",
    "special_tokens_map.json", "added_tokens.json", "spiece.model", "tokenizer.model",
)
_ST_SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
             "I8": 1, "U8": 1, "BOOL": 1}
MANIFEST = "hub.json"


# --------------------------------------------------------------------------- names


def split_revision(name: str) -> tuple[str, str | None]:
    """("owner/name", "rev") for "owner/name@rev"; (name, None) without a revision;
    ("name", "") for "name@" (refused by the loader).

    Only the last "@" separates: a repository name never holds one."""
    name = str(name).strip()
    base, sep, rev = name.rpartition("@")
    if not sep or not base:
        return name, None
    return base.strip(), rev.strip()


def short(commit: str | None) -> str:
    """The first 10 hex digits of a commit, as people quote them."""
    return (commit or "")[:10]


def endpoint() -> str:
    """The hub's address: HF_ENDPOINT when set (read now, not at import)."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def offline_mode() -> bool:
    return (os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE")
            or "").strip().lower() in {"1", "true", "yes", "on"}


def hub_root() -> Path:
    from detokgui.core.paths import cache_root

    return cache_root() / "hub"


def repo_folder(repo: str) -> Path:
    return hub_root() / repo.replace("/", "--")


# --------------------------------------------------------------------------- the cache


@dataclass(frozen=True)
class HubCheckpoint:
    """A layer-0 checkpoint folder in detokgui's cache and where it came from."""

    folder: Path
    repo: str
    commit: str


def cached(repo: str, revision: str | None) -> HubCheckpoint | None:
    """The cached layer-0 folder for `repo` at `revision` (None: the default branch),
    without the network: a commit directly, a branch or tag through the ref it resolved
    to when it was last online. None when there is none."""
    commit = _ref(repo, revision)
    if commit is None:
        return None
    folder = _complete_folder(repo, commit)
    return HubCheckpoint(folder, repo, commit) if folder is not None else None


def clear_cache(repo: str | None = None) -> None:
    """Remove the cached layer-0 folders of `repo`, or of every hub model."""
    shutil.rmtree(repo_folder(repo) if repo else hub_root(), ignore_errors=True)


def _ref(repo: str, revision: str | None) -> str | None:
    if revision and _COMMIT.match(revision):
        return revision
    try:
        text = (repo_folder(repo) / "refs" / _ref_name(revision)).read_text("utf-8").strip()
    except OSError:
        return None
    return text if _COMMIT.match(text) else None


def _ref_name(revision: str | None) -> str:
    return quote(revision or "main", safe="")


def _complete_folder(repo: str, commit: str, etag: str | None = None) -> Path | None:
    """The newest finished folder of `commit` (with `etag`, when given)."""
    base = repo_folder(repo)
    pattern = f"{commit}-{_etag_key(etag)}" if etag else f"{commit}-*"
    found = [p for p in base.glob(pattern) if (p / MANIFEST).is_file()]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def _etag_key(etag: str | None) -> str:
    return re.sub(r"[^0-9A-Za-z]", "", etag or "noetag")[:16] or "noetag"


def _write_ref(repo: str, revision: str | None, commit: str) -> None:
    from detokgui.core.atomic import write_text

    if revision and _COMMIT.match(revision):
        return
    refs = repo_folder(repo) / "refs"
    refs.mkdir(parents=True, exist_ok=True)
    write_text(refs / _ref_name(revision), commit)


# --------------------------------------------------------------------------- entry point


def fetch_layer0(repo: str, revision: str | None, report: Report | None = None,
                 label: str | None = None) -> HubCheckpoint:
    """The layer-0 checkpoint folder of hub model `repo` at `revision` (branch, tag or
    commit; None: the default branch), from detokgui's cache or downloaded into it.

    Online, the revision is resolved to its commit first (a branch moves); offline, or
    when the hub cannot be reached, the cache answers through the last resolution.
    `report(fraction, message)` is called at least every 0.2 s of transfer; an exception
    it raises (Cancelled) stops the download within a second and leaves no finished
    folder. ModelLoadError with a one-line message on every failure."""
    from huggingface_hub import errors as hf_errors

    label = label or (f"{repo}@{revision}" if revision else repo)
    report = report or (lambda f, m: None)
    hit = cached(repo, revision) if revision and _COMMIT.match(revision) else None
    if hit is not None:
        return hit
    if offline_mode():
        return _offline(repo, revision, label, "HF_HUB_OFFLINE is set")
    try:
        info = _model_info(repo, revision, label)
    except _Unreachable as exc:
        return _offline(repo, revision, label, str(exc))
    commit = info.sha
    if not commit or not _COMMIT.match(commit):
        raise ModelLoadError(f"The hub did not say which commit {label} is.")
    files = {s.rfilename for s in (info.siblings or [])}
    try:
        checkpoint = _fetch_commit(repo, commit, files, report, label)
    except hf_errors.HfHubHTTPError as exc:
        raise _http_error(exc, label, revision) from None
    _write_ref(repo, revision, commit)
    return checkpoint


class _Unreachable(Exception):
    pass


def _offline(repo: str, revision: str | None, label: str, why: str) -> HubCheckpoint:
    hit = cached(repo, revision)
    if hit is not None:
        return hit
    raise ModelLoadError(
        f"{label} is not in detokgui's cache and the hub cannot be reached ({why}). Connect "
        "once to download its layer 0 (it is then cached), or open a local checkpoint "
        "folder instead.")


def _model_info(repo: str, revision: str | None, label: str):
    import httpx2
    from huggingface_hub import HfApi
    from huggingface_hub import errors as hf_errors

    try:
        return HfApi(endpoint=endpoint()).model_info(repo, revision=revision,
                                                     timeout=META_TIMEOUT)
    except hf_errors.OfflineModeIsEnabled as exc:
        raise _Unreachable("offline mode") from exc
    except (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.ReadTimeout) as exc:
        raise _Unreachable(f"{type(exc).__name__}: {exc}") from exc
    except httpx2.TransportError as exc:
        raise _Unreachable(f"{type(exc).__name__}: {exc}") from exc
    except hf_errors.HfHubHTTPError as exc:
        raise _http_error(exc, label, revision) from None
    except ValueError as exc:  # HFValidationError: not a repository name
        raise ModelLoadError(
            f"{label!r} is neither an existing folder nor a valid hub model name ({exc})."
        ) from None


def _http_error(exc, label: str, revision: str | None) -> ModelLoadError:
    """The one line a person reads for a hub HTTP error."""
    from huggingface_hub import errors as hf_errors

    status = getattr(getattr(exc, "response", None), "status_code", None)
    login = "log in with `hf auth login` or set HF_TOKEN"
    if isinstance(exc, hf_errors.GatedRepoError):
        return ModelLoadError(f"{label} is gated on the hub: accept its terms on its page and "
                              f"{login}.")
    if isinstance(exc, hf_errors.RevisionNotFoundError):
        return ModelLoadError(f"{label}: the hub has no revision {revision!r} (branch, tag or "
                              "commit) of this model.")
    if isinstance(exc, hf_errors.RepositoryNotFoundError):
        if status == 401:
            return ModelLoadError(f"There is no model {label} on the hub, or it is private or "
                                  f"gated: {login}.")
        return ModelLoadError(f"There is no model named {label} on the Hugging Face hub.")
    if status in (401, 403):
        return ModelLoadError(f"The hub refused access to {label} ({status}): it is private "
                              f"or gated; {login} with a token that may read it.")
    if status == 429:
        return ModelLoadError(f"The hub is limiting requests (429 Too Many Requests) for "
                              f"{label}; wait a minute and try again ({login} for a higher "
                              "limit).")
    if isinstance(exc, hf_errors.RemoteEntryNotFoundError) or status == 404:
        return ModelLoadError(f"{label}: a file of the model is missing on the hub ({status}).")
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return ModelLoadError(f"The hub refused {label}: {first}")


# --------------------------------------------------------------------------- one commit


def _fetch_commit(repo: str, commit: str, files: set[str], report: Report,
                  label: str) -> HubCheckpoint:
    from huggingface_hub import errors as hf_errors

    from detokgui.core.atomic import atomic_folder, sweep_stale_parts

    if "model.safetensors" in files or not files:
        weights = ["model.safetensors"]
    elif "model.safetensors.index.json" in files:
        weights = ["model.safetensors.index.json"]
    elif "pytorch_model.bin" in files:
        weights = ["pytorch_model.bin"]
    else:
        raise ModelLoadError(f"{label} on the hub has no PyTorch weights (model.safetensors, "
                             "model.safetensors.index.json or pytorch_model.bin).")
    client = _Client(repo, commit, label, report)
    meta = client.metadata(weights[0])
    existing = _complete_folder(repo, commit, meta.etag)
    if existing is not None:
        return HubCheckpoint(existing, repo, commit)
    target = repo_folder(repo) / f"{commit}-{_etag_key(meta.etag)}"
    sweep_stale_parts(target.parent)
    try:
        with atomic_folder(target) as tmp:
            client.stage = tmp
            config = client.small("config.json", tmp / "config.json")
            from detokgui.core.families import read_config

            shape = read_config(config, label)  # other architectures are refused first
            if weights[0] == "model.safetensors":
                parts = [client.safetensors_layer0(weights[0], meta, shape)]
            elif weights[0].endswith(".index.json"):
                parts = client.sharded_layer0(weights[0], shape)
            else:
                parts = [client.bin_layer0(weights[0], meta, shape)]
            _write_layer0(tmp / "model.safetensors", parts, label)
            report(PROGRESS_SPAN[1], f"Downloading {label} tokenizer")
            for name in TOKENIZER_FILES:
                if name in files:
                    client.small(name, tmp / name)
            manifest = {"repo": repo, "commit": commit, "etag": meta.etag,
                        "source": weights[0], "bytes_downloaded": client.received,
                        "layer0_tensors": sorted(k for p in parts for k in p.tensors)}
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    except hf_errors.HfHubHTTPError:
        raise  # an OSError too; fetch_layer0 words it
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise ModelLoadError(
                f"The disk is full: {label}'s layer 0 cannot be written to detokgui's cache "
                f"({exc.filename or target}). Free some space, or point DETOKGUI_CACHE_DIR "
                "at another disk.") from None
        raise ModelLoadError(f"{label} cannot be written to detokgui's cache: "
                             f"{exc.strerror or exc}: {exc.filename or target}") from None
    return HubCheckpoint(target, repo, commit)


@dataclass
class _Part:
    """Layer-0 tensors of one weight file: their header entries (offsets into `data`)
    and their bytes, one after another in `data` (a file in the staging folder)."""

    tensors: dict  # stored name -> {"dtype", "shape", "data_offsets"} (offsets into data)
    data: Path


def _write_layer0(path: Path, parts: list[_Part], label: str) -> None:
    """One safetensors file holding every part's tensors (their bytes copied as they are)."""
    header: dict = {"__metadata__": {"format": "pt", "written_by": "detokgui (layer 0 only)"}}
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
                    names: set[str] | None = None) -> dict:
    """{stored name: header entry} of the layer-0 tensors in a safetensors header (those
    of `names` when given, else the family's), each checked: its byte count is
    prod(shape) x the dtype's size."""
    from detokgui.core.families import get as get_family

    if names is None:
        names = set(get_family(shape.family).resolve(header.keys(), shape, label).values())
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


class _Client:
    """Downloads of one commit's files, with one progress meter over all of them."""

    def __init__(self, repo: str, commit: str, label: str, report: Report):
        self.repo, self.commit, self.label, self.report = repo, commit, label, report
        self.endpoint = endpoint()
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
                    f"Downloading {self.label} layer 0: {_mb(self.done)} / {_mb(self.total)} MB, "
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
                           names: set[str] | None = None) -> _Part:
        """The layer-0 tensors of one safetensors file (those of `names`, stored names, when
        given; else found through the family): header by range request, then the
        coalesced ranges; the whole file when the server ignores ranges."""
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
            return self._whole_safetensors(filename, url, size, shape, names)
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
        wanted = _layer0_entries(header, shape, self.label, filename, names)
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
                           names: set[str] | None) -> _Part:
        path = self._whole(filename, url, size)
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = _parse_header(f.read(n), self.label, filename)
        wanted = _layer0_entries(header, shape, self.label, filename, names)
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

    def sharded_layer0(self, index_name: str, shape) -> list[_Part]:
        """The layer-0 tensors of a sharded checkpoint: only the shards that hold them."""
        from detokgui.core.families import get as get_family

        index = self.small(index_name, self.stage / f".{index_name}")
        try:
            weight_map = json.loads(index.read_text("utf-8"))["weight_map"]
            names = get_family(shape.family).resolve(weight_map, shape, self.label)
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

    def bin_layer0(self, filename: str, meta, shape) -> _Part:
        """A .bin checkpoint, downloaded whole; only its layer-0 tensors are kept."""
        import torch
        from safetensors.torch import save_file

        from detokgui.core.checkpoint import _load_bin
        from detokgui.core.families import get as get_family

        path = self._whole(filename, meta.location or self.url(filename), meta.size)
        state = _load_bin(path, self.label)
        names = get_family(shape.family).resolve(state, shape, self.label)
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


__all__ = ["Cancelled", "HubCheckpoint", "cached", "clear_cache", "coalesce", "endpoint",
           "fetch_layer0", "offline_mode", "short", "split_revision"]
