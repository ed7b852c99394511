"""Running the core's generator jobs from a script or a notebook: a progress bar
(`tqdm.auto`: a widget in Jupyter, text elsewhere) driven by the job's `Progress`, and a
clean stop on Ctrl+C or a notebook interrupt.

A job is a generator that yields `core.base.progress.Progress` and returns its result
(`core.base.progress`). On KeyboardInterrupt (or any other exception) the generator is closed
before the exception goes on: its `finally` blocks run and it writes nothing more, and
the core writes its disk-cache entries only once a result is complete (atomically,
`core.base.atomic`), so an interrupted pass leaves no partial cache file.
"""

from __future__ import annotations

from collections.abc import Callable

from detokgui.core.base.progress import Job, Progress, run

#: `progress=` of every long analysis: True (a tqdm.auto bar), False (silent), or a
#: function called with each `core.base.progress.Progress`.
ProgressArg = bool | Callable[[Progress], None]


class _Bar:
    """A tqdm.auto bar in percent, opened on the first report that is not already done
    (a result read from the cache shows no bar)."""

    def __init__(self, what: str):
        self.what = what
        self.bar = None

    def __call__(self, p: Progress) -> None:
        if self.bar is None:
            if p.fraction >= 1.0:
                return
            from tqdm.auto import tqdm

            self.bar = tqdm(total=100, desc=self.what, unit="%", leave=False,
                            bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}"
                                       "{postfix}")
        if p.message:  # a corpus count's rates and time left run to about 90 characters
            self.bar.set_postfix_str(p.message[:100], refresh=False)
        # update(), not a refresh per report: tqdm redraws at most every mininterval
        self.bar.update(round(100 * min(max(p.fraction, 0.0), 1.0), 1) - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def reporter(progress: ProgressArg, what: str):
    """(report function or None, closer) for a `progress=` argument."""
    if progress is True:
        bar = _Bar(what)
        return bar, bar.close
    if progress is False or progress is None:
        return None, lambda: None
    if callable(progress):
        return progress, lambda: None
    raise TypeError(f"progress must be True, False or a function, not {progress!r}")


def run_job(job: Job, what: str, progress: ProgressArg = True):
    """Drain `job` (see the module docstring) and return its result; `what` names the
    pass on the bar."""
    report, close = reporter(progress, what)
    try:
        return run(job, report)
    except BaseException:
        job.close()
        raise
    finally:
        close()


def load_progress(progress: ProgressArg, what: str):
    """A `(fraction, message)` report function for `Layer0.from_pretrained` and the other
    core calls that take one, and its closer."""
    report, close = reporter(progress, what)
    if report is None:
        return None, close
    return (lambda fraction, message="": report(Progress(float(fraction), str(message)))), close


def sigma_tables(layer, progress: ProgressArg, inverse: bool = False) -> None:
    """Compute the layer's sigma table S[v, j] = sigma(e_v + p_j) and its summaries (with
    `inverse`, also E_v[1/S[v, j]] and its percentile bands: the "paper" convention) under
    a progress bar, unless they are already kept on the layer (then nothing shows): the
    first analysis that needs them on a large model otherwise sits silent for seconds."""
    from detokgui.core.model.conventions import inverse_sigma_job, sigma_stats_job

    run_job(inverse_sigma_job(layer) if inverse else sigma_stats_job(layer), "sigma table",
            progress)
