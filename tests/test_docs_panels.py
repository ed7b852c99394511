"""docs/panels.md stays true to the code: its example panel runs as written, and every
module attribute its widget table names, and every `self.` name it uses, exists."""

import importlib
import re
from pathlib import Path

import pytest

from detokgui.core.token_side import affinity

DOC = (Path(__file__).resolve().parents[1] / "docs" / "panels.md").read_text(encoding="utf-8")


def example_panel_class():
    code = re.search(r"```python\n(.*?)```", DOC, re.DOTALL).group(1)
    namespace = {"__name__": "panels_md_example"}
    exec(compile(code, "docs/panels.md", "exec"), namespace)  # noqa: S102 (the doc's own code)
    return namespace["BestKeysPanel"]


def table_names() -> list[str]:
    """Dotted names in the first column of the widget table: `module.name(...)`, and bare
    `name(...)` after them meaning the same module; relative to detokgui.gui."""
    names = []
    for line in DOC.splitlines():
        if not line.startswith("| `"):
            continue
        module = None
        for span in re.findall(r"`([^`]*)`", line.split(" | ")[0]):
            path = re.match(r"[\w.]+", span).group(0)
            if "." in path:
                module, _, name = path.rpartition(".")
                if not module.startswith("detokgui."):
                    module = f"detokgui.gui.{module}"
            else:
                name = path
            names.append(f"{module}.{name}")
    return names


@pytest.mark.gui
def test_widget_table_names_exist():
    names = table_names()
    assert len(names) >= 20
    missing = [n for n in names
               if not hasattr(importlib.import_module(n.rpartition(".")[0]), n.rpartition(".")[2])]
    assert not missing, f"docs/panels.md names what does not exist: {missing}"


def test_example_panel_runs(qtbot, tiny_layer):
    from detokgui.gui.jobs import JobRunner
    from detokgui.gui.state import AppState

    state, jobs = AppState(), JobRunner()
    panel = example_panel_class()(state, jobs)
    qtbot.addWidget(panel)
    panel.show()
    state.set_model(tiny_layer)
    query = tiny_layer.tokenizer.encode(" Korea")[0]
    state.set_query_token(query)
    qtbot.waitUntil(lambda: not jobs.busy and panel.settled() and panel.result is not None,
                    timeout=60000)
    best = affinity.topk_keys(tiny_layer, query, 10, heads=[0])
    assert [r[1] for r in panel.result] == best.ids[0].tolist()
    assert panel.table.records().rowCount() == 10
    assert panel.status.text() == "10 tokens"
    missing = sorted({n for n in re.findall(r"self\.(\w+)", DOC) if not hasattr(panel, n)})
    assert not missing, f"docs/panels.md uses self.{missing}, which a panel does not have"
    jobs.cancel()
    jobs.wait(10000)
