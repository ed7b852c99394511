"""Unigram and bigram counts of a user corpus, streamed and cached on disk
(docs/math/text-side.md#c4-corpus-counts).

    unigrams[t]        = number of times token t occurs
    bigrams[v, u]      = c(v, u): number of times token u directly follows token v
                         inside one document (never across two documents)

Documents come from `core.corpus.documents` (a jsonl line's `text`, or a .txt part between
`<|endoftext|>` lines, a file convention whatever the model), tokenised in batches by the
model's own tokenizer (byte-level BPE, sentencepiece, ...) without special tokens. Bigram counts are a `scipy.sparse.csr_array` [V, V] (rows = previous
token): a corpus has far fewer distinct bigrams than V^2.

The counts are cached in `cache_dir("corpus")` under a key made of each file's content
hash (SHA-256), size and kind (.txt/.jsonl, gzipped or not), the tokenizer's identity and
V; the key ignores file names and order, so the same texts are counted once. The cache
entry (core.base.diskcache) is written atomically after the whole pass; a cancelled or failed
pass writes nothing, and a damaged entry is discarded and counted again. The files are read
twice (hashed for the key, then counted), so only regular files are accepted
(core.corpus.documents), and a file that changes between the two reads (its size, time or inode)
leaves the counts out of the cache, with one line on the `detokgui.corpus` logger.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
from scipy import sparse

from detokgui.core.base.diskcache import Entry
from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import Job, Progress, rescaled, run
from detokgui.core.corpus.documents import (
    CorpusReader,
    _kind,
    corpus_files,
    iter_token_pieces,
    open_corpus_file,
)
from detokgui.core.model.identity import iter_file_digest, tokenizer_identity

log = logging.getLogger("detokgui.corpus")
FORMAT = "detokgui-corpus-counts-v1"
BATCH_CHARS = 1 << 18  # characters per tokenizer call: the Cancel granularity
FLUSH_TOKENS = 1 << 20  # tokens gathered before they are counted
MERGE_MIN = 1 << 20  # distinct bigrams pending before the runs are merged
_HASH_SHARE = 0.02  # share of the progress bar for hashing (it is ~100x faster than tokenising)
_PROGRESS_SECONDS = 0.1


@dataclass(eq=False)
class CorpusCounts:
    """Token counts of a corpus. `bigrams[v, u]` = c(v, u), u following v."""

    unigrams: np.ndarray  # [V] int64
    bigrams: sparse.csr_array  # [V, V] int64, rows = previous token
    n_tokens: int
    n_documents: int
    files: tuple[str, ...]
    key: str
    _by_next: sparse.csr_array | None = field(default=None, repr=False)

    @property
    def n_vocab(self) -> int:
        return int(self.unigrams.shape[0])

    @property
    def n_bigrams(self) -> int:
        """Total number of bigram occurrences."""
        return int(self.bigrams.data.sum())

    @property
    def n_distinct_bigrams(self) -> int:
        return int(self.bigrams.nnz)

    def by_next(self) -> sparse.csr_array:
        """c transposed, [V, V]: row u lists the tokens v that precede u, with c(v, u)."""
        if self._by_next is None:
            self._by_next = self.bigrams.T.tocsr()
            self._by_next.sort_indices()
        return self._by_next

    def require_bigrams(self, what: str) -> None:
        """InputError when the corpus has no bigram (every document is one token), which
        `what` (e.g. "a bigram AUROC") needs; unigram counts exist all the same."""
        if self.bigrams.nnz == 0:
            raise InputError(f"The corpus yields no bigrams (every document is a single "
                             f"token), so there is no {what}; it needs longer texts.")

    def bigram_triples(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(prev, next, count) of every distinct bigram, sorted by (prev, next)."""
        b = self.bigrams
        prev = np.repeat(np.arange(b.shape[0]), np.diff(b.indptr))
        return prev, b.indices.astype(np.int64), b.data


# --------------------------------------------------------------------------- counting


