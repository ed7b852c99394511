"""`detokgui` entry point: `detokgui export ...`, `detokgui download ...` and `detokgui
provenance FILE` run headless; anything else opens the window. `detokgui --help` (and a
bad option) is answered by the window's parser (`gui.arguments`) before Qt or torch is
imported."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["export"]:
        from detokgui.cli import main as cli_main

        return cli_main(argv[1:])
    if argv[:1] == ["download"]:
        from detokgui.cli.download import main as download_main

        return download_main(argv[1:])
    if argv[:1] == ["provenance"]:
        from detokgui.cli.provenance import main as provenance_main

        return provenance_main(argv[1:])
    from detokgui.gui.arguments import build_parser

    build_parser().parse_args(argv)  # --help, or an unknown option, ends here
    from detokgui.gui.launch import launch

    return launch(argv)
