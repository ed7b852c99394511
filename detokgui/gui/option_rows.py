"""A panel's options, declared once in its options dataclass, and its row of options,
declared as the groups of option names it shows.

Each field says how it is edited; `OptionRow` builds those widgets (and their labels),
binds them to the dataclass and remembers them as `BoundOptions` does ("<group>/<field>"):

    @dataclass(frozen=True)
    class Options:
        k: int = option(20, spin(1, 500, "How many tokens to list", label="extremes"))
        log: bool = option(False, check("Log counts", "Logarithmic count axis"))

    self.options = OptionRow("slopes", Options, self)
    self.options.widget("k")               # the spin box, for range changes and tests

A panel's row of options is declared where the panel lays itself out: `row(*groups)`
builds it as a FlowLayout from the names of the options, group by group, with the
panel's other widgets of the row among them:

    lay.addLayout(self.options.row(
        HeadSpin(state),                   # a widget: placed as it is
        ("k", "log"),                      # a group: label, widget (and unit) of each field
        STRETCH,                           # the row's stretch here (else at its end)
        (QLabel("Show"), "curves"),        # names and widgets mix in a group
        SigmaControls(state)))

A bare name or widget is a group of one. Between two groups stands a gap of `gap` pixels
(12 unless told); STRETCH stands instead of a gap where the row's stretch goes, and a row
without one ends with it. The declaration says which options, in which groups and in
which order; the spacing comes from one place, so rows look alike from panel to panel.
`add_to(row, *names)` places options in a layout built some other way.

A field without a control has no widget: it keeps its remembered value (or its default)
and changes only through `options.set(...)`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import Any, Final

from PySide6.QtWidgets import QLabel, QLineEdit, QToolButton, QWidget

from detokgui.gui.controls import check_box, combo_box, spin_box
from detokgui.gui.flow_layout import FlowLayout
from detokgui.gui.options import BoundOptions


class _Stretch:
    def __repr__(self) -> str:
        return "STRETCH"


#: Where a row of `OptionRow.row` has its stretch (instead of the gap between two groups).
STRETCH: Final = _Stretch()

#: Pixels between two groups of a row.
GROUP_GAP = 12

#: What a group of `OptionRow.row` holds: option names and widgets.
RowItem = str | QWidget


@dataclass(frozen=True)
class Control:
    """How an option is edited: `build()` makes the widget; `label` (if any) goes before it,
    `after` (a unit, say) after it."""

    build: Callable[[], QWidget]
    label: str = ""
    after: str = ""


def option(default: Any, control: Control | None = None) -> Any:
    """A dataclass field with `default`, edited by `control`."""
    return field(default=default, metadata={"control": control} if control else {})


def spin(lo: int, hi: int, tip: str = "", *, label: str = "", after: str = "",
         tracking: bool = True, special: str = "") -> Control:
    """An int in lo..hi (see controls.spin_box)."""
    return Control(lambda: spin_box(lo, hi, tip, tracking=tracking, special=special), label,
                   after)


def check(text: str, tip: str = "") -> Control:
    """A bool: a check box labelled `text`."""
    return Control(lambda: check_box(text, tip))


def toggle(text: str, tip: str = "") -> Control:
    """A bool: a checkable tool button labelled `text`."""
    def build() -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.setCheckable(True)
        if tip:
            button.setToolTip(tip)
        return button
    return Control(build)


def combo(items: Iterable[tuple[object, str]], tip: str = "", *, label: str = "") -> Control:
    """One of the data of (data, text) items."""
    items = tuple(items)
    return Control(lambda: combo_box(items, tip), label)


def line_edit(tip: str = "", *, label: str = "", max_width: int = 0) -> Control:
    """A str typed in a line edit (the option changes when editing finishes)."""
    def build() -> QLineEdit:
        edit = QLineEdit()
        if max_width:
            edit.setMaximumWidth(max_width)
        if tip:
            edit.setToolTip(tip)
        return edit
    return Control(build, label)


def custom(build: Callable[[], QWidget], *, label: str = "") -> Control:
    """A widget class of the project's own (HeadChooser, HeadSet, ConventionBox), read and
    written as BoundOptions reads widgets (by kind, else value / setValue / valueChanged)."""
    return Control(build, label)


class OptionRow(BoundOptions):
    """BoundOptions whose widgets (and labels) are built from the fields' controls."""

    def __init__(self, group: str, cls, parent=None):
        built: dict[str, QWidget] = {}
        self.labels: dict[str, QLabel] = {}
        self.units: dict[str, QLabel] = {}  # the labels after the widgets
        for f in fields(cls):
            control = f.metadata.get("control")
            if control is None:
                continue
            built[f.name] = control.build()
            if control.label:
                self.labels[f.name] = QLabel(control.label)
            if control.after:
                self.units[f.name] = QLabel(control.after)
        super().__init__(group, cls, built, parent)

    def label(self, name: str) -> QLabel:
        return self.labels[name]

    def add_to(self, row, *names: str) -> None:
        """Add the label and widget of each named option (default: every one, in field
        order) to `row`, a layout."""
        for name in names or tuple(self.widgets):
            if name in self.labels:
                row.addWidget(self.labels[name])
            row.addWidget(self.widgets[name])
            if name in self.units:
                row.addWidget(self.units[name])

    def row(self, *groups: RowItem | Iterable[RowItem] | _Stretch,
            gap: int = GROUP_GAP) -> FlowLayout:
        """A FlowLayout of `groups` in order: each group's items side by side (an option
        name: its label, widget and unit, as `add_to`; a widget: itself), `gap` pixels
        between two groups, and the stretch where STRETCH stands (at the end if nowhere).
        A bare name or widget is a group of one."""
        row = FlowLayout()
        stretched = False
        after_group = False  # a gap goes before the next group
        for group in groups:
            if group is STRETCH:
                row.addStretch(1)
                stretched, after_group = True, False
                continue
            if after_group:
                row.addSpacing(gap)
            for item in (group,) if isinstance(group, (str, QWidget)) else group:
                if isinstance(item, str):
                    self.add_to(row, item)
                else:
                    row.addWidget(item)
            after_group = True
        if not stretched:
            row.addStretch(1)
        return row
