"""Running the Qt event loop until something happens, and measuring how long it was
blocked, for the GUI benchmarks."""

import time

TICK_MS = 2


def wait_until(predicate, timeout: float = 120.0) -> float:
    """Run the event loop until predicate() is true (polled every millisecond by a
    timer); the time it took in seconds."""
    from PySide6.QtCore import QEventLoop, Qt, QTimer

    t0 = time.perf_counter()
    if predicate():
        return 0.0
    loop = QEventLoop()
    timed_out = []

    def poll():
        if predicate():
            loop.quit()
        elif time.perf_counter() - t0 > timeout:
            timed_out.append(True)
            loop.quit()

    timer = QTimer()
    timer.setTimerType(Qt.PreciseTimer)
    timer.timeout.connect(poll)
    timer.start(1)
    loop.exec()
    timer.stop()
    if timed_out:
        raise TimeoutError("benchmark condition not reached")
    return time.perf_counter() - t0


class StallMeter:
    """A QTimer ticking every few ms on the GUI thread; the largest gap between two ticks is
    the longest the event loop was blocked (reported as is, tick interval included)."""

    def __init__(self, interval_ms: int = TICK_MS):
        from PySide6.QtCore import Qt, QTimer

        self.timer = QTimer()
        self.timer.setTimerType(Qt.PreciseTimer)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._tick)
        self.gaps: list[float] = []  # seconds between ticks
        self.ends: list[float] = []  # perf_counter() at the end of each gap
        self.last = None

    def _tick(self) -> None:
        now = time.perf_counter()
        if self.last is not None:
            self.gaps.append(now - self.last)
            self.ends.append(now)
        self.last = now

    def start(self) -> None:
        self.gaps, self.ends, self.last = [], [], time.perf_counter()
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()
        self._tick()

    @property
    def worst_ms(self) -> float:
        return 1000.0 * max(self.gaps, default=0.0)


def pause(seconds: float) -> None:
    """Run the event loop for `seconds`."""
    t_end = time.perf_counter() + seconds
    wait_until(lambda: time.perf_counter() > t_end)


def settle(win, ms: int = 100) -> None:
    """Until no job runs, then `ms` more for drawing."""
    wait_until(lambda: not win.jobs.busy)
    pause(ms / 1000.0)
