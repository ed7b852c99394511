"""Where detokgui keeps files of its own: the user cache (corpus counts, whole-vocabulary
statistics, the random demo model).

`DETOKGUI_CACHE_DIR` overrides the location (tests point it at a temporary folder);
otherwise `$XDG_CACHE_HOME/detokgui`, else `~/.cache/detokgui` (`%LOCALAPPDATA%\\detokgui`
on Windows)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The cache folder (not created)."""
    base = os.environ.get("DETOKGUI_CACHE_DIR")
    if base:
        return Path(base)
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "detokgui"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "detokgui"


def cache_dir(*parts: str) -> Path:
    """The cache folder, or a sub-folder of it (created if missing)."""
    folder = Path(cache_root(), *parts)
    folder.mkdir(parents=True, exist_ok=True)
    return folder
