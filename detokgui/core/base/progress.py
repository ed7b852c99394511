"""Long computations are generators that yield `Progress` and return their result.

The GUI runs them on a worker thread and stops them between yields; scripts and tests
drain them with `run`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Progress:
    fraction: float  # 0..1
    message: str = ""


Job = Generator[Progress, None, T]


def run(job: Job[T], on_progress: Callable[[Progress], None] | None = None) -> T:
    """Drain a generator job and return its result."""
    while True:
        try:
            p = next(job)
        except StopIteration as stop:
            return stop.value
        if on_progress is not None:
            on_progress(p)


def rescaled(job: Job[T], lo: float, hi: float) -> Job[T]:
    """Re-yield a job's progress mapped into [lo, hi] (a step of a longer job); return its
    result."""
    while True:
        try:
            p = next(job)
        except StopIteration as stop:
            return stop.value
        yield Progress(lo + (hi - lo) * p.fraction, p.message)


#: A job's remaining time is told once it has run this long and done this share: before,
#: the rate is mostly its start-up.
ETA_AFTER_S = 2.0
ETA_AFTER_FRACTION = 0.02


def remaining_seconds(elapsed: float, fraction: float) -> float | None:
    """The time left at a constant rate, elapsed (1 - f) / f; None while too little has run
    to tell (`ETA_AFTER_S`, `ETA_AFTER_FRACTION`)."""
    if elapsed < ETA_AFTER_S or fraction < ETA_AFTER_FRACTION or fraction >= 1.0:
        return None
    return elapsed * (1.0 - fraction) / fraction


def duration_text(seconds: float) -> str:
    """"8 s", "1 min 20 s", "2 h 05 min": a remaining time to the precision worth reading."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s" if s < 600 else f"{round(s / 60)} min"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"
