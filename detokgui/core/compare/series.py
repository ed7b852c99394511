"""A training series: the per-head metrics of `core.compare.head_metrics` for every checkpoint of a
model's training, so that one sees *when* a head (the previous-token head, the position
band) forms.

A series is a list of checkpoints (local folders, hub names, or `NAME@REV` where the hub
path supports revisions) with their training steps. Each checkpoint is independent work,
done by one worker task: load its Layer0, compute `iter_head_metrics` (prev_token_mass,
recent4_mass, head_class, median_self_rank, mean_bigram_auroc, spearman_te_count,
bqk_norm; one value per head h), return only those arrays (H floats per metric), free
the model. So memory stays flat however long the series, and the work spreads over

- a local `concurrent.futures.ProcessPoolExecutor` (spawn context) sized to the cores,
  the default, nothing to install; or
- an existing Dask distributed cluster (`scheduler="tcp://HOST:PORT"`, the optional
  extra `detokgui[cluster]`),

the pools of `core.base.pools`, which the corpus count uses too.

Both run the same task function with the same torch thread count per task, so they give
the same numbers. Results are cached per checkpoint (`core.base.diskcache`, folder "series"),
keyed by the model's content identity (`identity.model_identity`), the metric settings
(n_queries, seed) and the corpus counts' key: a second run, or a longer series sharing
checkpoints, computes only what is new.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from detokgui.core.base.checks import check_count
from detokgui.core.base.diskcache import Entry
from detokgui.core.base.errors import DetokError, InputError
from detokgui.core.base.pools import DaskPool, LocalPool, default_workers, task_threads
from detokgui.core.base.progress import Job, Progress, run
from detokgui.core.compare.head_metrics import DEFAULT_QUERIES, HEAD_METRICS, iter_head_metrics
from detokgui.core.corpus.counts import corpus_counts
from detokgui.core.corpus.spec import as_corpus
from detokgui.core.model.identity import model_identity
from detokgui.core.model.weights import Layer0

FORMAT = "detokgui-series-v1"
COLUMNS = ("checkpoint", "step", "head", "metric", "value")
_POLL_S = 0.05
_STEP_NAME = re.compile(r"(?:^|[-_@/])step[-_]?0*(\d+)$", re.IGNORECASE)


# --------------------------------------------------------------------------- the series


def parse_step(name: str) -> int | None:
    """The training step in a checkpoint's name: `.../step-000128`, `step_128`,
    `NAME@step128` give 128; None when the name holds none."""
    text = str(name).rstrip("/\\")
    if "@" in text:
        text = text.rsplit("@", 1)[1]
    else:
        text = Path(text).name
    m = _STEP_NAME.search(text)
    return int(m.group(1)) if m else None


def series_steps(checkpoints: Sequence[str], steps: Sequence[int] | None = None) -> list[int]:
    """The steps of `checkpoints`: `steps` as given (one per checkpoint), else parsed from
    the names when every name holds one (`parse_step`), else 0..n-1."""
    if steps is not None:
        steps = [int(s) for s in steps]
        if len(steps) != len(checkpoints):
            raise InputError(f"{len(steps)} steps were given for {len(checkpoints)} "
                             "checkpoints; give one step per checkpoint.")
        if any(s < 0 for s in steps):
            raise InputError("Training steps must be 0 or more.")
        return steps
    parsed = [parse_step(c) for c in checkpoints]
    if all(p is not None for p in parsed):
        return parsed  # type: ignore[return-value]
    return list(range(len(checkpoints)))


def is_series_folder(path: str | Path) -> bool:
    """A folder that is not itself a checkpoint but holds step-* checkpoint folders."""
    p = Path(path)
    return (p.is_dir() and not (p / "config.json").is_file()
            and any(_is_step_checkpoint(c) for c in p.iterdir()))


def _is_step_checkpoint(p: Path) -> bool:
    return p.is_dir() and parse_step(p.name) is not None and (p / "config.json").is_file()


def series_folder(path: str | Path) -> list[tuple[str, int]]:
    """(checkpoint folder, step) of the step-* sub-folders of a series folder (as
    `scripts/train_series.py` writes them), by step. Temporary folders of a writer still at
    work (`.step-*.part`) are not checkpoints and are left out."""
    p = Path(path)
    if not p.is_dir():
        raise InputError(f"{p} is not a folder.")
    found = sorted((parse_step(c.name), str(c)) for c in p.iterdir()
                   if not c.name.startswith(".") and _is_step_checkpoint(c))
    if not found:
        raise InputError(f"{p} holds no checkpoint folders named step-N (with a config.json).")
    return [(c, s) for s, c in found]


def expand_checkpoints(checkpoints: Sequence[str]) -> tuple[list[str], list[int] | None]:
    """The checkpoints with each series folder replaced by its step-* folders; the steps
    when every entry was a series folder (else None: `series_steps` decides)."""
    out: list[str] = []
    steps: list[int] = []
    all_folders = True
    for c in checkpoints:
        if is_series_folder(c):
            for folder, step in series_folder(c):
                out.append(folder)
                steps.append(step)
        else:
            all_folders = False
            out.append(str(c))
    return out, (steps if all_folders else None)


#: The linear part of the step axis: steps 0..1 take LINEAR_DECADES of a decade.
LINEAR_DECADES = 0.5


def step_position(step):
    """Where a step sits on the series' step axis (matplotlib's symlog with linthresh 1,
    linscale LINEAR_DECADES): x = LINEAR_DECADES * s for s <= 1, LINEAR_DECADES +
    log10(s) above; so step 0 sits at the left and 1, 10, 100, ... are equally spaced."""
    s = np.asarray(step, dtype=np.float64)
    return np.where(s <= 1, LINEAR_DECADES * s, LINEAR_DECADES + np.log10(np.maximum(s, 1)))


def step_ticks(max_step: int) -> list[tuple[float, str]]:
    """(position, label) ticks of the step axis up to `max_step`: 0, 1, 10, 100, ..."""
    ticks = [(0.0, "0"), (float(step_position(1)), "1")]
    p = 10
    while p <= max(10, max_step):
        ticks.append((float(step_position(p)), f"{p:,}"))
        p *= 10
    return ticks


@dataclass
class SeriesResult:
    """Per-head metrics per checkpoint: `values[i][metric]` is an array [H_i] for the
    checkpoint `checkpoints[i]` at `steps[i]`; `labels[i]` the head-class labels;
    `cached[i]` whether it came from the disk cache; `worker_rss[i]` the resident memory
    of the worker process that computed it, after it freed the model."""

    checkpoints: list[str]
    steps: list[int]
    values: list[dict[str, np.ndarray]]
    labels: list[list[str]]
    cached: list[bool] = field(default_factory=list)
    n_queries: int = DEFAULT_QUERIES
    seed: int = 0
    corpus_key: str | None = None
    worker_rss: list[int] = field(default_factory=list)  # bytes, after each checkpoint
    finish_order: list[int] = field(default_factory=list)  # checkpoint indices as they ended

    @property
    def n_heads(self) -> int:
        return max((len(v[HEAD_METRICS[0]]) for v in self.values), default=0)

    def metric(self, name: str) -> np.ndarray:
        """[checkpoint, head] array of one metric, in series order (NaN where a checkpoint
        has fewer heads)."""
        if name not in HEAD_METRICS:
            raise InputError(f"Unknown metric {name!r}; the metrics are {', '.join(HEAD_METRICS)}.")
        out = np.full((len(self.values), self.n_heads), np.nan)
        for i, v in enumerate(self.values):
            out[i, :len(v[name])] = v[name]
        return out

    def order(self) -> list[int]:
        """Checkpoint indices by step (stable)."""
        return sorted(range(len(self.steps)), key=lambda i: self.steps[i])

    def rows(self):
        """Tidy rows (checkpoint, step, head, metric, value), by step, then head, then
        metric in HEAD_METRICS order."""
        for i in self.order():
            v = self.values[i]
            for h in range(len(v[HEAD_METRICS[0]])):
                for m in HEAD_METRICS:
                    yield (self.checkpoints[i], self.steps[i], h, m, float(v[m][h]))

    def table(self):
        """(COLUMNS, rows) for `core.base.tables.write_csv`."""
        return list(COLUMNS), self.rows()

    def frame(self):
        import pandas as pd

        return pd.DataFrame(list(self.rows()), columns=list(COLUMNS))


# --------------------------------------------------------------------------- one checkpoint


def cache_entry(identity: str, n_queries: int, seed: int, corpus_key: str | None):
    """The disk-cache entry of one checkpoint's head metrics."""

    spec = json.dumps([FORMAT, identity, int(n_queries), int(seed), corpus_key,
                       list(HEAD_METRICS)])
    return Entry("series", hashlib.sha256(spec.encode()).hexdigest(), FORMAT,
                 {m: ((None,), "f") for m in HEAD_METRICS})


