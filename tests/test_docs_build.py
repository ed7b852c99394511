"""The documentation site builds with warnings as errors (`mkdocs build --strict`: a broken
link or anchor between pages, a page left out of the nav, a docstring mkdocstrings cannot
read, a reference to a name that does not exist), and its API reference holds every public
function of `import detokgui as dg` with its docstring and Layer0's methods."""

import html
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from detokgui import api

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                        str(ROOT / "mkdocs.yml"), "--site-dir", str(out)], cwd=ROOT,
                       capture_output=True, text=True, check=False, timeout=300)
    log = r.stdout + r.stderr
    assert r.returncode == 0, log[-4000:]
    assert "WARNING" not in log, log[-4000:]
    return out


def anchors(page: Path) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', page.read_text(encoding="utf-8")))


def test_every_public_function_is_in_the_api_reference(site):
    ids = anchors(site / "api.html")
    missing = [f"detokgui.api.{module}.{name}" for name, module in api.NAMES.items()
               if f"detokgui.api.{module}.{name}" not in ids]
    assert missing == []
    for method in ("from_pretrained", "six_terms", "attention", "sigma_table"):
        assert f"detokgui.core.model.weights.Layer0.{method}" in ids
    assert "detokgui.core.base.errors.InputError" in ids


def test_the_api_reference_shows_the_docstrings(site):
    text = html.unescape(re.sub(r"<[^>]+>", "", (site / "api.html").read_text(encoding="utf-8")))
    text = " ".join(text.split())
    for name in ("topk", "load"):
        doc = getattr(importlib.import_module(f"detokgui.api.{api.NAMES[name]}"), name).__doc__
        words = " ".join(doc.replace("`", "").split()[:12])  # code spans lose their backticks
        assert words in text, name
    assert "import detokgui as dg" in text  # the page's own introduction


def test_every_docs_page_is_built(site):
    pages = sorted(p.relative_to(ROOT / "docs").with_suffix(".html")
                   for p in (ROOT / "docs").rglob("*.md"))
    built = [p for p in pages if (site / ("index.html" if p.name == "README.html" else p)
                                  ).is_file()]
    assert built == pages
