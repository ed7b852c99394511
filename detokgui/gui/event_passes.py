"""The GUI thread's passes through its event loop and the CPU time each takes, so that
long pieces of work that can wait (a window's paint of plots and tables, a result's
draw) run one to a pass, with a short pass between two of them.

In one pass Qt hands out, in turn, the posted events (the window's paints among them),
the timers that are due and the input. Two long pieces of work in the same pass, or in
two passes in a row, would keep the input and the timers waiting for both.

A piece waits for a later pass:
- always where the pass it would run in has already taken LONG_PASS_S (another long
  piece ran in it), MOST_WAITS times at most: only a pass that keeps being long before
  the piece's turn comes (other work that cannot wait) makes it run late;
- just after a long pass, MAX_WAITS times at most: when every pass is long (a slider
  dragged on), work waiting for a short one would never run."""

from __future__ import annotations

import time

from PySide6.QtCore import QAbstractEventDispatcher, QCoreApplication, QObject, QThread, Slot
from shiboken6 import isValid

# A pass that took more of the GUI thread's CPU time than this is a long one.
LONG_PASS_S = 0.005
MAX_WAITS = 3  # times in a row one piece of work may wait for a pass after a long one
MOST_WAITS = 8  # times in a row one piece may wait, in all


class PassClock(QObject):
    """Counts the passes of the GUI thread's event loop and keeps the number of the last
    long one. A pass is one call of the event dispatcher: it begins with `aboutToBlock`
    where the loop may wait for events (QEventLoop.exec) and ends with the `awake` that
    follows; a call that does not wait (processEvents()) begins with `awake` and ends at
    the next call."""

    def __init__(self, dispatcher: QAbstractEventDispatcher):
        super().__init__(dispatcher)
        self.number = 0  # passes begun
        self.begun_cpu = time.thread_time()  # the thread's CPU time when this one began
        self.last_long = -2  # number of the last pass that took over LONG_PASS_S
        self._in_waiting_pass = False
        dispatcher.aboutToBlock.connect(self._about_to_block)
        dispatcher.awake.connect(self._awake)

    @Slot()
    def _about_to_block(self) -> None:
        self._begin()
        self._in_waiting_pass = True

    @Slot()
    def _awake(self) -> None:
        if self._in_waiting_pass:
            self._end()
            self._in_waiting_pass = False
        else:
            self._begin()

    def _end(self) -> None:
        if time.thread_time() - self.begun_cpu > LONG_PASS_S:
            self.last_long = self.number

    def _begin(self) -> None:
        self._end()
        self.number += 1
        self.begun_cpu = time.thread_time()

    def long_work_may_start(self, now_cpu: float | None = None, waited: int = 0) -> bool:
        """Whether a long piece of work that can wait, and has waited `waited` passes in
        a row, may start now: this pass has taken at most LONG_PASS_S so far (until
        `now_cpu`, the thread's CPU time, if given) and the one before was not long; the
        first rule holds until it has waited MOST_WAITS passes, the second MAX_WAITS."""
        if waited >= MOST_WAITS:
            return True
        used = (time.thread_time() if now_cpu is None else now_cpu) - self.begun_cpu
        if used > LONG_PASS_S:
            return False
        return waited >= MAX_WAITS or self.number - self.last_long >= 2


_clock: PassClock | None = None


def clock() -> PassClock | None:
    """The GUI thread's PassClock, made at the first call from that thread (None from
    another thread, or before there is an application)."""
    global _clock
    app = QCoreApplication.instance()
    if (_clock is None or not isValid(_clock)) and app is not None \
            and QThread.currentThread() is app.thread():
        _clock = PassClock(QAbstractEventDispatcher.instance())
    return _clock


def long_work_may_start(now_cpu: float | None = None, waited: int = 0) -> bool:
    """PassClock.long_work_may_start of the GUI thread's clock (True where there is none)."""
    c = clock()
    return c is None or c.long_work_may_start(now_cpu, waited)
