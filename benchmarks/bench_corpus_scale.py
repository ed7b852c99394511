"""Corpus counting at scale (issue 43; not a test).

    python benchmarks/bench_corpus_scale.py [--size-mb 1000] [--workers N] [--no-dask]
                                            [--repeats 1] [--folder DIR]

Builds a corpus of about --size-mb megabytes of text (default 1000, ~1 GB) from the
packaged sample corpus in a temporary folder (or DIR, kept): half as parquet shards (row
groups of about 8 MB), half as .jsonl.zst shards, 8 shards in all; then, with the real
GPT-2 tokenizer (V = 50257), each count in an empty cache folder of its own (its pieces
written as in a real run, nothing read back; workers started inside the timed span),
prints as ratios measured in one run:

1. one worker (`corpus_counts(..., workers=1)`: reading, tokenizing, counting in this
   process) against the bare fast tokenizer on the same documents in one process (the
   time of its `encode_batch_fast` calls alone, documents read outside the clock), in
   tokens per second. Target: >= 0.8x.
2. N worker processes (default: one per core) against N x one worker. Target: >= 0.8.
3. a Dask LocalCluster of N single-threaded worker processes against the local pool of N.
   Target: within 15% (>= 0.85x).

It prints the peak resident memory of a counting worker (the bound is stated in
`core.corpus.pieces`: about 5 x 16 bytes x FLUSH_BIGRAMS for the counts, plus the
tokenizer and one batch of text), the per-core rate, and the time OpenWebText's 9 billion
GPT-2 tokens would take on 2, 16 and 64 cores at that rate and the measured parallel
efficiency. The corpus repeats the sample's 3 MB of text, so it has far fewer distinct
bigrams than real web text of that size: memory and merging are lighter here than on
OpenWebText (the flush bound caps a worker's share either way). Exit status 1 when a
target is missed; how busy the cores were before the start is printed (other processes
lower every ratio that involves more than one core).
"""

from __future__ import annotations

import os

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

from run import busy_cores, cpu_name

TARGETS = {"one": 0.8, "parallel": 0.8, "dask": 0.85}
OWT_TOKENS = 9e9
SHARDS = 8


def build_corpus(folder: Path, size_mb: float) -> list[Path]:
    """About `size_mb` MB of text in SHARDS shards, parquet and .jsonl.zst in turn."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard

    from detokgui.core.model.sources.demo import sample_corpus

    with gzip.open(sample_corpus(), "rt", encoding="utf-8") as f:
        docs = [json.loads(line)["text"] for line in f]
    # cut the long books into web-page-sized documents of about 4,000 characters
    pieces = []
    for d in docs:
        for a in range(0, len(d), 4000):
            pieces.append(d[a:a + 4000])
    per_shard = size_mb * 1e6 / SHARDS
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(SHARDS):
        chosen, n, i = [], 0, k * 997
        while n < per_shard:
            t = pieces[i % len(pieces)]
            chosen.append(t)
            n += len(t)
            i += 1
        if k % 2 == 0:
            path = folder / f"shard-{k:02d}.parquet"
            rows = max(1, int(8e6 / (n / len(chosen))))
            pq.write_table(pa.table({"text": chosen}), path, row_group_size=rows)
        else:
            path = folder / f"shard-{k:02d}.jsonl.zst"
            with open(path, "wb") as raw, zstandard.ZstdCompressor(level=3).stream_writer(
                    raw) as w:
                for t in chosen:
                    w.write((json.dumps({"text": t}) + "\n").encode())
        paths.append(path)
    return paths


def bare_tokenizer(paths, tok) -> tuple[float, int, int]:
    """(seconds in encode_batch_fast, tokens, characters) over the corpus's documents."""
    from detokgui.core.corpus.pieces import BATCH_CHARS
    from detokgui.core.corpus.readers import read_documents
    from detokgui.core.model.fast_tokenizer import encode_backend

    backend = tok.backend_tokenizer
    spent, tokens, chars = 0.0, 0, 0
    for path in paths:
        batch, size = [], 0
        for doc in read_documents(path):
            batch.append(doc.text)
            size += len(doc.text)
            if size >= BATCH_CHARS:
                t = time.perf_counter()
                ids = encode_backend(backend, batch)
                spent += time.perf_counter() - t
                tokens += sum(map(len, ids))
                chars += size
                batch, size = [], 0
        if batch:
            t = time.perf_counter()
            ids = encode_backend(backend, batch)
            spent += time.perf_counter() - t
            tokens += sum(map(len, ids))
            chars += size
    return spent, tokens, chars


def timed_count(paths, tok, cache: Path, cluster_workers: int = 0, **options):
    """(seconds, counts) of a count with the cache on, in the empty cache folder `cache`
    (its pieces are written as in a real run; nothing is read back). With
    `cluster_workers`, on a Dask LocalCluster of that many processes started inside the
    timed span, as the local pool's processes are."""
    from detokgui.core.corpus.counts import corpus_counts

    os.environ["DETOKGUI_CACHE_DIR"] = str(cache)
    t = time.perf_counter()
    if cluster_workers:
        import distributed

        with distributed.LocalCluster(n_workers=cluster_workers, processes=True,
                                      threads_per_worker=1, dashboard_address=None) as c:
            counts = corpus_counts(paths, tok, scheduler=c.scheduler_address, **options)
    else:
        counts = corpus_counts(paths, tok, **options)
    return time.perf_counter() - t, counts


