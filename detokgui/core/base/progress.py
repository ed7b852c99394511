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
