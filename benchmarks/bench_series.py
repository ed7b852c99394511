"""Training-series memory benchmark (not a test): RSS stays flat over a series.

    python benchmarks/bench_series.py [--checkpoints 10] [--d 384] [--figure rss.png]

Writes --checkpoints random GPT-2 checkpoints (d = --d, 12 heads, 1024 positions, the real
GPT-2 vocabulary size; a different seed each) into a temporary folder and runs
`core.compare.series.iter_series` over them on ONE local worker process (so that one process
loads, computes and frees every checkpoint in turn), without the disk cache. After each
checkpoint it prints the worker's resident memory (measured in the worker after it freed
the model) and this process's. Target: the worker's RSS after the last checkpoint is at
most 10% (+ 50 MB) above its RSS after the first, i.e. nothing accumulates per checkpoint.
Exit status 1 when missed. `--figure` draws both curves against the checkpoint number.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MB = 1 << 20
SLACK = 1.10
SLACK_BYTES = 50 * MB


def main(argv: list[str] | None = None) -> int:
    import psutil

    from detokgui.core.compare.series import iter_series
    from detokgui.core.model.sources.demo import write_random_checkpoint

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoints", type=int, default=10)
    p.add_argument("--d", type=int, default=384)
    p.add_argument("--queries", type=int, default=64)
    p.add_argument("--figure", type=Path, default=None, help="PNG of RSS per checkpoint")
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        ckpts = []
        for k in range(args.checkpoints):
            folder = Path(tmp) / f"step-{k:06d}"
            write_random_checkpoint(folder, n_embd=args.d, n_head=12, n_positions=1024,
                                    seed=k, tokenizer=(k == 0))
            if k:  # one tokenizer, shared by symlinks: the bytes on disk are the weights
                for f in (Path(tmp) / "step-000000").glob("*token*"):
                    (folder / f.name).symlink_to(f)
            ckpts.append(str(folder))
        print(f"{args.checkpoints} checkpoints, d = {args.d}, 12 heads, 1024 positions, "
              f"V = 50257; one worker; {args.queries} query tokens")
        me = psutil.Process()
        start = time.perf_counter()
        job = iter_series(ckpts, n_queries=args.queries, workers=1, use_cache=False)
        parent = []
        try:
            while True:
                progress = next(job)
                if "checkpoints:" in progress.message:
                    parent.append(me.memory_info().rss)
        except StopIteration as stop:
            result = stop.value
    worker = [result.worker_rss[i] for i in result.finish_order]
    print(f"{'checkpoint':>10} {'worker RSS MB':>14} {'parent RSS MB':>14}")
    for k, (w, q) in enumerate(zip(worker, parent)):
        print(f"{k:>10} {w / MB:>14.1f} {q / MB:>14.1f}")
    limit = worker[0] * SLACK + SLACK_BYTES
    ok = worker[-1] <= limit
    print(f"worker RSS first {worker[0] / MB:.1f} MB, last {worker[-1] / MB:.1f} MB, max "
          f"{max(worker) / MB:.1f} MB (limit {limit / MB:.1f} MB): {'ok' if ok else 'MISSED'}; "
          f"{time.perf_counter() - start:.0f} s")
    if args.figure is not None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(4.5, 2.6), layout="constrained")
        ax = fig.subplots()
        x = range(1, len(worker) + 1)
        ax.plot(x, [w / MB for w in worker], marker="o", label="worker (after freeing)")
        ax.plot(x, [q / MB for q in parent], marker="s", label="main process")
        ax.set_xlabel("checkpoints done")
        ax.set_ylabel("RSS (MB)")
        ax.set_ylim(bottom=0)
        ax.set_title(f"Training series, {len(worker)} checkpoints (d = {args.d}): RSS",
                     fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
        fig.savefig(args.figure, dpi=120)
        print(f"wrote {args.figure}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
