"""A job's progress report does not paint the window there and then (issue 16: each report
painted the plots and tables waiting for their update in the middle of the GUI thread's
work)."""

from paint_counting import CountingWidget, PaintCounter
from PySide6.QtWidgets import QProgressBar, QVBoxLayout, QWidget

from detokgui.gui.progress_bar import ProgressBar


def shown(qtbot, bar):
    root = QWidget()
    lay = QVBoxLayout(root)
    other = CountingWidget(200, 100)
    lay.addWidget(other)
    lay.addWidget(bar)
    bar.setRange(0, 1000)
    qtbot.addWidget(root)
    root.show()
    qtbot.waitExposed(root)
    qtbot.wait(30)
    return root, other


def test_a_progress_report_paints_with_the_window(qtbot):
    bar = ProgressBar()
    _root, other = shown(qtbot, bar)
    bar_paints = PaintCounter(bar)
    other.update()  # a view waiting for its repaint
    before = other.painted
    bar.set_fraction(0.5)
    assert other.painted == before and bar_paints.total == 0  # nothing painted yet
    qtbot.waitUntil(lambda: bar_paints.total > 0)
    assert other.painted == before + 1
    assert bar.value() == 500
    bar.set_fraction(2.0)
    assert bar.value() == 1000


def test_a_plain_progress_bar_paints_everything_at_once(qtbot):
    """What ProgressBar avoids is real in this Qt."""
    bar = QProgressBar()
    _root, other = shown(qtbot, bar)
    other.update()
    before = other.painted
    bar.setValue(500)
    assert other.painted == before + 1


def test_remaining_time_rule_and_text():
    from detokgui.core.base.progress import duration_text, remaining_seconds

    assert remaining_seconds(1.0, 0.5) is None  # too early to tell
    assert remaining_seconds(10.0, 0.01) is None  # too little done
    assert remaining_seconds(10.0, 0.25) == 30.0
    assert remaining_seconds(10.0, 1.0) is None
    assert [duration_text(s) for s in (0.4, 8, 80, 605, 7500)] == [
        "0 s", "8 s", "1 min 20 s", "10 min", "2 h 05 min"]


def test_the_bar_shows_the_time_left(qtbot, monkeypatch):
    from detokgui.gui import progress_bar

    now = [100.0]
    monkeypatch.setattr(progress_bar.time, "monotonic", lambda: now[0])
    bar = ProgressBar()
    qtbot.addWidget(bar)
    bar.start("auroc")
    bar.set_fraction(0.1, "auroc")
    assert bar.format() == "%p%"  # not yet: the start of a job says little of its rate
    now[0] += 20.0
    bar.set_fraction(0.2, "auroc")
    assert bar.format() == "%p% · 1 min 20 s left" and bar.text() == "20% · 1 min 20 s left"
    bar.set_fraction(0.5, "other")  # a job not started through `start`: no estimate
    assert bar.format() == "%p%"
