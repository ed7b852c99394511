"""Running the Qt event loop until something happens, for the GUI benchmarks."""

import time


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
