"""How often "no match" fails between unrelated models, and what it still finds between
related ones: the head matching (`core.compare.pair`) of many pairs of independently
random-initialised GPT-2 checkpoints of several shapes, of the demo model against random
weights, of each model against itself, and of the demo model against copies of it whose
query and key weights carry growing noise. docs/math/compare.md quotes its output.

    python scripts/compare_null_check.py [--pairs 6] [--queries 256] [--alpha 0.05]

Unrelated pairs should have (almost) no matched pair: with the family-wise level alpha,
at most a share alpha of them any. A model against itself must match every head.
Checkpoints are written to a temporary folder and removed afterwards.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

#: (label, write_random_checkpoint arguments): GPT-2's vocabulary unless said; "flat":
#: the standard initialisation, whose near-zero scores give near-uniform patterns.
SHAPES = [
    ("d64 H4 L128", dict(n_embd=64, n_head=4, n_positions=128)),
    ("d128 H8 L128", dict(n_embd=128, n_head=8, n_positions=128)),
    ("d384 H12 L1024", dict(n_embd=384, n_head=12, n_positions=1024)),
    ("d48 H6 L64 V2000", dict(n_embd=48, n_head=6, n_positions=64, vocab_size=2000,
                              tokenizer=False)),
    ("d128 H8 L512 flat", dict(n_embd=128, n_head=8, n_positions=512, perturb=False)),
]


def main() -> int:
    from detokgui.core import Layer0
    from detokgui.core.compare.pair import Pair, match_heads
    from detokgui.core.model.sources.demo import write_random_checkpoint

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=6, help="unrelated pairs per shape")
    p.add_argument("--queries", type=int, default=256)
    p.add_argument("--alpha", type=float, default=0.05)
    args = p.parse_args()

    def row(label, a, b):
        t = time.perf_counter()
        m = match_heads(Pair(a, b), n_queries=args.queries, alpha=args.alpha)
        s = np.array([m.similarity[x, y] for x, y in m.assignment])
        t_ = np.array([m.threshold[x, y] for x, y in m.assignment])
        same = sum(x == y for x, y in m.matched_pairs)
        print(f"| {label} | {len(m.assignment)} | {sum(m.matched)} | {same} | {s.mean():.3f} | "
              f"{s.max():.3f} | {(s - t_).max():+.3f} | {m.threshold.min():.3f}–"
              f"{m.threshold.max():.3f} | {time.perf_counter() - t:.1f} |", flush=True)
        return sum(m.matched), len(m.assignment)

    print("| models | assigned | matched | of them a → a | mean S | max S | max S − θ | "
          "θ range | s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    demo = Layer0.from_pretrained("demo", device="cpu")
    unrelated = []
    with tempfile.TemporaryDirectory() as tmp:
        unrelated.append(row("demo vs random-demo", demo,
                             Layer0.from_pretrained("random-demo", device="cpu")))
        for label, kw in SHAPES:
            def load(seed, kw=kw, label=label):
                folder = Path(tmp) / f"{label}-{seed}".replace(" ", "_")
                write_random_checkpoint(folder, seed=seed, **kw)
                return Layer0.from_pretrained(str(folder), device="cpu")

            first = load(1000)
            row(f"{label}: itself", first, first)
            if kw.get("tokenizer", True):
                unrelated.append(row(f"demo vs {label}", demo, first))
            for i in range(args.pairs):
                a, b = (first, load(2000 + i)) if i == 0 else (load(3000 + i), load(4000 + i))
                unrelated.append(row(f"{label}: seeds {i}", a, b))
        for scale in (0.5, 1.0, 2.0, 4.0):
            row(f"demo vs demo + noise {scale:g} σ", demo,
                noisy_demo(Path(tmp) / f"noise{scale}", scale))
    hits = [m for m, _ in unrelated]
    print(f"\nunrelated pairs of models: {len(hits)}; with any matched pair of heads: "
          f"{sum(h > 0 for h in hits)}; matched pairs of heads: {sum(hits)} of "
          f"{sum(n for _, n in unrelated)}")
    return 0


def noisy_demo(folder: Path, scale: float):
    """The demo model with Gaussian noise of `scale` times the weights' standard deviation
    added to layer 0's query and key weights (seeded), loaded."""
    import shutil

    import torch
    from transformers import GPT2LMHeadModel

    from detokgui.core import Layer0
    from detokgui.core.model.sources.demo import demo_model_folder

    src = demo_model_folder()
    model = GPT2LMHeadModel.from_pretrained(str(src)).eval()
    w = model.transformer.h[0].attn.c_attn.weight  # [d, 3d]: q | k | v
    d = w.shape[0]
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        qk = w[:, : 2 * d]
        qk.add_(scale * qk.std() * torch.randn(qk.shape, generator=g))
    model.save_pretrained(folder)
    for f in ("vocab.json", "merges.txt", "tokenizer_config.json"):
        shutil.copy(src / f, folder / f)
    return Layer0.from_pretrained(str(folder), device="cpu")


if __name__ == "__main__":
    raise SystemExit(main())
