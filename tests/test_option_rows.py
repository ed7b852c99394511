"""OptionRow.row lays out a declared row of options: the declared widgets in order (each
option's label before it, its unit after it), a gap between groups, the stretch where
STRETCH stands or else at the end; and every panel places every option it builds."""

from dataclasses import dataclass

import pytest
from PySide6.QtWidgets import QLabel, QPushButton, QWidget

from detokgui.gui.option_rows import STRETCH, OptionRow, check, combo, option, spin


@dataclass(frozen=True)
class Options:
    k: int = option(5, spin(1, 50, "How many", label="k", after="tokens"))
    log: bool = option(False, check("log scale"))
    kind: str = option("a", combo([("a", "first"), ("b", "second")], label="kind"))
    hidden: int = 3  # no control: no widget


def items(row) -> list:
    """The row's items: a widget, or the width of a spacer."""
    out = []
    for i in range(row.count()):
        item = row.itemAt(i)
        out.append(item.widget() if item.widget() is not None
                   else item.spacerItem().sizeHint().width())
    return out


@pytest.fixture
def options(qtbot):
    box = QWidget()
    qtbot.addWidget(box)
    return OptionRow("test-option-rows", Options, box)


def test_groups_gaps_and_the_stretch_at_the_end(options):
    button = QPushButton("go")
    row = options.row(("k", "log"), (button, "kind"), gap=24)
    w = options.widget
    assert items(row) == [options.label("k"), w("k"), options.units["k"], w("log"),
                          24,
                          button, options.label("kind"), w("kind"),
                          12]  # the stretch: FlowLayout.addStretch is a 12-pixel spacer


def test_stretch_where_declared_and_bare_items_are_groups(options):
    head = QLabel("head")
    row = options.row(head, "log", STRETCH, "kind")
    assert items(row) == [head, 12, options.widget("log"), 12,
                          options.label("kind"), options.widget("kind")]  # nothing after


def test_the_default_gap_is_twelve_pixels(options):
    row = options.row("log", "kind")
    spacers = [x for x in items(row) if isinstance(x, int)]
    assert spacers == [12, 12]  # the gap, then the stretch


def test_an_undeclared_name_is_refused(options):
    with pytest.raises(KeyError):
        options.row("hidden")


def test_every_panel_places_every_option_it_builds(qtbot):
    """A field with a control whose name no row declares would be built and never shown:
    every option widget and label of every panel ends up inside the panel."""
    from detokgui.gui.jobs import JobRunner
    from detokgui.gui.panels import PANEL_CLASSES, SIDE_PANEL_CLASSES
    from detokgui.gui.state import AppState

    state, jobs = AppState(), JobRunner()
    checked = 0
    for cls in SIDE_PANEL_CLASSES + PANEL_CLASSES:
        panel = cls(state, jobs)
        qtbot.addWidget(panel)
        rows = getattr(panel, "options", None)
        if not isinstance(rows, OptionRow):
            continue
        for name, widget in rows.widgets.items():
            for part in (widget, rows.labels.get(name), rows.units.get(name)):
                if part is not None:
                    assert panel.isAncestorOf(part), f"{cls.__name__}: {name} is not shown"
        checked += 1
    assert checked >= 15
