"""A splitter that stacks its sides in a narrow window (the PE neurons panel's plots were
squeezed to a sliver beside its table in an 800-pixel window)."""

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from detokgui.gui.adaptive_splitter import AdaptiveSplitter


def test_it_turns_when_narrow_and_back(qtbot):
    split = AdaptiveSplitter(600)
    split.addWidget(QLabel("left"))
    split.addWidget(QLabel("right"))
    qtbot.addWidget(split)
    turns = []
    split.turned.connect(turns.append)
    split.resize(800, 400)
    split.show()
    qtbot.waitExposed(split)
    assert split.orientation() == Qt.Orientation.Horizontal and turns == []
    split.resize(500, 400)
    qtbot.waitUntil(lambda: split.orientation() == Qt.Orientation.Vertical)
    assert turns == [Qt.Orientation.Vertical]
    split.resize(700, 400)
    qtbot.waitUntil(lambda: split.orientation() == Qt.Orientation.Horizontal)
    assert turns == [Qt.Orientation.Vertical, Qt.Orientation.Horizontal]
