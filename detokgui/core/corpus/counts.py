"""Unigram and bigram counts of a user corpus, counted in pieces by worker processes (or on
a Dask cluster), resumable, cached on disk (docs/math/text-side.md#c4-corpus-counts,
docs/large-corpora.md).

    unigrams[t]        = number of times token t occurs
    bigrams[v, u]      = c(v, u): number of times token u directly follows token v
                         inside one document (never across two documents)

Documents come from `core.corpus.readers` (a jsonl line's text field, a .txt part between
`<|endoftext|>` lines, a parquet or arrow row's text column), tokenised by the model's own
tokenizer without special tokens. Bigram counts are a `scipy.sparse.csr_array` [V, V]
(rows = previous token): a corpus has far fewer distinct bigrams than V^2.

How a corpus is counted (`iter_corpus_counts`):

1. Every corpus file (shard) is hashed (SHA-256) and planned into pieces of about
   PIECE_BYTES of text (`readers.plan_shard`); its first document is read, so that most
   bad input is refused before anything is counted. This survey is kept in the cache by
   the file's stamp (path, device, inode, size, times), so a second run does not hash
   the files again.
2. The whole corpus's key is made of the files' hashes, sizes and kinds (not their names
   or order), the tokenizer's identity, V and the text column; counts kept under it are
   returned at once.
3. Otherwise each piece not yet in the cache is counted (`pieces.count_piece`): in this
   process when one worker is asked for (or one piece is left), else on a local pool of
   `workers` processes (default: one per core) or, with `scheduler`, on a Dask cluster
   (`core.base.pools`, the seam the training series uses). Each finished piece is kept
   in the cache at once (atomically), so a killed run counts only the pieces it had not
   finished, and a changed file only its own pieces.
4. The pieces' counts are added up. Counts are integers, so the result is the same bit
   for bit whatever the number of workers or the order in which pieces finish.

Progress gives the stored bytes read, their rate, tokens per second and the time left;
stopping the job (Cancel, Ctrl+C) tells the workers to stop (they check between tokenizer
calls) and keeps the finished pieces. A file that changes while it is hashed or read is
refused (InputError) and nothing of it is kept; bad input of one file leaves the finished
pieces of the other files in the cache, so a corrected corpus resumes.

A counts file (`core.corpus.countsfile`, `.npz`) among the paths stands for its counts.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections import deque
from functools import partial
from pathlib import Path

import numpy as np
from scipy import sparse

from detokgui.core.base.diskcache import Entry
from detokgui.core.base.errors import InputError
from detokgui.core.base.pools import default_workers, make_pool
from detokgui.core.base.progress import Job, Progress, rescaled, run
from detokgui.core.corpus.countsfile import read_counts
from detokgui.core.corpus.documents import scan_corpus
from detokgui.core.corpus.pieces import (
    FLUSH_BIGRAMS,
    Accumulator,
    Piece,
    PieceCounts,
    Shard,
    TokenizerSpec,
    count_piece,
    iter_count_piece,
    load_piece,
    piece_entry,
    piece_key,
    read_piece,
    survey_shard,
)
from detokgui.core.corpus.readers import (
    PIECE_CHARS,
    PlannedPiece,
    Unit,
    file_stamp,
    kind_of,
)
from detokgui.core.corpus.result import CorpusCounts, csr_of
from detokgui.core.corpus.spec import as_corpus
from detokgui.core.model.identity import tokenizer_identity
from detokgui.core.model.tokens import BYTE_LEVEL, scheme

__all__ = ["FORMAT", "PIECE_BYTES", "CorpusCounts", "corpus_counts", "iter_corpus_counts",
           "iter_layer_counts", "layer_corpus_counts", "tokenizer_key"]

log = logging.getLogger("detokgui.corpus")
FORMAT = "detokgui-corpus-counts-v2"
SURVEY_FORMAT = "detokgui-corpus-survey-v1"
PIECE_BYTES = 64 << 20  # text per piece: a few seconds of one core's tokenizing per MB
#: Less stored text than this to count is counted in this process unless workers are asked
#: for: starting worker processes costs about a second.
PARALLEL_MIN_BYTES = 16 << 20
_PROGRESS_SECONDS = 0.1
_POLL_SECONDS = 0.02


# --------------------------------------------------------------------------- the tokenizer


def tokenizer_key(tokenizer) -> str:
    """The identity of everything that decides the ids a tokenizer gives: its full
    definition (`identity.tokenizer_identity`), and for a sentencepiece model the model
    itself (its scores and normaliser)."""
    ident = tokenizer_identity(tokenizer)
    sp = getattr(tokenizer, "sp_model", None)
    if sp is None:
        return ident
    extra = hashlib.sha256(sp.serialized_model_proto()).hexdigest()
    return hashlib.sha256(f"{ident}|{extra}".encode()).hexdigest()


def tokenizer_spec(tokenizer, key: str | None = None) -> TokenizerSpec:
    """What a worker process needs to tokenize as `tokenizer` does (its fast form's JSON;
    None when it has none); `key`: its `tokenizer_key`, when known."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    return TokenizerSpec(key or tokenizer_key(tokenizer),
                         backend.to_str() if backend is not None else None,
                         scheme(tokenizer) == BYTE_LEVEL)