class _Accumulator:
    """Running counts. Bigrams are int64 keys prev * V + next; each flush contributes its
    sorted unique keys with counts, and the pending runs are merged once they outgrow the
    merged run (amortised O(n log n), memory bounded by the distinct bigrams)."""

    def __init__(self, n_vocab: int):
        self.V = n_vocab
        self.unigrams = np.zeros(n_vocab, dtype=np.int64)
        self.n_tokens = 0
        self.n_documents = 0
        self.merged = (np.empty(0, np.int64), np.empty(0, np.int64))
        self.pending: list[tuple[np.ndarray, np.ndarray]] = []
        self.pending_size = 0
        self.parts: list[np.ndarray] = []
        self.new_doc: list[bool] = []
        self.part_tokens = 0
        self.last: int | None = None  # last token of the previous flush
        self.broken = False  # a token-less new document came since the last piece

    def add(self, ids: list[int], continued: bool) -> None:
        if not continued:
            self.n_documents += 1
        if not ids:  # a piece without tokens still ends the previous document
            self.broken = self.broken or not continued
            return
        self.parts.append(np.asarray(ids, dtype=np.int64))
        self.new_doc.append(self.broken or not continued)
        self.broken = False
        self.part_tokens += len(ids)
        if self.part_tokens >= FLUSH_TOKENS:
            self.flush()

    def flush(self) -> None:
        if not self.parts:
            return
        ids = np.concatenate(self.parts)
        lengths = np.fromiter((p.shape[0] for p in self.parts), np.int64, len(self.parts))
        new_doc = np.asarray(self.new_doc, dtype=bool)
        self.parts, self.new_doc, self.part_tokens = [], [], 0
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= self.V:
            raise InputError(f"The tokenizer produced token id {hi if hi >= self.V else lo}, "
                             f"outside the model's vocabulary of {self.V}.")
        self.unigrams += np.bincount(ids, minlength=self.V)
        self.n_tokens += int(ids.shape[0])
        # Pairs of consecutive tokens of [last, *ids], where `last` ends the previous flush,
        # except those whose second token starts a document.
        seq = ids if self.last is None else np.concatenate(([self.last], ids))
        starts = np.cumsum(lengths) - lengths + (seq.shape[0] - ids.shape[0])
        keep = np.ones(seq.shape[0] - 1, dtype=bool)
        cut = starts[new_doc]
        keep[cut[cut > 0] - 1] = False
        keys = seq[:-1][keep] * self.V + seq[1:][keep]
        if keys.shape[0]:
            self._add_run(*np.unique(keys, return_counts=True))
        self.last = int(ids[-1])

    def _add_run(self, keys: np.ndarray, counts: np.ndarray) -> None:
        self.pending.append((keys, counts.astype(np.int64)))
        self.pending_size += keys.shape[0]
        if self.pending_size > max(MERGE_MIN, self.merged[0].shape[0]):
            self._merge()

    def _merge(self) -> None:
        runs = [self.merged, *self.pending]
        self.pending, self.pending_size = [], 0
        keys = np.concatenate([k for k, _ in runs])
        counts = np.concatenate([c for _, c in runs])
        if keys.shape[0] == 0:
            return
        order = np.argsort(keys, kind="stable")
        keys, counts = keys[order], counts[order]
        first = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        self.merged = (keys[first], np.add.reduceat(counts, first))

    def result(self) -> tuple[np.ndarray, sparse.csr_array]:
        self.flush()
        self._merge()
        keys, counts = self.merged
        V = self.V
        prev, nxt = np.divmod(keys, V)
        indptr = np.zeros(V + 1, dtype=np.int64)
        np.cumsum(np.bincount(prev, minlength=V), out=indptr[1:])
        bigrams = sparse.csr_array((counts, nxt, indptr), shape=(V, V))
        return self.unigrams, bigrams


def iter_corpus_counts(paths, tokenizer, n_vocab: int | None = None, *,
                       use_cache: bool = True) -> Job[CorpusCounts]:
    """Generator job: unigram and bigram counts of the corpus at `paths` (files or folders;
    see `core.corpus.documents`), tokenised by `tokenizer` into ids below `n_vocab` (default: the
    tokenizer's size). Yields Progress by bytes (hashing, then reading); stopping it between
    yields writes nothing. Returns a `CorpusCounts`, from the cache when the same files were
    counted before with the same tokenizer.

    Raises InputError (one line naming the file and place) for unreadable, empty, binary or
    non-UTF-8 files, files that are not regular files, and jsonl lines without a string
    `text`. A corpus without any bigram (single-token documents) has unigram counts and
    an empty `bigrams`; what needs bigrams refuses it (`CorpusCounts.require_bigrams`)."""
    if tokenizer is None:
        raise InputError("The model has no tokenizer files, so a corpus cannot be tokenized.")
    V = int(n_vocab) if n_vocab is not None else len(tokenizer)
    reader = CorpusReader(paths)
    before = _stamps(reader.files)
    key = yield from _iter_key(reader.files, reader.total_bytes, tokenizer, V)
    entry = _entry(key, V)
    if use_cache:
        cached = entry.load(partial(_from_entry, key=key, files=reader.files))
        if cached is not None:
            yield Progress(1.0, "corpus counts (cached)")
            return cached
    acc = _Accumulator(V)
    last = time.monotonic()
    for piece in iter_token_pieces(tokenizer, reader, batch_chars=BATCH_CHARS):
        acc.add(piece.ids, piece.continued)
        now = time.monotonic()
        if now - last >= _PROGRESS_SECONDS:
            last = now
            f = reader.fraction
            yield Progress(_HASH_SHARE + (1 - _HASH_SHARE) * f,
                           f"counting tokens: {f:.0%} of {_mb(reader.total_bytes)} read")
    unigrams, bigrams = acc.result()
    counts = CorpusCounts(unigrams, bigrams, acc.n_tokens, acc.n_documents,
                          tuple(str(f) for f in reader.files), key)
    changed = [f for f, a, b in zip(reader.files, before, _stamps(reader.files)) if a != b]
    if changed:
        log.warning(f"{changed[0]} changed while the corpus was counted; these counts are "
                    "not kept in the cache")
    else:
        _save(entry, counts)
    yield Progress(1.0, f"counted {counts.n_tokens} tokens in {counts.n_documents} documents")
    return counts


