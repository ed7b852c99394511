"""The window's thread asks for a short time slice, the workers run at a lower priority
with the kernel's default slice (gui/scheduling.py; issue 16: stalls waiting for a core)."""

import os
import sys
import threading

import pytest

from detokgui.gui import scheduling


def in_a_thread(fn):
    """fn() run in a new thread (this one's scheduling is left alone): its result, or what
    it raised, raised here."""
    out = {}

    def run():
        try:
            out["result"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the calling thread
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["result"]


needs_slices = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not in_a_thread(scheduling.time_slice_ns),
    reason="the kernel reports no time slice for normal threads (Linux >= 6.12 does)")


@needs_slices
def test_the_gui_thread_gets_a_short_slice_and_its_workers_the_default():
    def gui():
        # a new thread has its creator's slice, short if this process made a JobRunner:
        # start from the kernel's default, as a worker has it
        scheduling.lower_worker_priority()
        default = scheduling.time_slice_ns()
        assert default > scheduling.GUI_SLICE_NS
        assert scheduling.shorten_time_slice()
        assert scheduling.time_slice_ns() == scheduling.GUI_SLICE_NS < default
        assert not scheduling.shorten_time_slice()  # already short: nothing asked

        def worker():
            inherited = scheduling.time_slice_ns()
            scheduling.lower_worker_priority()
            nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
            return inherited, scheduling.time_slice_ns(), nice

        inherited, slice_ns, nice = in_a_thread(worker)
        assert inherited == scheduling.GUI_SLICE_NS  # what the kernel hands a new thread
        assert slice_ns == default and nice >= scheduling.WORKER_NICENESS
        assert scheduling.time_slice_ns() == scheduling.GUI_SLICE_NS  # the GUI's own kept
        return True

    assert in_a_thread(gui)


@needs_slices
def test_the_job_runner_shortens_the_slice_of_the_thread_that_makes_it(qapp):
    """The runner is made on the GUI thread (as in every GUI test)."""
    from detokgui.gui.jobs import JobRunner

    JobRunner()
    assert scheduling.time_slice_ns() == scheduling.GUI_SLICE_NS
