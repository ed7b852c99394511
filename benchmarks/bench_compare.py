"""Memory of a model comparison (issue 20; not a test).

    python benchmarks/bench_compare.py [--checkpoint A_FOLDER --other B_FOLDER] [--queries N]

Two random GPT-2-small-sized checkpoints (V=50257, L=1024, d=768, 12 heads, the real
tokenizer; seeds 0 and 1) are written first unless given. Each measurement runs in a fresh
process, on the CPU, and reads the peak resident set size (ru_maxrss):

- A alone: load A, then everything the comparison computes for one model (A against
  itself: sigma table, positional patterns, top-10 keys of the query sample, the head
  metrics without a corpus);
- A and B: load A and B, then the comparison of A with B (matching and both models' head
  metrics).

Target (the issue): peak RSS of A and B <= 2.2x the peak RSS of A alone. Also printed: the
same ratio for the increase over the process before loading (the interpreter, torch and
transformers), which is what a second model can at most double.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 2.2


def child(folders: list[str], queries: int) -> None:
    import resource

    import torch  # noqa: F401  (imported before the baseline is read)
    import transformers  # noqa: F401

    from detokgui.core import Layer0
    from detokgui.core.base.progress import run
    from detokgui.core.compare.pair import Pair, iter_compare

    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    before = rss()
    t = time.perf_counter()
    layers = [Layer0.from_pretrained(f, device="cpu") for f in folders]
    loaded = rss()
    a, b = layers[0], layers[-1]
    res = run(iter_compare(Pair(a, b), n_queries=queries))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"before": before, "loaded": loaded, "after": rss(), "peak": peak,
                      "seconds": time.perf_counter() - t,
                      "assignment": res.matching.assignment}))


def measure(folders: list[Path], queries: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", *map(str, folders),
                          "--queries", str(queries)], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", help="model A: a GPT-2-small-sized checkpoint folder")
    ap.add_argument("--other", help="model B: another one")
    ap.add_argument("--queries", type=int, default=256, help="sampled query tokens (256)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.queries)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folders = []
        for given, seed in ((args.checkpoint, 0), (args.other, 1)):
            if given:
                folders.append(Path(given))
                continue
            from detokgui.core.model.sources.demo import write_random_checkpoint

            folders.append(write_random_checkpoint(Path(tmp) / f"m{seed}", n_embd=768,
                                                   n_head=12, n_positions=1024, seed=seed))
        alone = measure(folders[:1], args.queries)
        both = measure(folders, args.queries)

    def mb(n: int) -> str:
        return f"{n / 1e6:8.1f} MB"

    ratio = both["peak"] / alone["peak"]
    inc = (both["peak"] - both["before"]) / (alone["peak"] - alone["before"])
    print("Comparison memory, GPT-2-small-sized A and B, CPU, fp32, "
          f"{args.queries} query tokens; fresh process each")
    print(f"  process before loading       A alone {mb(alone['before'])}   A+B {mb(both['before'])}")
    print(f"  after loading                A alone {mb(alone['loaded'])}   A+B {mb(both['loaded'])}")
    print(f"  peak RSS                     A alone {mb(alone['peak'])}   A+B {mb(both['peak'])}")
    print(f"  time (load + compare)        A alone {alone['seconds']:8.1f} s    "
          f"A+B {both['seconds']:8.1f} s")
    print(f"  peak RSS ratio (A+B / A)     {ratio:.2f}x  (target <= {TARGET}x: "
          f"{'ok' if ratio <= TARGET else 'MISSED'})")
    print(f"  increase over the bare process, ratio  {inc:.2f}x")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