# --------------------------------------------------------------------------- survey


def _survey_entry(path: str, kind: str, stamp: tuple, text_column: str,
                  piece_bytes: int) -> Entry:
    spec = json.dumps([SURVEY_FORMAT, os.path.realpath(path), list(stamp), kind, text_column,
                       int(piece_bytes)])
    return Entry("corpus-survey", hashlib.sha256(spec.encode()).hexdigest(), SURVEY_FORMAT, {})


def _save_survey(entry: Entry, shard: Shard) -> None:
    entry.save({}, digest=shard.digest, size=shard.size, plan=[
        [p.start, p.end, p.weight, [list(u.__dict__.values()) for u in p.units]]
        for p in shard.plan])


def _load_survey(entry: Entry, path: str, kind: str, stamp: tuple) -> Shard | None:
    def build(arrays, meta) -> Shard:
        plan = tuple(PlannedPiece(int(a), None if b is None else int(b), int(w),
                                  tuple(Unit(*map(int, u)) for u in units))
                     for a, b, w, units in meta["plan"])
        return Shard(path, kind, str(meta["digest"]), int(meta["size"]), tuple(stamp), plan)

    return entry.load(build)


# --------------------------------------------------------------------------- progress


def _size(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:.0f} B"


def _duration(s: float) -> str:
    s = round(s)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class _Meter:
    """The progress of a count: stored bytes done (finished pieces, including those from
    the cache, and the running pieces' reported share), the rates of this run, the time
    left."""

    def __init__(self, total: int, processes: int):
        self.total = max(1, total)
        self.processes = processes
        self.done = 0.0  # stored bytes of finished pieces (weight x share read)
        self.cached = 0.0
        self.chars = 0
        self.tokens = 0
        self.running: dict[str, tuple[float, float, int, int]] = {}  # key -> weight, share,
        self.start = time.monotonic()                              # chars, tokens

    def report(self, key: str, weight: float, share: float, chars: int, tokens: int) -> None:
        self.running[key] = (weight, share, chars, tokens)

    def finish(self, key: str, weight: float, chars: int, tokens: int,
               cached: bool = False) -> None:
        self.running.pop(key, None)
        self.done += weight
        if cached:
            self.cached += weight
        else:
            self.chars += chars
            self.tokens += tokens

    def progress(self, lo: float, hi: float, pieces: str) -> Progress:
        """Progress mapped into [lo, hi]: "counting: 412 MB/1.0 GB, 6.1 MB/s, 1.52 M
        tokens/s, 1 min 40 s left (2 processes; 3 pieces counted)"."""
        running = sum(w * s for w, s, _, _ in self.running.values())
        tokens = self.tokens + sum(t for *_, t in self.running.values())
        done = min(self.total, self.done + running)
        elapsed = max(1e-9, time.monotonic() - self.start)
        counted = done - self.cached
        rate = counted / elapsed
        message = f"counting: {_size(done)}/{_size(self.total)}"
        if counted > 0 and elapsed >= 1.0:
            left = (self.total - done) / rate if rate > 0 else float("inf")
            message += (f", {rate / 1e6:,.1f} MB/s, {tokens / elapsed / 1e6:,.2f} M tokens/s, "
                        f"{_duration(left) if left != float('inf') else '?'} left")
        processes = f"{self.processes} processes; " if self.processes > 1 else ""
        return Progress(lo + (hi - lo) * done / self.total, f"{message} ({processes}{pieces})")


# --------------------------------------------------------------------------- counting


