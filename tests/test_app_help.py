"""`detokgui --help` answers from the window's parser (`gui.arguments`) without importing
Qt or torch (issue 40: it took seconds through the window's launcher), lists the window's
options and the commands `export` and `download`; the parser's --view names are the
panels' own."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("PySide6", "torch", "transformers", "pyqtgraph", "matplotlib")

RUN = """
import sys
from detokgui.app import main
try:
    main({argv!r})
except SystemExit as e:
    code = e.code
else:
    code = None
print("exit:", code)
print("loaded:", sorted({{m.split(".")[0] for m in sys.modules}} & set({heavy!r})))
"""


def run_main(*argv: str) -> tuple[str, str]:
    r = subprocess.run([sys.executable, "-c", RUN.format(argv=list(argv), heavy=HEAVY)],
                       capture_output=True, text=True, timeout=60, check=True)
    return r.stdout, r.stderr


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_loads_neither_qt_nor_torch(flag):
    out, _ = run_main(flag)
    assert out.splitlines()[-2:] == ["exit: 0", "loaded: []"]
    text = " ".join(out.split())
    for option in ("--model", "--compare", "--device", "--corpus", "--text-file",
                   "--screenshot", "--view", "--timeout"):
        assert option in text, option
    assert "detokgui export write data" in text
    assert "detokgui download write a hub model's layer 0" in text


def test_a_bad_option_is_refused_before_qt_loads():
    out, err = run_main("--device", "tpu")
    assert out.splitlines()[-2:] == ["exit: 2", "loaded: []"]
    assert "invalid choice: 'tpu'" in err


def test_the_real_command():
    r = subprocess.run([sys.executable, "-m", "detokgui", "--help"], capture_output=True,
                       text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: detokgui ")
    assert "export" in r.stdout and "download" in r.stdout


@pytest.mark.gui  # the panels' own names: imports Qt
def test_view_names_are_the_panels():
    from detokgui.gui.arguments import VIEW_NAMES
    from detokgui.gui.launch import view_names

    assert list(VIEW_NAMES) == view_names()
