"""Long pieces of work that can wait run one to a pass of the event loop, with a short
pass between two of them (issue 16: a result's draw and the window's paint ran back to
back, and the window took no input for both)."""

import time

from PySide6.QtCore import QTimer

from detokgui.gui import event_passes, later_pass
from detokgui.gui.event_passes import (
    LONG_PASS_S,
    MAX_WAITS,
    MOST_WAITS,
    clock,
    long_work_may_start,
)


def burn(seconds: float) -> None:
    t0 = time.thread_time()
    while time.thread_time() - t0 < seconds:
        pass


def test_a_long_pass_keeps_long_work_out_of_itself_and_the_next_pass(qtbot):
    c = clock()
    seen = []  # (pass number, may long work start), from the long pass on

    def note():  # once per pass, a posted call each time, until long work may start
        seen.append((c.number, long_work_may_start()))
        if not seen[-1][1] and len(seen) < 50:
            QTimer.singleShot(0, note)

    def long_one():
        burn(2 * LONG_PASS_S)
        seen.append((c.number, long_work_may_start()))
        QTimer.singleShot(0, note)

    QTimer.singleShot(5, long_one)
    qtbot.waitUntil(lambda: bool(seen) and seen[-1][1], timeout=2000)
    passes = [n for n, _ in seen]
    assert passes == list(range(passes[0], passes[0] + len(passes)))  # one note a pass
    # in it and in the next, not (other work of the application may make a later pass
    # long too: then later)
    assert [ok for _, ok in seen[:2]] == [False, False]


def test_a_long_pass_is_none_where_the_limit_is_infinite(qtbot, monkeypatch):
    monkeypatch.setattr(event_passes, "LONG_PASS_S", float("inf"))
    seen = []

    def long_one():
        burn(0.02)
        QTimer.singleShot(0, lambda: seen.append(long_work_may_start()))

    QTimer.singleShot(5, long_one)
    qtbot.waitUntil(lambda: bool(seen), timeout=2000)
    assert seen == [True]


def test_work_for_a_later_pass_waits_for_one_after_a_short_pass(qtbot):
    c = clock()
    marks = {}

    def long_one():  # the work's 1 ms timer is due when this pass ends
        later_pass.in_a_later_pass(lambda: marks.setdefault("work", c.number))
        burn(2 * LONG_PASS_S)
        marks["long"] = c.number

    QTimer.singleShot(5, long_one)
    qtbot.waitUntil(lambda: "work" in marks, timeout=2000)
    assert marks["work"] >= marks["long"] + 2


def test_work_that_has_waited_keeps_out_of_a_long_pass_only(qtbot):
    """Work that has waited MAX_WAITS passes may start just after a long pass, but not in
    one that has been long so far (two long pieces in a pass keep the window from taking
    input for both) until it has waited MOST_WAITS passes."""
    clock()  # counting passes from now
    seen = {}

    def short_one():  # the pass after the long one, before any long work in it
        seen["after"] = [long_work_may_start(waited=w) for w in (0, MAX_WAITS)]

    def long_one():
        burn(2 * LONG_PASS_S)
        seen["in"] = [long_work_may_start(waited=w)
                      for w in (0, MAX_WAITS, MOST_WAITS - 1, MOST_WAITS)]
        QTimer.singleShot(0, short_one)

    QTimer.singleShot(5, long_one)
    qtbot.waitUntil(lambda: "after" in seen, timeout=2000)
    assert seen["in"] == [False, False, False, True]
    assert seen["after"] == [False, True]


def test_work_for_a_later_pass_waits_at_most_most_waits_passes(qtbot):
    """When every pass is long (a slider dragged on), queued work still runs, after at
    most MOST_WAITS passes; so does the next in the queue."""
    c = clock()
    timer = QTimer()
    timer.setInterval(0)
    timer.timeout.connect(lambda: burn(2 * LONG_PASS_S))  # every pass long
    ran = []
    later_pass.in_a_later_pass(lambda: ran.append(c.number))
    later_pass.in_a_later_pass(lambda: ran.append(c.number))
    start = c.number
    timer.start()
    try:
        qtbot.waitUntil(lambda: len(ran) == 2, timeout=3000)
    finally:
        timer.stop()
    # each waits MOST_WAITS passes at most, its 1 ms timer firing in each: a pass or two
    # apiece
    assert ran[0] - start <= 2 * (MOST_WAITS + 1)
    assert ran[1] - ran[0] <= 2 * (MOST_WAITS + 1)
