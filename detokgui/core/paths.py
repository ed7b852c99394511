"""Where detokgui keeps files of its own: the user cache (corpus counts, whole-vocabulary
statistics, the random demo model).

`DETOKGUI_CACHE_DIR` overrides the location (tests point it at a temporary folder);
otherwise `$XDG_CACHE_HOME/detokgui`, else `~/.cache/detokgui` (`%LOCALAPPDATA%\\detokgui`
on Windows)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """The cache folder, or a sub-folder of it (created if missing)."""
    base = os.environ.get("DETOKGUI_CACHE_DIR")
    if not base:
        if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
            base = str(Path(os.environ["LOCALAPPDATA"]) / "detokgui")
        else:
            xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
            base = str(Path(xdg) / "detokgui")
    folder = Path(base, *parts)
    folder.mkdir(parents=True, exist_ok=True)
    return folder
