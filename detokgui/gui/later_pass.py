"""Work done in passes of the event loop of its own, one piece per pass, so that the
window paints and takes input in between; not in a pass just after a long one
(event_passes)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QObject, QTimer
from shiboken6 import isValid

from detokgui.gui.event_passes import long_work_may_start

_queue: deque[tuple[Callable[[], None], QObject | None]] = deque()
_timer: QTimer | None = None
_waited = 0  # passes the first in the queue has waited for


def in_a_later_pass(fn: Callable[[], None], owner: QObject | None = None) -> None:
    """Call fn() in a later pass of the GUI thread's event loop, after what is queued
    before it, one call per pass; not if `owner` (the widget whose work it is) has been
    deleted by then. It waits for a pass where long work may start (one with no long
    work in it so far, after a short one: event_passes). A 0 ms timer would not do: Qt
    runs it in the same pass, as a posted event, before the window paints; a 1 ms one
    waits for the next pass."""
    global _timer
    _queue.append((fn, owner))
    if _timer is None:
        _timer = QTimer(QCoreApplication.instance())
        _timer.setSingleShot(True)
        _timer.setInterval(1)
        _timer.timeout.connect(_run_one)
    if not _timer.isActive():
        _timer.start()


def waiting() -> int:
    """How many calls are waiting for their pass."""
    return len(_queue)


def _run_one() -> None:
    global _waited
    try:
        if _queue:
            if not long_work_may_start(waited=_waited):
                _waited += 1
                return
            _waited = 0
            fn, owner = _queue.popleft()
            if owner is None or isValid(owner):
                fn()
    finally:
        if _queue:  # the next one in the next pass, whatever this one did
            _timer.start()