def checkpoint_metrics(source: str, corpus: Sequence[str] | None, n_queries: int, seed: int,
                       threads: int | None = None, use_cache: bool = True) -> dict:
    """One worker task: the head metrics of the checkpoint `source`, as a small picklable
    record {"values": {metric: float64 [H]}, "labels", "cached", "corpus_key", "rss"}.

    Loads the checkpoint's layer 0, counts the corpus with its tokenizer (core.corpus.counts's
    disk cache makes that once per corpus and tokenizer), computes, and frees the model
    before returning; `rss` is the process's resident memory after that (bytes)."""
    import gc

    import torch


    if threads:
        torch.set_num_threads(int(threads))
    layer = Layer0.from_pretrained(source, device="cpu")
    try:
        counts = None
        if corpus:

            # one process per checkpoint already: the corpus is counted in this one
            counts = corpus_counts(corpus, layer.tokenizer, layer.n_vocab,
                                   use_cache=use_cache, workers=1)
        corpus_key = counts.key if counts is not None else None
        entry = cache_entry(model_identity(layer), n_queries, seed, corpus_key)
        record = entry.load(lambda arrays, meta: {
            "values": {m: np.asarray(arrays[m], dtype=np.float64) for m in HEAD_METRICS},
            "labels": [str(x) for x in meta["labels"]]}) if use_cache else None
        cached = record is not None
        if record is None:
            with torch.inference_mode():
                hm = run(iter_head_metrics(layer, counts=counts, n_queries=n_queries, seed=seed))
            record = {"values": {m: np.asarray(hm[m], dtype=np.float64) for m in HEAD_METRICS},
                      "labels": list(hm.labels)}
            if use_cache:
                entry.save(record["values"], labels=record["labels"], checkpoint=str(source))
    finally:
        del layer
        counts = None
        gc.collect()
    return {**record, "cached": cached, "corpus_key": corpus_key, "rss": _rss()}


