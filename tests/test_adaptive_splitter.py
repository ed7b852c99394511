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


def test_an_inner_splitter_turns_across_it(qtbot):
    from PySide6.QtWidgets import QSplitter

    split = AdaptiveSplitter(600)
    inner = QSplitter(Qt.Orientation.Vertical)
    inner.addWidget(QLabel("a"))
    inner.addWidget(QLabel("b"))
    split.addWidget(inner)
    split.addWidget(QLabel("right"))
    split.turn_crosswise(inner, beside=([500, 300], [100, 300]), above=([200, 200], None))
    qtbot.addWidget(split)
    split.resize(800, 400)
    split.show()
    qtbot.waitExposed(split)
    split.resize(500, 400)
    qtbot.waitUntil(lambda: split.orientation() == Qt.Orientation.Vertical)
    assert inner.orientation() == Qt.Orientation.Horizontal  # side by side, above "right"
    split.resize(800, 400)
    qtbot.waitUntil(lambda: split.orientation() == Qt.Orientation.Horizontal)
    assert inner.orientation() == Qt.Orientation.Vertical
    a, b = inner.sizes()
    assert b > 2 * a  # its sizes for side by side: 100 / 300