def corpus_counts(paths, tokenizer, n_vocab: int | None = None, *, use_cache: bool = True,
                  on_progress=None) -> CorpusCounts:
    """`iter_corpus_counts` run to completion."""
    return run(iter_corpus_counts(paths, tokenizer, n_vocab, use_cache=use_cache), on_progress)


def layer_corpus_counts(layer, paths, *, use_cache: bool = True, on_progress=None) -> CorpusCounts:
    """Counts of a corpus tokenised with the model's tokenizer, over its n_vocab ids."""
    return corpus_counts(paths, layer.tokenizer, layer.n_vocab, use_cache=use_cache,
                         on_progress=on_progress)


_COUNTS_KEY = "layer_corpus_counts"
_COUNTING = threading.Lock()


def _files_stamp(paths) -> tuple:
    """(file, size, mtime) of every corpus file behind `paths`: what identifies the counts
    between two computations without hashing the files again."""
    return tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in corpus_files(paths))


def iter_layer_counts(layer, paths, lo: float = 0.0, hi: float = 1.0) -> Job:
    """Generator job: `corpus.CorpusCounts` of the corpus at `paths` with the model's
    tokenizer (disk cache of core.corpus.counts), kept on the layer for as long as the files keep
    their sizes and times, so that a GUI view does not hash the corpus again. Progress is
    mapped into [lo, hi]."""
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
            iter_corpus_counts(paths, layer.tokenizer, layer.n_vocab), lo, hi)))
    finally:
        _COUNTING.release()


def _stamps(files) -> list[tuple | None]:
    """(device, inode, size, mtime) of each file: what a rewrite or an edit changes."""
    out = []
    for f in files:
        try:
            st = os.stat(f)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    return out


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _iter_key(files: Iterable[Path], total: int, tokenizer, V: int) -> Job[str]:
    """Cache key from the files' contents (hash, size, kind), the tokenizer and V."""
    entries, done = [], 0
    for f in files:
        digest, size = yield from _progress_digest(f, done, total)
        done += size
        entries.append((digest, size, _kind(f)))
    entries.sort()
    spec = [FORMAT, tokenizer_identity(tokenizer), V, entries]
    sp = getattr(tokenizer, "sp_model", None)
    if sp is not None:  # a sentencepiece model: its scores and normaliser decide the ids too
        spec.append(hashlib.sha256(sp.serialized_model_proto()).hexdigest())
    return hashlib.sha256(json.dumps(spec).encode()).hexdigest()


def _progress_digest(path: Path, done: int, total: int) -> Job[tuple[str, int]]:
    gen = iter_file_digest(path, open_corpus_file)
    last = time.monotonic()
    while True:
        try:
            n = next(gen)
        except StopIteration as stop:
            return stop.value
        now = time.monotonic()
        if now - last >= _PROGRESS_SECONDS:
            last = now
            yield Progress(_HASH_SHARE * (done + n) / max(1, total), f"hashing {path.name}")


def _entry(key: str, V: int) -> Entry:
    return Entry("corpus", key, FORMAT, {"unigrams": ((V,), "i"), "indptr": ((V + 1,), "i"),
                                         "indices": ((None,), "i"), "data": ((None,), "i")})


def _save(entry: Entry, c: CorpusCounts) -> None:
    b = c.bigrams
    entry.save({"unigrams": c.unigrams, "indptr": b.indptr, "indices": b.indices,
                "data": b.data}, n_tokens=c.n_tokens, n_documents=c.n_documents)


def _from_entry(arrays: dict, meta: dict, key: str, files) -> CorpusCounts:
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
    return CorpusCounts(uni, bigrams, n_tokens, int(meta["n_documents"]),
                        tuple(str(f) for f in files), key)