def iter_corpus_counts(paths, tokenizer, n_vocab: int | None = None, *,
                       use_cache: bool = True, workers: int | None = None, scheduler=None,
                       text_column: str | None = None, piece_bytes: int = PIECE_BYTES,
                       flush_bigrams: int = FLUSH_BIGRAMS, model: str = ""
                       ) -> Job[CorpusCounts]:
    """Generator job: unigram and bigram counts of the corpus at `paths` (files, folders,
    glob patterns, a `spec.Corpus`; see the module docstring and `core.corpus.documents`),
    tokenised by `tokenizer` into ids below `n_vocab` (default: the tokenizer's size).

    `workers` processes count it (default: the Corpus's, else one per core; 1: in this
    process), or the Dask cluster at `scheduler`; `text_column` names the text of parquet,
    arrow and jsonl files (default "text"). `piece_bytes` and `flush_bigrams` set the
    pieces' size and the distinct bigrams a worker holds before it hands its counts on.
    With `use_cache` False nothing is read from or written to the cache.

    A counts file (.npz) among the paths is read instead (checked against the tokenizer
    and V; `model` names the model in the message when they differ). Raises InputError
    (one line naming the file and place) for bad input. A corpus without any bigram has
    unigram counts and an empty `bigrams`; what needs bigrams refuses it
    (`CorpusCounts.require_bigrams`)."""
    if tokenizer is None:
        raise InputError("The model has no tokenizer files, so a corpus cannot be tokenized.")
    V = int(n_vocab) if n_vocab is not None else len(tokenizer)
    corpus = as_corpus(paths, text_column=text_column, workers=workers, scheduler=scheduler)
    scan = scan_corpus(corpus)
    key_of_tokenizer = tokenizer_key(tokenizer)
    if scan.counts:
        if scan.files:
            raise InputError(f"{scan.counts[0]} is a counts file: it cannot be mixed with "
                             "corpus texts; give the counts files alone, or the texts.")
        counts = _read_counts_files(scan.counts, key_of_tokenizer, V, model)
        yield Progress(1.0, "corpus counts (from the counts file)")
        return counts
    count = _Count(corpus, tokenizer, V, key_of_tokenizer, use_cache, piece_bytes,
                   flush_bigrams)
    try:
        result = yield from count.run(scan.files)
    finally:
        count.close()
    return result


