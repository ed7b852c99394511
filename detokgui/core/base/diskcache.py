"""One entry of detokgui's on-disk cache (corpus counts, bigram AUROC, head statistics):
`cache_dir(folder)/KEY.npz`, the named arrays of a result plus `meta`, a JSON record of
the format and key it was written for (and whatever the owner adds).

Reading (`Entry.load`) checks everything before anything is used: the file is a readable
zip whose members pass their CRC-32, it holds every expected array with its dtype kind
and shape, `meta` names the same format and key, and the owner's `build` accepts the
arrays. An entry that fails any check — truncated, empty, flipped bytes, another
version's layout, a file copied from another key — is deleted, one line on the
`detokgui.cache` logger says so, and `load` returns None: the owner computes it again.

Writing (`Entry.save`) is atomic (core.base.atomic), after removing the stale `.part` files of
killed writers from the folder. When the cache cannot be used — a read-only folder, a
file where the folder should be, a full disk — the result still counts: one line names
the file or folder that failed and says detokgui runs without the cache (once, until a
write succeeds again).

The CLI prints the logger's lines on stderr, the GUI shows them in its status bar.
"""

from __future__ import annotations

import io
import json
import logging
import os
import threading
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from detokgui.core.base.atomic import atomic_open, sweep_stale_parts
from detokgui.core.base.paths import cache_dir, cache_root

log = logging.getLogger("detokgui.cache")
T = TypeVar("T")
Shape = tuple[int | None, ...]  # None: any length
META = "meta"
COMPRESS_LEVEL = 3  # deflate level of compressed entries: most of level 6's gain, ~3x faster


class Damaged(ValueError):
    """A cache entry that fails a check; the message says which."""


@dataclass(frozen=True)
class Entry:
    """The cache entry `key` (a hex digest of everything the result depends on) in the
    cache's sub-folder `folder`, holding `arrays`: name -> (shape, accepted dtype kinds
    such as "i" or "f")."""

    folder: str
    key: str
    format: str
    arrays: Mapping[str, tuple[Shape, str]]

    def load(self, build: Callable[[dict[str, np.ndarray], dict], T]) -> T | None:
        """`build(arrays, meta)` of the stored entry, or None when there is none or it was
        damaged (then discarded). `build` raises ValueError (or KeyError, TypeError from
        meta look-ups) when the arrays are inconsistent."""
        path = _path(self.folder, self.key)
        if path is None:
            return None
        try:
            seen = os.stat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            _discard(path, None, _one_line(exc))
            return None
        try:
            arrays, meta = _read(path, self.arrays)
            self._check(arrays, meta)
            return build(arrays, meta)
        except (Damaged, KeyError, TypeError, ValueError) as exc:
            _discard(path, seen, _one_line(exc))
            return None

    def save(self, arrays: Mapping[str, np.ndarray], **meta) -> None:
        """Store `arrays` (and `meta`, JSON values); on an unusable cache, warn and go on."""
        self.write(self.encode(arrays, **meta))

    def encode(self, arrays: Mapping[str, np.ndarray], compressed: bool = False,
               **meta) -> bytes:
        """The bytes of the entry file `save` writes (deflated at level COMPRESS_LEVEL with
        `compressed`): a worker process can make them where the cache folder is out of
        its reach."""
        record = json.dumps({"format": self.format, "key": self.key, **meta})
        if not compressed:
            buf = io.BytesIO()
            np.savez(buf, **arrays, **{META: np.array(record)})
            return buf.getvalue()
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED,
                             compresslevel=COMPRESS_LEVEL) as z:
            for name, a in {**arrays, META: np.array(record)}.items():
                with z.open(f"{name}.npy", "w", force_zip64=True) as f:
                    np.lib.format.write_array(f, np.asanyarray(a), allow_pickle=False)
        return buf.getvalue()

    def decode(self, data: bytes, build: Callable[[dict[str, np.ndarray], dict], T]) -> T:
        """`build(arrays, meta)` of entry bytes made by `encode`, checked as `load` checks
        a file; Damaged (a ValueError) when they fail a check."""
        arrays, meta = _read(io.BytesIO(data), self.arrays)
        self._check(arrays, meta)
        try:
            return build(arrays, meta)
        except (KeyError, TypeError, ValueError) as exc:
            raise Damaged(_one_line(exc)) from None

    def write(self, data: bytes) -> None:
        """Store entry bytes made by `encode`; on an unusable cache, warn and go on."""
        path = _path(self.folder, self.key)
        if path is None:
            return
        try:
            sweep_stale_parts(path.parent)
            with atomic_open(path, "wb") as f:
                f.write(data)
        except OSError as exc:
            _without_cache(f"could not write the cache file {path}", exc)
        else:
            with _lock:
                _warned.discard(str(cache_root()))

    def arrays_of(self, result) -> dict[str, np.ndarray]:
        """The entry's arrays taken from the attributes of the same names of `result`."""
        return {name: getattr(result, name) for name in self.arrays}

    def _check(self, arrays: dict[str, np.ndarray], meta) -> None:
        if not isinstance(meta, dict) or meta.get("format") != self.format:
            raise Damaged("written by another version of detokgui")
        if meta.get("key") != self.key:
            raise Damaged("it holds another entry")
        for name, (shape, kinds) in self.arrays.items():
            a = arrays.get(name)
            if a is None:
                raise Damaged(f"no array {name!r}")
            if (a.dtype.kind not in kinds or a.ndim != len(shape)
                    or any(n is not None and n != m for n, m in zip(shape, a.shape))):
                want = ", ".join("*" if n is None else str(n) for n in shape)
                raise Damaged(f"{name!r} is {a.dtype} [{', '.join(map(str, a.shape))}], "
                              f"expected [{want}]")


def _read(path, names) -> tuple[dict[str, np.ndarray], object]:
    """The arrays `names` that the file holds, and its decoded meta (None if it has none).
    Reading a member to its end checks its CRC-32."""
    try:
        with np.load(path, allow_pickle=False) as z:
            held = set(z.files)
            arrays = {n: z[n] for n in names if n in held}
            meta = json.loads(str(z[META])) if META in held else None
    except Exception as exc:  # noqa: BLE001 - a damaged zip fails in many ways
        raise Damaged(f"unreadable: {_one_line(exc)}") from None
    return arrays, meta


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"


def _path(folder: str, key: str) -> Path | None:
    """The entry's file, or None (after the warning) when the folder cannot be made."""
    try:
        return cache_dir(folder) / f"{key}.npz"
    except OSError as exc:
        where = exc.filename or cache_root() / folder
        _without_cache(f"cannot use the cache folder {where}", exc)
        return None


def _discard(path: Path, seen: os.stat_result | None, reason: str) -> None:
    """Delete the damaged entry (unless another writer replaced it meanwhile) and say so."""
    try:
        now = os.stat(path)
        if seen is None or (now.st_ino, now.st_mtime_ns) == (seen.st_ino, seen.st_mtime_ns):
            path.unlink()
    except OSError:
        pass  # the next save replaces it, or reports why it cannot
    log.warning(f"discarded the damaged cache file {path} ({reason}); computing it again")


_warned: set[str] = set()  # cache folders whose failure was reported since their last write
_lock = threading.Lock()


def _without_cache(what: str, exc: OSError) -> None:
    root = str(cache_root())
    with _lock:
        if root in _warned:
            return
        _warned.add(root)
    log.warning(f"{what} ({exc.strerror or _one_line(exc)}); running without the cache")
