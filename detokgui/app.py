"""`detokgui` entry point: `detokgui export ...` runs headless; anything else opens the window."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["export"]:
        from detokgui.cli import main as cli_main

        return cli_main(argv[1:])
    from detokgui.gui.launch import launch

    return launch(argv)