class _Count:
    """One corpus count: the state `iter_corpus_counts` keeps while it runs."""

    def __init__(self, corpus, tokenizer, V, key_of_tokenizer, use_cache, piece_bytes,
                 flush_bigrams):
        self.corpus, self.tokenizer, self.V = corpus, tokenizer, V
        self.tok_key = key_of_tokenizer
        self.use_cache = use_cache
        self.piece_bytes, self.flush_bigrams = int(piece_bytes), int(flush_bigrams)
        self.scheduler = corpus.scheduler
        self.asked = corpus.workers is not None
        self.workers = corpus.workers if self.asked else default_workers()
        self.pool = None
        self.finished = False
        self.spec: TokenizerSpec | None = None

    # ---------------------------------------------------------------- the pool

    def _pool(self):
        if self.pool is None:
            self.pool = make_pool(self.workers, self.scheduler)
        return self.pool

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close(cancel=not self.finished)
            self.pool = None

    def _parallel(self, n_tasks: int, size: float) -> bool:
        if self.scheduler is not None:
            return True
        return self.workers > 1 and n_tasks > 1 and (self.asked or size >= PARALLEL_MIN_BYTES)

    # ---------------------------------------------------------------- steps

    def run(self, files: list[Path]) -> Job[CorpusCounts]:
        column = self.corpus.text_column
        shards = yield from self._survey(files)
        inputs = tuple((s.path, s.digest, s.size, s.kind) for s in shards)
        spec = [FORMAT, self.tok_key, self.V, column,
                sorted((s.digest, s.size, s.kind) for s in shards)]
        key = hashlib.sha256(json.dumps(spec).encode()).hexdigest()
        entry = _entry(key, self.V)
        files_ = tuple(s.path for s in shards)
        if self.use_cache:
            cached = entry.load(partial(_from_entry, key=key, files=files_, inputs=inputs,
                                        column=column, tok_key=self.tok_key))
            if cached is not None:
                self.finished = True
                yield Progress(1.0, "corpus counts (cached)")
                return cached
        base = json.dumps([self.tok_key, self.V, column])
        pieces = [Piece(i, s.path, s.kind, p.start, p.end, p.weight, s.digest, s.stamp,
                        column, piece_key(base, s.kind, s.digest, p.start, p.end,
                                          self.flush_bigrams), p.units)
                  for i, s in enumerate(shards) for p in s.plan]
        total = Accumulator(self.V)
        meter = _Meter(sum(s.size for s in shards), 1)
        todo, n_cached = self._from_cache(pieces, base, total, meter)
        self.spec = tokenizer_spec(self.tokenizer, self.tok_key)
        n_counted, peak = yield from self._count(todo, base, total, meter, n_cached)
        keys, counts_ = total.keys_counts()
        counts = CorpusCounts(total.unigrams, csr_of(keys, counts_, self.V), total.n_tokens,
                              total.n_documents, files_, key, inputs=inputs,
                              text_column=column, tokenizer_key=self.tok_key,
                              pieces_counted=n_counted, pieces_cached=n_cached, peak_rss=peak)
        if self.use_cache:
            _save(entry, counts)
        self.finished = True
        yield Progress(1.0, f"counted {counts.n_tokens:,} tokens in {counts.n_documents:,} "
                            f"documents")
        return counts

    def _survey(self, files: list[Path]) -> Job[list[Shard]]:
        """Every file's Shard, from the cache by its stamp or surveyed (in worker tasks
        when the count runs in parallel)."""
        column = self.corpus.text_column
        shards: list[Shard | None] = [None] * len(files)
        todo = []
        for i, f in enumerate(files):
            kind = kind_of(f)
            stamp = tuple(file_stamp(f))
            entry = _survey_entry(str(f), kind, stamp, column, self.piece_bytes)
            got = _load_survey(entry, str(f), kind, stamp) if self.use_cache else None
            if got is None:
                todo.append((i, str(f), kind, entry))
            else:
                shards[i] = got
        total = sum(os.stat(f).st_size for _, f, _, _ in todo) or 1
        done = 0
        if todo and self._parallel(len(todo), total):
            pool = self._pool()
            futures = {pool.submit(survey_shard, f, kind, column, self.piece_bytes): (i, entry)
                       for i, f, kind, entry in todo}
            yield Progress(0.0, f"hashing {len(todo)} corpus files")
            while futures:
                ready = [fut for fut in futures if fut.done()]
                if not ready:
                    time.sleep(_POLL_SECONDS)
                    yield Progress(0.0, f"hashing the corpus files: {_size(done)} of "
                                        f"{_size(total)}")
                    continue
                for fut in ready:
                    i, entry = futures.pop(fut)
                    shards[i] = fut.result()
                    done += shards[i].size
                    if self.use_cache:
                        _save_survey(entry, shards[i])
        else:
            for i, f, kind, entry in todo:
                yield Progress(0.0, f"hashing {Path(f).name}")
                shards[i] = survey_shard(f, kind, column, self.piece_bytes)
                if self.use_cache:
                    _save_survey(entry, shards[i])
        return shards

    def _from_cache(self, pieces: list[Piece], base: str, total: Accumulator,
                    meter: _Meter) -> tuple[deque, int]:
        """Add the finished pieces kept in the cache (following each piece's chain of
        stops); return the pieces left to count and how many were cached."""
        todo: deque = deque()
        n_cached = 0
        for piece in pieces:
            while True:
                got = load_piece(piece.key, self.V) if self.use_cache else None
                if got is None:
                    todo.append(piece)
                    break
                n_cached += 1
                done = piece.weight * got.fraction
                _add(total, got)
                meter.finish(piece.key, done, got.text_chars, got.n_tokens, cached=True)
                if got.stop is None:
                    break
                piece = self._rest(piece, got.stop, piece.weight - done, base)
        return todo, n_cached

    def _rest(self, piece: Piece, stop: int, weight: float, base: str) -> Piece:
        return piece.rest(stop, int(weight), piece_key(base, piece.kind, piece.digest, stop,
                                                       piece.end, self.flush_bigrams))

    def _finished(self, piece: Piece, blob: bytes, total: Accumulator, meter: _Meter,
                  todo: deque, base: str) -> PieceCounts:
        got = read_piece(piece.key, blob, self.V)
        if self.use_cache:
            piece_entry(piece.key).write(blob)
        _add(total, got)
        done = piece.weight * got.fraction
        meter.finish(piece.key, done, got.text_chars, got.n_tokens)
        if got.stop is not None:
            todo.appendleft(self._rest(piece, got.stop, piece.weight - done, base))
        return got

    def _count(self, todo: deque, base: str, total: Accumulator, meter: _Meter,
               n_cached: int) -> Job[tuple[int, int]]:
        """Count the pieces of `todo` (and the rests of those that stop early); returns
        (pieces counted, the largest peak memory of a counting process)."""
        n_counted, peak = 0, 0
        wanted = self._parallel(len(todo), sum(p.weight for p in todo))
        parallel = wanted and self.spec.json is not None
        if wanted and self.spec.json is None:
            if self.scheduler is not None:
                raise InputError("The model's tokenizer has no fast (Rust) form to send to "
                                 "the Dask workers; count this corpus without a scheduler.")
            log.info("the model's tokenizer has no fast form; the corpus is counted in this "
                     "process")
        last = 0.0

        def pieces_line() -> str:
            return (f"{n_counted} piece{'s' * (n_counted != 1)} counted"
                    + (f", {n_cached} from the cache" if n_cached else ""))

        if not parallel:
            while todo:
                piece = todo.popleft()
                job = iter_count_piece(piece, self.spec, self.V, tokenizer=self.tokenizer,
                                       flush_bigrams=self.flush_bigrams,
                                       piece_chars=PIECE_CHARS, compress=self.use_cache)
                while True:
                    try:
                        share, chars, tokens = next(job)
                    except StopIteration as stop:
                        result = stop.value
                        break
                    meter.report(piece.key, piece.weight, share, chars, tokens)
                    now = time.monotonic()
                    if now - last >= _PROGRESS_SECONDS:
                        last = now
                        yield meter.progress(0.02, 1.0, pieces_line())
                self._finished(piece, result.blob, total, meter, todo, base)
                n_counted += 1
                peak = max(peak, result.peak_rss)
                yield meter.progress(0.02, 1.0, pieces_line())
            return n_counted, peak

        pool = self._pool()
        meter.processes = pool.capacity
        running: dict = {}
        while todo or running:
            while todo and len(running) < pool.capacity:
                piece = todo.popleft()
                fut = pool.submit(count_piece, piece, self.spec, self.V, self.flush_bigrams,
                                  PIECE_CHARS, self.use_cache, pool.control)
                running[fut] = piece
            for key, share, chars, tokens in pool.reports():
                piece = next((p for p in running.values() if p.key == key), None)
                if piece is not None:
                    meter.report(key, piece.weight, share, chars, tokens)
            ready = [fut for fut in running if fut.done()]
            for fut in ready:
                piece = running.pop(fut)
                result = fut.result()
                self._finished(piece, result.blob, total, meter, todo, base)
                n_counted += 1
                peak = max(peak, result.peak_rss)
            now = time.monotonic()
            if ready or now - last >= _PROGRESS_SECONDS:
                last = now
                yield meter.progress(0.02, 1.0, pieces_line())
            if not ready:
                time.sleep(_POLL_SECONDS)
        return n_counted, peak


