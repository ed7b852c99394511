"""The option controls built in one call (range, items and tooltip), and two small
layout helpers."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QLabel,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)


def spin_box(lo: int, hi: int, tip: str = "", *, tracking: bool = True,
             special: str = "") -> QSpinBox:
    """A QSpinBox over lo..hi with a tooltip. tracking=False: valueChanged only when typing
    ends (Enter, focus out), for a value that starts a computation; `special`: the text
    shown instead of `lo`."""
    spin = QSpinBox()
    spin.setRange(lo, hi)
    if special:
        spin.setSpecialValueText(special)
    if not tracking:
        spin.setKeyboardTracking(False)
    if tip:
        spin.setToolTip(tip)
    return spin


def check_box(text: str, tip: str = "") -> QCheckBox:
    """A QCheckBox labelled `text` with a tooltip."""
    box = QCheckBox(text)
    if tip:
        box.setToolTip(tip)
    return box


def combo_box(items: Iterable[tuple[object, str]], tip: str = "") -> QComboBox:
    """A QComboBox of (data, text) items, in order, with a tooltip: currentData() is the
    chosen item's data (what an Options field and the settings store)."""
    combo = QComboBox()
    for data, text in items:
        combo.addItem(text, data)
    if tip:
        combo.setToolTip(tip)
    return combo


def wrapping_label(text: str = " ") -> QLabel:
    """A QLabel that wraps its text (the one-space default keeps its line's height before
    anything is shown)."""
    label = QLabel(text)
    label.setWordWrap(True)
    return label


def bare_column() -> tuple[QWidget, QVBoxLayout]:
    """A QWidget with a margin-less vertical layout: one side of a splitter."""
    box = QWidget()
    lay = QVBoxLayout(box)
    lay.setContentsMargins(0, 0, 0, 0)
    return box, lay