def hours(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mb", type=float, default=1000.0,
                    help="megabytes of text in the corpus (default 1000)")
    ap.add_argument("--workers", type=int, default=None,
                    help="worker processes (default: one per core)")
    ap.add_argument("--no-dask", action="store_true", help="leave out the Dask comparison")
    ap.add_argument("--repeats", type=int, default=1,
                    help="runs of each measurement, in turns; the best is used (default 1)")
    ap.add_argument("--folder", default=None, help="build (or reuse) the corpus here, kept")
    args = ap.parse_args(argv)

    from detokgui.core.base.pools import default_workers
    from detokgui.core.corpus.pieces import FLUSH_BIGRAMS
    from detokgui.core.model.tokens import gpt2_tokenizer

    n = args.workers or default_workers()
    busy = busy_cores()
    print(f"CPU: {cpu_name()}, {default_workers()} cores for this process; {busy:.1f} cores "
          "busy with other work before the start")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["DETOKGUI_CACHE_DIR"] = str(Path(tmp) / "cache0")  # never the user's cache
        folder = Path(args.folder) if args.folder else Path(tmp) / "corpus"
        t = time.perf_counter()
        existing = sorted(folder.glob("shard-*")) if folder.exists() else []
        paths = existing or build_corpus(folder, args.size_mb)
        stored = sum(p.stat().st_size for p in paths)
        print(f"corpus: {len(paths)} shards (parquet and .jsonl.zst), {stored / 1e6:,.0f} MB "
              f"stored ({time.perf_counter() - t:.0f} s to build or find)")
        tok = gpt2_tokenizer()
        runs = {"bare": [], "one": [], "par": [], "dask": []}
        for r in range(args.repeats):  # in turns, so that load that comes and goes hits all
            runs["bare"].append(bare_tokenizer(paths, tok))
            runs["one"].append(timed_count(paths, tok, Path(tmp) / f"c1-{r}", workers=1))
            runs["par"].append(timed_count(paths, tok, Path(tmp) / f"c2-{r}", workers=n))
            if not args.no_dask:
                runs["dask"].append(timed_count(paths, tok, Path(tmp) / f"c3-{r}",
                                                cluster_workers=n))
        bare_s, bare_tokens, chars = min(runs["bare"])
        (one_s, one), (par_s, par) = (min(runs[k], key=lambda x: x[0]) for k in ("one", "par"))
        bare_rate = bare_tokens / bare_s
        print(f"  {chars / 1e6:,.0f} M characters, {bare_tokens / 1e6:,.1f} M GPT-2 tokens; "
              f"best of {args.repeats} run{'s' * (args.repeats != 1)} each")
        print(f"bare fast tokenizer, one process:  {bare_s:7.1f} s  "
              f"{bare_rate / 1e6:.3f} M tokens/s")
        assert one.n_tokens == bare_tokens, (one.n_tokens, bare_tokens)
        one_rate = one.n_tokens / one_s
        r_one = one_rate / bare_rate
        print(f"one worker (in this process):      {one_s:7.1f} s  {one_rate / 1e6:.3f} M "
              f"tokens/s  -> {r_one:.2f}x the bare tokenizer (target >= {TARGETS['one']}x); "
              f"peak memory of the process {one.peak_rss / 1e6:,.0f} MB")
        par_rate = par.n_tokens / par_s
        r_par = par_rate / (n * one_rate)
        print(f"{n} worker processes:                {par_s:7.1f} s  {par_rate / 1e6:.3f} M "
              f"tokens/s  -> {r_par:.2f} x {n} x one worker's (target >= "
              f"{TARGETS['parallel']}); peak memory of a worker {par.peak_rss / 1e6:,.0f} MB")
        same = (par.unigrams == one.unigrams).all() and (par.bigrams != one.bigrams).nnz == 0
        print(f"  counts identical to one worker's: {bool(same)}; {par.pieces_counted} pieces, "
              f"{par.n_distinct_bigrams:,} distinct bigrams")
        r_dask = None
        if runs["dask"]:
            dask_s, dask = min(runs["dask"], key=lambda x: x[0])
            r_dask = par_s / dask_s
            same = (dask.unigrams == one.unigrams).all() and (dask.bigrams != one.bigrams).nnz == 0
            print(f"Dask LocalCluster, {n} workers:      {dask_s:7.1f} s  -> {r_dask:.2f}x the "
                  f"local pool's speed (target >= {TARGETS['dask']}x); counts identical: "
                  f"{bool(same)}; peak memory of a worker {dask.peak_rss / 1e6:,.0f} MB")

    bound = 5 * 16 * FLUSH_BIGRAMS
    print(f"worker memory bound (counts): 5 x 16 B x FLUSH_BIGRAMS ({FLUSH_BIGRAMS:,}) = "
          f"{bound / 1e6:,.0f} MB, plus the tokenizer and a batch of text")
    efficiency = min(1.0, r_par)
    print(f"per-core rate: {one_rate / 1e6:.3f} M tokens/s; OpenWebText (9e9 tokens) at the "
          f"target efficiency {TARGETS['parallel']} / at the measured {efficiency:.2f}:")
    for cores in (2, 16, 64):
        print(f"  {cores:3d} cores: "
              f"{hours(OWT_TOKENS / (one_rate * cores * TARGETS['parallel']))} / "
              f"{hours(OWT_TOKENS / (one_rate * cores * efficiency))}")
    missed = [k for k, r in (("one", r_one), ("parallel", r_par), ("dask", r_dask))
              if r is not None and r < TARGETS[k]]
    if busy > 0.3:
        print(f"\nwarning: {busy:.1f} cores were busy with other processes; the parallel "
              "ratios are low by that much")
    print("\nall targets met" if not missed else f"\nmissed: {', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