def _add(total: Accumulator, got: PieceCounts) -> None:
    total.unigrams += got.unigrams
    total.n_tokens += got.n_tokens
    total.n_documents += got.n_documents
    if got.keys.shape[0]:
        total.add_run(got.keys, got.counts)


def _read_counts_files(files: list[Path], tok_key: str, V: int, model: str) -> CorpusCounts:
    """The counts of one counts file, or the sum of several (InputError when one input
    file is in two of them)."""
    parts = [read_counts(f, tok_key, V, model) for f in files]
    if len(parts) == 1:
        return parts[0]
    seen: dict[str, Path] = {}
    for f, c in zip(files, parts):
        for _, digest, _, _ in c.inputs:
            if digest in seen:
                raise InputError(f"{f} and {seen[digest]} both count the same corpus file; "
                                 "counting it twice would double its counts.")
            seen[digest] = f
    total = Accumulator(V)
    for c in parts:
        prev, nxt, cnt = c.bigram_triples()
        total.unigrams += c.unigrams
        total.n_tokens += c.n_tokens
        total.n_documents += c.n_documents
        if cnt.shape[0]:
            total.add_run(prev * V + nxt, cnt)
    keys, counts = total.keys_counts()
    inputs = tuple(i for c in parts for i in c.inputs)
    key = hashlib.sha256(json.dumps(sorted(c.key for c in parts)).encode()).hexdigest()
    return CorpusCounts(total.unigrams, csr_of(keys, counts, V), total.n_tokens,
                        total.n_documents, tuple(i[0] for i in inputs), key, inputs=inputs,
                        text_column=parts[0].text_column, tokenizer_key=tok_key,
                        source=", ".join(str(f) for f in files))


