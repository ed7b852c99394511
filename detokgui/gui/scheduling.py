"""How the operating system schedules the app's threads, so that the window's thread gets a
core when it needs one while the workers compute (Linux; elsewhere nothing changes).

- Workers run at a lower priority (niceness WORKER_NICENESS): a third of the weight of
  a normal thread, so that background work still gets on when other programs are busy.
- The GUI thread asks for a short time slice (GUI_SLICE_NS, Linux >= 6.12's EEVDF
  scheduler): a thread that wakes with a shorter slice than the one running may take its
  core at once, where it used to wait for the running worker's slice to end or for the
  next timer tick (4 ms here; the soak benchmark's longest stalls were a third to a half
  such waits). It changes no share of CPU time: the slice says how often, not how much.
  In 400-operation soak runs (`perf sched record`), the GUI thread's waits for a core
  over 2 ms added up to 554-617 ms with the default slice (1.4 ms on 2 cores), 326-352 ms
  with 0.3 ms and 260-273 ms with 0.1 ms.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import threading

WORKER_NICENESS = 5
GUI_SLICE_NS = 100_000  # the shortest the kernel takes

_thread_state = threading.local()


def lower_worker_priority() -> None:
    """Give this worker thread (and the threads it starts) a lower CPU priority, once.

    On a machine with few cores the workers' computations would otherwise take the CPU
    time the GUI thread needs to draw their results (the soak benchmark saw stalls four
    times the GUI thread's own work). Linux: the niceness of one thread, and the kernel's
    default time slice (a thread started by the GUI thread inherits its short one);
    elsewhere no-op."""
    if getattr(_thread_state, "niced", False):
        return
    _thread_state.niced = True
    if sys.platform.startswith("linux"):
        try:
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid),
                                                     WORKER_NICENESS))
        except OSError:
            pass
        _set_time_slice(0)


class _SchedAttr(ctypes.Structure):
    """Linux's `struct sched_attr` (include/uapi/linux/sched/types.h)."""

    _fields_ = [("size", ctypes.c_uint32), ("sched_policy", ctypes.c_uint32),
                ("sched_flags", ctypes.c_uint64), ("sched_nice", ctypes.c_int32),
                ("sched_priority", ctypes.c_uint32), ("sched_runtime", ctypes.c_uint64),
                ("sched_deadline", ctypes.c_uint64), ("sched_period", ctypes.c_uint64),
                ("sched_util_min", ctypes.c_uint32), ("sched_util_max", ctypes.c_uint32)]


# (sched_setattr, sched_getattr) system call numbers
_SYSCALLS = {"x86_64": (314, 315), "aarch64": (274, 275)}
_SCHED_OTHER = 0


def time_slice_ns() -> int | None:
    """The calling thread's requested time slice (sched_runtime; the kernel's default when
    none was asked for), or None where it cannot be read."""
    attr = _get_attr()
    return None if attr is None else int(attr.sched_runtime)


def shorten_time_slice(ns: int = GUI_SLICE_NS) -> bool:
    """Ask for a time slice of `ns` for the calling thread (the threads it starts inherit
    it). True if the kernel took it; one that knows no slices for normal threads, before
    Linux 6.12, takes the call and ignores it."""
    current = time_slice_ns()
    return current is not None and not 0 < current <= ns and _set_time_slice(ns)


def _set_time_slice(ns: int) -> bool:
    """Set the calling thread's requested slice (0: the kernel's default), keeping its
    policy and niceness; only for a thread with the normal policy."""
    attr = _get_attr()
    if attr is None or attr.sched_policy != _SCHED_OTHER:
        return False
    attr.size, attr.sched_flags, attr.sched_runtime = ctypes.sizeof(attr), 0, ns
    return _syscall(0, ctypes.byref(attr), 0)


def _get_attr() -> _SchedAttr | None:
    attr = _SchedAttr()
    return attr if _syscall(1, ctypes.byref(attr), ctypes.sizeof(attr), 0) else None


def _syscall(which: int, *args) -> bool:
    """sched_setattr (which=0) or sched_getattr (1) for the calling thread; False where
    Linux lacks it or refuses."""
    numbers = _SYSCALLS.get(platform.machine())
    if not sys.platform.startswith("linux") or numbers is None:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(numbers[which], 0, *args) == 0