def _rss() -> int:
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except ImportError:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


# --------------------------------------------------------------------------- executors


def iter_series(checkpoints: Sequence[str], steps: Sequence[int] | None = None, *,
                corpus: Sequence[str] | str | None = None, n_queries: int = DEFAULT_QUERIES,
                seed: int = 0, scheduler=None, workers: int | None = None,
                threads: int | None = None, use_cache: bool = True) -> Job[SeriesResult]:
    """Generator job: the head metrics of every checkpoint of a series (`SeriesResult`).

    `checkpoints`: folders, hub names or NAME@REV (a series folder stands for its step-*
    sub-folders); `steps` one per checkpoint (default `series_steps`). `corpus`: paths of
    a corpus for the corpus metrics (else NaN). One checkpoint per task, on a local spawn
    process pool of `workers` processes (default: the cores, at most one per checkpoint)
    or, with `scheduler` (an address "tcp://host:port" or a distributed.Client), on a Dask
    cluster. `threads`: torch threads per task (default: local cores // workers; 1 on
    Dask). At most `capacity` tasks are in flight; progress is reported as checkpoints
    finish. Closing the job (Cancel) stops submitting and cancels the pending tasks."""

    if isinstance(checkpoints, str):
        checkpoints = [checkpoints]
    names, folder_steps = expand_checkpoints(list(checkpoints))
    if not names:
        raise InputError("A training series needs at least one checkpoint.")
    step_list = series_steps(names, steps if steps is not None else folder_steps)
    n_queries = check_count(n_queries, "number of sampled query tokens")
    corpus_paths = as_corpus(corpus) if corpus else None
    if scheduler is not None:
        pool = DaskPool(scheduler)
        per_task = threads or 1
    else:
        n = workers if workers is not None else default_workers()
        n = max(1, min(check_count(n, "number of workers"), len(names)))
        pool = LocalPool(n)
        per_task = threads or task_threads(n)
    total = len(names)
    results: list[dict | None] = [None] * total
    pending: dict = {}
    next_i = 0
    done = 0
    finish_order: list[int] = []
    finished = False
    yield Progress(0.0, f"0/{total} checkpoints")
    try:
        while done < total:
            while next_i < total and len(pending) < pool.capacity:
                fut = pool.submit(checkpoint_metrics, names[next_i], corpus_paths, n_queries,
                                  seed, per_task, use_cache)
                pending[fut] = next_i
                next_i += 1
            ready = [f for f in pending if f.done()]
            if not ready:
                time.sleep(_POLL_S)
                yield Progress(done / total, f"{done}/{total} checkpoints")
                continue
            for fut in ready:
                i = pending.pop(fut)
                try:
                    results[i] = fut.result()
                except DetokError as exc:  # a worker's one-line message, naming the checkpoint
                    if names[i] in str(exc):
                        raise
                    raise type(exc)(f"{names[i]}: {exc}") from None
                done += 1
                finish_order.append(i)
                yield Progress(done / total, f"{done}/{total} checkpoints: {names[i]} "
                               f"(step {step_list[i]}{', cached' if results[i]['cached'] else ''})")
        finished = True
    finally:
        for fut in pending:
            fut.cancel()
        pool.close(cancel=not finished)
    keys = {r["corpus_key"] for r in results if r is not None}
    return SeriesResult(
        checkpoints=names, steps=step_list,
        values=[r["values"] for r in results], labels=[r["labels"] for r in results],
        cached=[bool(r["cached"]) for r in results], n_queries=n_queries, seed=int(seed),
        corpus_key=keys.pop() if len(keys) == 1 else None,
        worker_rss=[int(r["rss"]) for r in results], finish_order=finish_order)