def corpus_counts(paths, tokenizer, n_vocab: int | None = None, *, use_cache: bool = True,
                  on_progress=None, **options) -> CorpusCounts:
    """`iter_corpus_counts` run to completion (`options`: its keyword arguments)."""
    return run(iter_corpus_counts(paths, tokenizer, n_vocab, use_cache=use_cache, **options),
               on_progress)


def layer_corpus_counts(layer, paths, *, use_cache: bool = True, on_progress=None,
                        **options) -> CorpusCounts:
    """Counts of a corpus tokenised with the model's tokenizer, over its n_vocab ids."""
    return corpus_counts(paths, layer.tokenizer, layer.n_vocab, use_cache=use_cache,
                         on_progress=on_progress, model=layer.name, **options)


_COUNTS_KEY = "layer_corpus_counts"
_COUNTING = threading.Lock()


def _files_stamp(paths) -> tuple:
    """(file, size, mtime) of every corpus and counts file behind `paths`, and the text
    column: what identifies the counts between two computations without hashing the
    files again."""
    corpus = as_corpus(paths)
    scan = scan_corpus(corpus)
    return (corpus.text_column, *((str(f), f.stat().st_size, f.stat().st_mtime_ns)
                                  for f in (*scan.files, *scan.counts)))


def iter_layer_counts(layer, paths, lo: float = 0.0, hi: float = 1.0) -> Job:
    """Generator job: `CorpusCounts` of the corpus at `paths` (a `spec.Corpus` says how
    many workers count it, or which Dask scheduler) with the model's tokenizer (disk cache
    of core.corpus.counts), kept on the layer for as long as the files keep their sizes
    and times, so that a GUI view does not hash the corpus again. Progress is mapped into
    [lo, hi]."""
    # Two views asking at once: the second waits (cancellably) for the first's counts
    # instead of counting the corpus again.
    while not _COUNTING.acquire(timeout=0.05):
        yield Progress(lo, "waiting for the corpus count of another view")
    try:
        stamp = _files_stamp(paths)
        key = (_COUNTS_KEY, stamp)
        if not layer.is_cached(key):
            layer.forget(_COUNTS_KEY)  # one corpus at a time
        return (yield from layer.cached_job(key, lambda: rescaled(
            iter_corpus_counts(paths, layer.tokenizer, layer.n_vocab, model=layer.name),
            lo, hi)))
    finally:
        _COUNTING.release()


def _entry(key: str, V: int) -> Entry:
    return Entry("corpus", key, FORMAT, {"unigrams": ((V,), "i"), "indptr": ((V + 1,), "i"),
                                         "indices": ((None,), "i"), "data": ((None,), "i")})


def _save(entry: Entry, c: CorpusCounts) -> None:
    b = c.bigrams
    entry.save({"unigrams": c.unigrams, "indptr": b.indptr, "indices": b.indices,
                "data": b.data}, n_tokens=c.n_tokens, n_documents=c.n_documents)


def _from_entry(arrays: dict, meta: dict, key: str, files, inputs, column, tok_key
                ) -> CorpusCounts:
    """The counts of a cache entry; ValueError when they contradict each other."""
    uni, indptr, indices, data = (arrays[n] for n in ("unigrams", "indptr", "indices", "data"))
    V, nnz = uni.shape[0], indices.shape[0]
    n_tokens = int(meta["n_tokens"])
    if (data.shape[0] != nnz or indptr[0] != 0 or indptr[-1] != nnz
            or np.any(np.diff(indptr) < 0) or np.any(data <= 0) or np.any(uni < 0)
            or (nnz and (indices.min() < 0 or indices.max() >= V))
            or int(uni.sum()) != n_tokens):
        raise ValueError("its counts contradict each other")
    bigrams = sparse.csr_array((data, indices, indptr), shape=(V, V))
    return CorpusCounts(uni, bigrams, n_tokens, int(meta["n_documents"]), tuple(files), key,
                        inputs=inputs, text_column=column, tokenizer_key=tok_key)
