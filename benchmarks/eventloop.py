"""Running the Qt event loop until something happens, and measuring how long it was
blocked, for the GUI benchmarks."""

import bisect
import time
from pathlib import Path

try:
    import resource
except ImportError:  # not Unix
    resource = None

TICK_MS = 2
# The host's speed, probed on the GUI thread during a run: `sum(range(PROBE_N))` timed in
# the thread's CPU time every PROBE_EVERY ticks (~0.3 ms every ~0.5 s), reported as what
# `sum(range(10**7))` would take at that speed.
PROBE_N = 20_000
PROBE_EVERY = 250


def isolated_settings(folder: str | Path, name: str) -> None:
    """Keep the app's remembered settings in `folder` (not the user's), as application
    `name` of organisation "detokgui-bench"."""
    from PySide6.QtCore import QCoreApplication, QSettings

    QSettings.setDefaultFormat(QSettings.IniFormat)
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(Path(folder) / "settings"))
    QCoreApplication.setOrganizationName("detokgui-bench")
    QCoreApplication.setApplicationName(name)


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
    the longest the event loop was blocked (reported as is, tick interval included).

    For each gap it also keeps the GUI thread's CPU time and, on Linux, how long the thread
    was ready to run but waiting for a core (its scheduler statistics); the rest of the gap
    it was blocked: waiting for the GIL, a lock or other threads. And the page faults the
    thread took in it (getrusage): memory touched for the first time since it was mapped,
    which in a virtual machine whose host takes back the guest's free memory (free page
    reporting) can cost many times what it costs elsewhere, counted as the thread's CPU
    time. Every PROBE_EVERY ticks, at the first where `probe_when()` holds, it probes the
    host's speed (`speeds`, `speed_near`): a host that slows the machine makes the same
    work take more of the thread's CPU time. Probe where the program's own threads are idle:
    threads busy on the other logical CPUs of the core slow the GUI thread's too."""

    def __init__(self, interval_ms: int = TICK_MS, probe_when=lambda: True):
        from PySide6.QtCore import Qt, QTimer

        self.timer = QTimer()
        self.timer.setTimerType(Qt.PreciseTimer)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._tick)
        self.gaps: list[float] = []  # seconds between ticks
        self.ends: list[float] = []  # perf_counter() at the end of each gap
        self.cpu: list[float] = []  # the GUI thread's CPU seconds during each gap
        self.queued: list[float] = []  # seconds it waited for a core during each gap
        self.faults: list[int] = []  # page faults the GUI thread took during each gap
        # (perf_counter(), sum(range(10**7)) in ms at the speed probed then)
        self.speeds: list[tuple[float, float]] = []
        self.probe_when, self._ticks = probe_when, 0
        self.last = None
        self.last_cpu = 0.0
        self.last_queued = 0.0
        self.last_faults = 0
        try:  # opened on the GUI thread, which ticks
            self._schedstat = open("/proc/thread-self/schedstat", "rb", buffering=0)  # noqa: SIM115 - read at every tick
        except OSError:  # not Linux
            self._schedstat = None

    def _queued_s(self) -> float:
        """The GUI thread's total time waiting for a core (0 where unknown)."""
        if self._schedstat is None:
            return 0.0
        self._schedstat.seek(0)
        return int(self._schedstat.read().split()[1]) / 1e9

    @staticmethod
    def _faults() -> int:
        """The GUI thread's page faults so far (0 where unknown)."""
        try:
            usage = resource.getrusage(resource.RUSAGE_THREAD)
        except (AttributeError, OSError):  # not Linux
            return 0
        return usage.ru_minflt + usage.ru_majflt

    def _tick(self) -> None:
        now, cpu, queued = time.perf_counter(), time.thread_time(), self._queued_s()
        faults = self._faults()
        if self.last is not None:
            self.gaps.append(now - self.last)
            self.ends.append(now)
            self.cpu.append(cpu - self.last_cpu)
            self.queued.append(queued - self.last_queued)
            self.faults.append(faults - self.last_faults)
        self.last, self.last_cpu, self.last_queued = now, cpu, queued
        self.last_faults = faults
        self._ticks += 1
        if self._ticks >= PROBE_EVERY and self.probe_when():
            self._ticks = 0
            self.speeds.append((now, probe_ms()))

    def speed_near(self, t: float, window_s: float = 5.0) -> float | None:
        """The host's speed around perf_counter() time `t`: the median of the probes taken
        within `window_s` of it, as `sum(range(10**7))` in ms (None without probes)."""
        a = bisect.bisect_left(self.speeds, t - window_s, key=_when)  # taken in time order
        b = bisect.bisect_right(self.speeds, t + window_s, key=_when)
        near = sorted(ms for _t, ms in self.speeds[a:b])
        return near[len(near) // 2] if near else None

    def start(self) -> None:
        self.gaps, self.ends, self.cpu, self.queued, self.faults = [], [], [], [], []
        self.speeds, self._ticks = [], 0
        self.last, self.last_cpu = time.perf_counter(), time.thread_time()
        self.last_queued, self.last_faults = self._queued_s(), self._faults()
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()
        self._tick()

    @property
    def worst_ms(self) -> float:
        return 1000.0 * max(self.gaps, default=0.0)


def _when(probe: tuple[float, float]) -> float:
    return probe[0]


def probe_ms() -> float:
    """How fast the calling thread runs Python now: `sum(range(PROBE_N))` timed in its CPU
    time (so waiting for a core does not count), scaled to `sum(range(10**7))` in ms."""
    t0 = time.thread_time()
    sum(range(PROBE_N))
    return (time.thread_time() - t0) * 1000 * (10**7 / PROBE_N)


def pause(seconds: float) -> None:
    """Run the event loop for `seconds`."""
    t_end = time.perf_counter() + seconds
    wait_until(lambda: time.perf_counter() > t_end)


def settle(win, ms: int = 100) -> None:
    """Until no job runs, then `ms` more for drawing."""
    wait_until(lambda: not win.jobs.busy)
    pause(ms / 1000.0)


class StallWatch:
    """What the GUI thread was running during its stalls: a watchdog thread looks every
    few ms at how long ago the StallMeter last ticked and, once that is over `after_ms`,
    samples the GUI thread's Python stack (sys._current_frames). `top()` names, for the
    longest gaps, the stack seen most often while each lasted. A stack ending in an event
    loop (exec, processEvents) means the time went to C++ (layout, painting, a Qt call
    that holds the GIL): `py-spy dump --native` tells which, and which other thread held
    the GIL at that moment (a worker running Python makes every GIL hand-over to the GUI
    thread wait; the watchdog itself needs the GIL to start the dump, so a long hold in
    one C call is seen only after it). py-spy takes ~0.2 s to start: a dump falls inside
    a stall that lasts longer than that, and pauses the process, stalling it again."""

    def __init__(self, meter: StallMeter, after_ms: float = 20.0, every_ms: float = 3.0,
                 native_dumps: int = 0, native_after_ms: float = 150.0):
        import threading

        self.meter, self.after, self.every = meter, after_ms / 1000, every_ms / 1000
        self.gui = threading.get_ident()
        self.samples: list[tuple[float, tuple[str, ...]]] = []  # (time, innermost-first)
        # each stack seen is formatted and kept once: a new copy per sample grew the
        # benchmark's own memory by ~15 MB over a run, which counted in its RSS figures
        self._stacks: dict[tuple, tuple[str, ...]] = {}
        # `py-spy dump --native`, at most once per stall that passes native_after_ms,
        # native_dumps in all: (time, the GUI thread's frames innermost first, the
        # thread then holding the GIL if another: "name: frames")
        self.native_left, self.native_after = native_dumps, native_after_ms / 1000
        self.native: list[tuple[float, list[str], str]] = []
        self._dumped_for = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="stall-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        import sys

        while not self._stop.wait(self.every):
            last = self.meter.last
            now = time.perf_counter()
            if last is None or now - last < self.after:
                continue
            frame = sys._current_frames().get(self.gui)
            where = []
            while frame is not None and len(where) < 40:
                where.append((frame.f_code, frame.f_lineno))
                frame = frame.f_back
            key = tuple(where)
            stack = self._stacks.get(key)
            if stack is None:
                stack = self._stacks[key] = tuple(
                    f"{_short(code.co_filename)}:{line} {code.co_name}" for code, line in key)
            self.samples.append((now, stack))
            if self.native_left > 0 and now - last > self.native_after and \
                    self._dumped_for != last:
                self._dumped_for = last
                self.native_left -= 1
                self.native.append((now, *_native_dump()))

    def top(self, t_from: float, n: int = 10, skip=lambda end, gap: False):
        """The n longest gaps ending after t_from (and not skipped) as (gap s, end, GUI
        thread's CPU s, its wait for a core s, its page faults, most frequent stack, its
        share of the samples)."""
        from collections import Counter

        m = self.meter
        chosen = sorted(row for row in zip(m.gaps, m.ends, m.cpu, m.queued, m.faults)
                        if row[1] > t_from and not skip(row[1], row[0]))[-n:][::-1]
        out = []
        for gap, end, cpu, queued, faults in chosen:
            seen = Counter(s for t, s in self.samples if end - gap <= t <= end)
            stack, k = seen.most_common(1)[0] if seen else ((), 0)
            out.append((gap, end, cpu, queued, faults, stack,
                        k / max(1, sum(seen.values()))))
        return out

    def native_in(self, end: float, gap: float) -> tuple[list[str], str]:
        """The native dump taken during the gap that ended at `end`, if any: the GUI
        thread's frames and the other thread holding the GIL ("" when none)."""
        return next(((frames, holder) for t, frames, holder in self.native
                     if end - gap <= t <= end), ([], ""))


def _native_dump(depth: int = 30) -> tuple[list[str], str]:
    """The GUI (main) thread's stack, C++ frames included, from `py-spy dump --native`,
    and the other thread that held the GIL ("name: innermost frames", "" when none).
    The process is paused while py-spy reads; empty if py-spy is missing or not allowed."""
    import os
    import re
    import subprocess

    try:
        out = subprocess.run(["py-spy", "dump", "--native", "--pid", str(os.getpid())],
                             check=False, capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return [], ""
    threads: list[tuple[str, list[str]]] = []  # (py-spy's line for it, frames)
    for line in out.splitlines():
        if line.startswith("Thread "):
            threads.append((line, []))
        elif threads and line.strip():
            threads[-1][1].append(line.strip())
    gui = next((frames for head, frames in threads if '"MainThread"' in head), [])
    holder = next(((head, frames) for head, frames in threads
                   if "gil)" in head and '"MainThread"' not in head), None)
    if holder is None:
        return gui[:depth], ""
    head, frames = holder
    name = head.split('"')[1] if head.count('"') >= 2 else head.split()[1]
    python = [f for f in frames if re.search(r":\d+\)$", f)] or frames  # file:line frames
    return gui[:depth], f"{name}: " + " <- ".join(python[:6])

def _short(path: str) -> str:
    for marker in ("detokgui/", "pyqtgraph/", "benchmarks/", "site-packages/"):
        k = path.rfind(marker)
        if k >= 0:
            return path[k:]
    return path.rsplit("/", 1)[-1]


def format_stack(stack: tuple[str, ...], depth: int = 8) -> str:
    """The innermost frames of a sampled stack (innermost first, each called by the next),
    the benchmark's own frames dropped."""
    keep = [f for f in stack if not f.startswith(("benchmarks/", "eventloop.py"))][:depth]
    return " <- ".join(keep) if keep else "(event loop: C++)"


class EventLog:
    """Every Qt event the GUI thread handles that costs more than `min_ms` of its CPU
    time, with its receiver, nested as Qt dispatched them; and any other `note`d work
    (a panel's draw, a garbage collection). Unlike StallWatch's stack samples, which need
    the GIL and so mostly see code that has just let it go, this names the work a stall
    was made of.

    `application_class()` is a QApplication subclass whose `notify` does the logging:
    create the application from it, before anything else makes one."""

    def __init__(self, min_ms: float = 2.0):
        self.min = min_ms / 1000
        self.entries: list[tuple[float, int, float, str]] = []  # (end, depth, CPU s, what)
        self.depth = 0

    def note(self, end: float, cpu: float, what: str) -> None:
        if cpu > self.min:
            self.entries.append((end, self.depth, cpu, what))

    def application_class(self):
        from PySide6.QtWidgets import QApplication

        log = self

        class LoggingApplication(QApplication):
            def notify(self, receiver, event):
                kind = event.type()
                log.depth += 1
                c0 = time.thread_time()
                try:
                    return super().notify(receiver, event)
                finally:
                    log.depth -= 1
                    cpu = time.thread_time() - c0
                    if cpu > log.min:
                        log.entries.append((time.perf_counter(), log.depth, cpu,
                                            f"{kind.name} -> {_receiver(receiver)}"))

        return LoggingApplication

    def watch_garbage_collection(self) -> None:
        import gc

        started = {}

        def on_gc(phase, info):
            if phase == "start":
                started["cpu"] = time.thread_time()
            elif "cpu" in started:
                self.note(time.perf_counter(), time.thread_time() - started.pop("cpu"),
                          f"garbage collection, generation {info['generation']}")

        gc.callbacks.append(on_gc)

    def timed(self, fn, describe):
        """`fn` wrapped to note its CPU time as `describe(*args)`."""
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            c0 = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.note(time.perf_counter(), time.thread_time() - c0, describe(*args))

        return wrapper

    def during(self, end: float, gap: float) -> list[str]:
        """The entries of the gap that ended at `end`, as indented lines (outermost
        least indented; an entry is listed when it ends, after what it contains)."""
        return [f"{'  ' * depth}{1000 * cpu:6.1f} ms  {what}"
                for t, depth, cpu, what in self.entries if end - gap <= t <= end]


def _receiver(obj) -> str:
    """Its class and object name, and the innermost of detokgui's widgets it is part of
    ("QWidget 'qt_scrollarea_viewport' in TopKPanel")."""
    name = obj.objectName() if hasattr(obj, "objectName") else ""
    text = f"{type(obj).__name__}{f' {name!r}' if name else ''}"
    parent = obj.parent() if hasattr(obj, "parent") else None
    while parent is not None and not type(parent).__module__.startswith("detokgui."):
        parent = parent.parent() if hasattr(parent, "parent") else None
    return f"{text} in {type(parent).__name__}" if parent is not None else text
