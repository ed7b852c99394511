"""Atomic file writes: every file detokgui writes (exports, caches, the demo model) goes
through here, so that an interrupted or failed write leaves the previous file intact and
no partial or temporary file behind.

The data is written to a temporary file in the target's folder, flushed and synced, and
renamed over the target only when everything succeeded. A target that exists and is not
a regular file (a device such as /dev/null or /dev/full, a FIFO) is written directly:
renaming over it would replace the device; errors are still raised.

A writer killed mid-write (SIGKILL, a power cut) leaves its temporary, `.NAME.XXXX.part`,
behind; `sweep_stale_parts` removes those once they are stale.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

#: A `.part` temporary whose last change is older than this (seconds) belongs to a writer
#: that was killed: a live one writes its file in seconds, and a staging folder (an
#: `export figures` run) gains a file per figure, each within minutes.
STALE_PART_SECONDS = 3600.0


def _is_special(path: Path) -> bool:
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on a clean exit it replaces `path`.

    For writers that take a file name (Qt's image and SVG writers, torch.save). On any
    exception, KeyboardInterrupt included, the temporary file is removed and `path` is
    untouched. The writer must raise on failure; check return codes before leaving."""
    path = Path(path)
    if _is_special(path):
        yield path
        return
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=folder)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if not tmp_path.exists():
            raise OSError(f"nothing was written to {path}")
        with open(tmp_path, "rb+") as f:
            os.fsync(f.fileno())
        _keep_mode(path, tmp_path)
        os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp_path.unlink()
        raise


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", **kwargs) -> Iterator[IO]:
    """`open(path, mode)` whose result appears at `path` only if the block succeeds.

    `mode` is "w" or "wb" (plus open()'s keyword arguments, e.g. newline, encoding)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes whole files: mode 'w' or 'wb', not {mode!r}")
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as f:
        yield f
        f.flush()


def write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_open(path, "wb") as f:
        f.write(data)


def write_text(path: str | Path, text: str, encoding: str = "utf-8") -> None:
    with atomic_open(path, "w", encoding=encoding, newline="") as f:
        f.write(text)


@contextlib.contextmanager
def atomic_folder(path: str | Path) -> Iterator[Path]:
    """Yield a temporary folder beside `path`; on a clean exit it becomes `path`.

    For multi-file outputs (a model folder, a cache entry): readers never see a folder with
    some files missing. `path` must not exist yet (a concurrent writer that won the race
    is kept, and this one's folder discarded)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent))
    try:
        _keep_mode(path, tmp, folder=True)  # mkdtemp makes it 0700
        yield tmp
        try:
            os.rename(tmp, path)
        except OSError:
            if not path.is_dir():
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # someone else finished first
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _keep_mode(target: Path, tmp: Path, folder: bool = False) -> None:
    """Give the new file (folder) the old one's permissions (mkstemp makes files 0600,
    mkdtemp folders 0700), or the process's default for a new one."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = (0o777 if folder else 0o666) & ~umask
    os.chmod(tmp, mode)


def sweep_stale_parts(folder: str | Path, name: str | None = None,
                      max_age: float = STALE_PART_SECONDS) -> list[Path]:
    """Remove the temporaries (`.NAME.XXXX.part` files or folders, as made here) that killed
    writers left in `folder` — only those of target `name` when given — whose last change
    (for a folder, of the folder or anything directly in it) is more than `max_age` seconds
    ago; a live writer's is younger and kept. Returns what was removed; a temporary that
    cannot be removed, or a folder that cannot be read, is left as it is."""
    prefix = f".{name}." if name else "."
    cutoff = time.time() - max_age
    removed = []
    try:
        entries = [e for e in os.scandir(folder)
                   if e.name.startswith(prefix) and e.name.endswith(".part")]
    except OSError:
        return removed
    for entry in entries:
        try:
            if _last_change(entry) >= cutoff:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            continue
        removed.append(Path(entry.path))
    return removed


def _last_change(entry: os.DirEntry) -> float:
    """mtime of a file, or the newest mtime of a folder and its direct contents."""
    newest = entry.stat(follow_symlinks=False).st_mtime
    if entry.is_dir(follow_symlinks=False):
        with os.scandir(entry.path) as inside:
            for e in inside:
                newest = max(newest, e.stat(follow_symlinks=False).st_mtime)
    return newest
