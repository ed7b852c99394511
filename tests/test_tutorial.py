"""docs/tutorial.ipynb: committed without outputs, and executed top to bottom by a fresh
Jupyter kernel (nbclient), offline, with its settings and caches in a temp folder.

The kernel is a subprocess: it gets the isolated environment of the other subprocess
tests (`conftest.isolated_environment`: HOME, XDG_*, DETOKGUI_CACHE_DIR under tmp_path,
HF_HUB_OFFLINE=1) and a fresh, empty detokgui cache, so it computes every pass as CI
does (about 2 minutes on 2 shared cores, most of it the bigram AUROC pass).

Code cells tagged "table" must show a DataFrame (an HTML table), cells tagged "figure"
a PNG image: the notebook's results, not only its lack of errors."""

from __future__ import annotations

import base64
import os
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from conftest import isolated_environment
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "tutorial.ipynb"
#: seconds for one cell (the AUROC pass is the longest) and for the whole run
CELL_TIMEOUT = 420
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: a markdown link or image target: ](target)
LINK = re.compile(r"\]\(\s*([^)\s]+)\s*\)")


def _tagged(nb, tag: str) -> list:
    return [c for c in nb.cells
            if c.cell_type == "code" and tag in c.get("metadata", {}).get("tags", [])]


def _results(cell) -> list[dict]:
    """The rich outputs of a cell (its value and displays), as mime bundles."""
    return [o["data"] for o in cell.outputs if o.output_type in ("execute_result",
                                                                  "display_data")]


def test_committed_tutorial_has_no_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "the tutorial has no code cells"
    dirty = [c.id for c in code if c.outputs or c.execution_count is not None]
    assert not dirty, (f"cells committed with outputs or execution counts: {dirty}; clear "
                       "them (Jupyter: Edit > Clear Outputs of All Cells) before committing")
    assert "widgets" not in nb.metadata, "widget state committed in the notebook metadata"
    assert _tagged(nb, "table") and _tagged(nb, "figure")


def test_tutorial_links_reach_files():
    """Links and images in the prose (relative to docs/, as Jupyter and GitHub read them)
    name files of the repository."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    targets = [t for c in nb.cells if c.cell_type == "markdown"
               for t in LINK.findall(c.source) if "://" not in t]
    assert targets
    missing = [t for t in targets if not (NOTEBOOK.parent / t.split("#")[0]).is_file()]
    assert not missing, f"links to missing files: {missing}"


@pytest.mark.timeout(CELL_TIMEOUT + 180)
def test_tutorial_runs_top_to_bottom_offline(tmp_path):
    work = tmp_path / "run"
    work.mkdir()
    shutil.copy(NOTEBOOK, work / NOTEBOOK.name)
    env = isolated_environment(tmp_path / "env")
    # the kernel imports this checkout's detokgui, whatever is installed
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    cache = Path(env["DETOKGUI_CACHE_DIR"])
    assert not any(cache.iterdir()), "the kernel must start with an empty detokgui cache"

    nb = nbformat.read(work / NOTEBOOK.name, as_version=4)
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                            resources={"metadata": {"path": str(work)}})
    client.execute(env=env)  # raises CellExecutionError, naming the cell, on any error

    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), "a cell did not run"
    errors = [c.id for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, f"cells with an error output: {errors}"

    for cell in _tagged(nb, "table"):
        html = [d["text/html"] for d in _results(cell) if "text/html" in d]
        assert html and "<table" in html[-1], f"{cell.id} shows no DataFrame:\n{cell.source}"
    figures = _tagged(nb, "figure")
    assert len(figures) >= 4, "one figure per result: Table 1, Fig 2-D, Fig 3, Fig 4"
    for cell in figures:
        pngs = [base64.b64decode(d["image/png"]) for d in _results(cell) if "image/png" in d]
        assert pngs and pngs[-1].startswith(PNG_SIGNATURE), \
            f"{cell.id} shows no image:\n{cell.source}"
        assert len(pngs[-1]) > 5000, f"{cell.id}: the image is nearly empty"

    # the corpus passes ran here and were cached in the isolated folder
    assert any(cache.rglob("*")), "the notebook's corpus passes wrote nothing to its cache"
    text = "\n".join(d.get("text/plain", "") for c in code for d in _results(c))
    assert "demo model" in text  # the layer's repr names the shipped demo model
    assert "mean AUROC" in text
