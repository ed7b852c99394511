"""Counting one piece of a corpus: the task a worker process runs, and the counts it
returns (docs/math/text-side.md#c4-corpus-counts).

A `Piece` is a range of one shard (`core.corpus.readers.plan_shard`); counting it reads
its documents, tokenizes them in batches of BATCH_CHARS characters with the model's fast
tokenizer (the Rust `tokenizers.Tokenizer`, sent to the worker as its JSON definition,
`TokenizerSpec`) and counts

    unigrams[t]    = number of times token t occurs
    bigrams[v, u]  = c(v, u): number of times token u directly follows token v inside one
                     document (never across two)

A bigram (v, u) is the int64 key v * V + u. The task's memory is bounded: token ids are
counted FLUSH_TOKENS at a time into sorted runs of unique keys, runs are merged once they
outgrow the merged run, and when the piece's distinct bigrams pass `flush_bigrams`
(FLUSH_BIGRAMS = 2^22 by default, 64 MiB of keys and counts) the piece stops at the next
document and returns what it counted with the position it stopped at: the caller counts
the rest as a piece of its own. So a worker holds about 5 x 16 bytes x flush_bigrams at
its peak (the merge's temporaries) whatever the shard's size, except inside one document
longer than that.

The result (`PieceResult`) carries the piece's counts as the bytes of its cache entry
(`core.base.diskcache`, zip-compressed: the keys as differences, which compress about
tenfold), so the worker does the compressing and the caller only writes the bytes and
adds the counts. The file's stamp (device, inode, size, times) is checked before and after
reading: a shard that changed since it was hashed, or while it was read, is an InputError
and nothing of it is kept.

This module imports neither torch nor transformers, so that a worker starts quickly.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Generator
from dataclasses import dataclass, field

import numpy as np

from detokgui.core.base.diskcache import Entry
from detokgui.core.base.errors import Cancelled, InputError
from detokgui.core.corpus.readers import (
    PIECE_CHARS,
    Progress,
    file_stamp,
    hash_file,
    plan_shard,
    read_documents,
    whole_documents,
)
from detokgui.core.model.fast_tokenizer import encode_backend, encode_batch

FORMAT = "detokgui-corpus-piece-v1"
BATCH_CHARS = 1 << 18  # characters per tokenizer call: the Cancel granularity
FLUSH_TOKENS = 1 << 20  # tokens gathered before they are counted
MERGE_MIN = 1 << 20  # distinct bigrams pending before the runs are merged
FLUSH_BIGRAMS = 1 << 22  # distinct bigrams a piece holds before it stops at a document
REPORT_SECONDS = 0.25  # how often a worker reports its progress


# --------------------------------------------------------------------------- the tokenizer


@dataclass(frozen=True)
class TokenizerSpec:
    """How a worker process tokenizes as the model does: the fast tokenizer's JSON
    definition (None when the tokenizer has no fast form: it is then used in the calling
    process only), its identity (the cache key part), and whether it is byte-level BPE
    (whose long documents may be tokenized in pieces)."""

    identity: str
    json: str | None
    byte_level: bool


_BACKENDS: dict[str, object] = {}  # in a worker: the tokenizers built, by identity


def _backend(spec: TokenizerSpec):
    tok = _BACKENDS.get(spec.identity)
    if tok is None:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_str(spec.json)
        _BACKENDS.clear()  # one model's tokenizer at a time
        _BACKENDS[spec.identity] = tok
    return tok


def _encoder(tokenizer):
    """texts -> ids, for a TokenizerSpec (in a worker) or the model's tokenizer itself."""
    if isinstance(tokenizer, TokenizerSpec):
        backend = _backend(tokenizer)
        return lambda texts: encode_backend(backend, texts)
    return lambda texts: encode_batch(tokenizer, texts)


# --------------------------------------------------------------------------- a piece


@dataclass(frozen=True)
class Piece:
    """Positions [start, end) of shard number `shard` (`path`, of `kind`), whose content
    hash is `digest` and stamp `stamp`; `weight` the stored bytes it stands for, `units`
    a table's row groups or batches; `key` its cache key."""

    shard: int
    path: str
    kind: str
    start: int
    end: int | None
    weight: int
    digest: str
    stamp: tuple
    text_column: str
    key: str
    units: tuple = field(default=(), repr=False)

    def rest(self, start: int, weight: int, key: str) -> Piece:
        """The part of this piece from `start` on (after a stop)."""
        return Piece(self.shard, self.path, self.kind, start, self.end, weight, self.digest,
                     self.stamp, self.text_column, key, self.units)


def piece_key(base: str, kind: str, digest: str, start: int, end: int | None,
              flush_bigrams: int) -> str:
    """The cache key of a piece: `base` (format, tokenizer, V, text column), the shard's
    kind and content, the range, and the flush size (it decides where a piece stops)."""
    spec = json.dumps([FORMAT, base, kind, digest, int(start), end, int(flush_bigrams)])
    return hashlib.sha256(spec.encode()).hexdigest()


def piece_entry(key: str) -> Entry:
    return Entry("corpus-pieces", key, FORMAT, {"unigrams": ((None,), "i"),
                                                "key_steps": ((None,), "i"),
                                                "counts": ((None,), "i")})


@dataclass(frozen=True)
class PieceCounts:
    """A piece's counts as read from its entry bytes."""

    unigrams: np.ndarray  # [V] int64
    keys: np.ndarray  # sorted unique bigram keys prev * V + next, int64
    counts: np.ndarray  # int64, > 0
    n_tokens: int
    n_documents: int
    text_chars: int
    stop: int | None  # where the piece stopped (None: at its end)
    fraction: float  # the share of the piece's weight read


@dataclass(frozen=True)
class PieceResult:
    """What a worker returns: the entry bytes and a few numbers for progress."""

    key: str
    blob: bytes
    stop: int | None
    fraction: float
    n_tokens: int
    text_chars: int
    peak_rss: int


def _builder(V: int):
    def build(arrays, meta) -> PieceCounts:
        uni, steps, counts = arrays["unigrams"], arrays["key_steps"], arrays["counts"]
        keys = np.cumsum(steps, dtype=np.int64)
        n_tokens = int(meta["n_tokens"])
        if (uni.shape[0] != V or steps.shape != counts.shape or np.any(uni < 0)
                or np.any(counts <= 0) or (steps.shape[0] > 1 and np.any(steps[1:] <= 0))
                or (keys.shape[0] and (keys[0] < 0 or keys[-1] >= V * V))
                or int(uni.sum()) != n_tokens):
            raise ValueError("its counts contradict each other")
        stop = meta["stop"]
        return PieceCounts(uni.astype(np.int64, copy=False), keys, counts.astype(np.int64),
                           n_tokens, int(meta["n_documents"]), int(meta["text_chars"]),
                           None if stop is None else int(stop), float(meta["fraction"]))

    return build


def read_piece(key: str, blob: bytes, V: int) -> PieceCounts:
    """The counts in a piece's entry bytes; Damaged (ValueError) when they are not
    consistent."""
    return piece_entry(key).decode(blob, _builder(V))


def load_piece(key: str, V: int) -> PieceCounts | None:
    """A finished piece's counts from the cache, or None (a damaged entry is discarded)."""
    return piece_entry(key).load(_builder(V))


# --------------------------------------------------------------------------- survey


@dataclass(frozen=True)
class Shard:
    """A surveyed corpus file: its content hash and size, its stamp, its pieces."""

    path: str
    kind: str
    digest: str
    size: int
    stamp: tuple
    plan: tuple  # of readers.PlannedPiece


def survey_shard(path: str, kind: str, text_column: str, piece_bytes: int) -> Shard:
    """Hash a corpus file, plan its pieces and read its first document (InputError for an
    unreadable, empty or damaged file, a missing or non-string text column, or a file
    that changes meanwhile). A task of its own: runs in a worker too."""
    before = file_stamp(path)
    digest, size = hash_file(path)
    plan = plan_shard(path, kind, text_column, piece_bytes)
    docs = read_documents(path, kind, text_column=text_column,
                          units=tuple(u for p in plan for u in p.units) or None)
    if next(iter(docs), None) is None:
        raise InputError(f"{path}: the file holds no text.")
    if tuple(file_stamp(path)) != tuple(before):
        raise InputError(f"{path} changed while it was hashed; nothing of it is kept: count "
                         "the corpus again once it no longer changes.")
    return Shard(str(path), kind, digest, size, tuple(before), tuple(plan))


# --------------------------------------------------------------------------- counting


class Accumulator:
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
            self.add_run(*np.unique(keys, return_counts=True))
        self.last = int(ids[-1])

    def add_run(self, keys: np.ndarray, counts: np.ndarray) -> None:
        """Add sorted unique keys with their counts."""
        self.pending.append((keys, counts.astype(np.int64, copy=False)))
        self.pending_size += keys.shape[0]
        if self.pending_size > max(MERGE_MIN, self.merged[0].shape[0]):
            self.merge()

    def merge(self) -> None:
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

    def over(self, bound: int) -> bool:
        """Whether more than `bound` distinct bigrams are held. Their number is at most
        merged + pending + tokens not yet counted; past `bound`, the tokens are counted
        (once an eighth of `bound` has gathered, so that the merges stay rare) and the
        runs merged to know."""
        held = self.merged[0].shape[0] + self.pending_size
        if held + self.part_tokens <= bound:
            return False
        if self.part_tokens > bound // 8:
            self.flush()
        self.merge()
        return self.merged[0].shape[0] > bound

    def keys_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """All counts so far: (sorted unique keys, counts)."""
        self.flush()
        self.merge()
        return self.merged


def _check_stamp(piece: Piece, when: str) -> None:
    if tuple(file_stamp(piece.path)) != tuple(piece.stamp):
        raise InputError(f"{piece.path} changed {when}; nothing of it is kept: count the "
                         "corpus again once it no longer changes.")


def _narrow(a: np.ndarray) -> np.ndarray:
    """`a` (non-negative integers) in the smallest signed integer type that holds it:
    less to compress."""
    top = int(a.max()) if a.shape[0] else 0
    for t in (np.int8, np.int16, np.int32):
        if top <= np.iinfo(t).max:
            return a.astype(t)
    return a


def iter_count_piece(piece: Piece, spec: TokenizerSpec, V: int, *, tokenizer=None,
                     flush_bigrams: int = FLUSH_BIGRAMS, piece_chars: int = PIECE_CHARS,
                     batch_chars: int | None = None, compress: bool = True
                     ) -> Generator[tuple[float, int, int], None, PieceResult]:
    """Generator: counts of `piece` over ids below V, tokenized by the model's `tokenizer`
    when given (in the calling process), else by the fast tokenizer of `spec`. Yields
    (share of the piece read, characters, tokens) after each tokenizer call; returns a
    PieceResult whose entry bytes are compressed with `compress` (they are to be kept).
    Stopping it between yields keeps nothing."""
    _check_stamp(piece, "since it was hashed")
    batch_chars = BATCH_CHARS if batch_chars is None else batch_chars
    encode = _encoder(tokenizer if tokenizer is not None else spec)
    where = Progress()
    docs = read_documents(piece.path, piece.kind, piece.start, piece.end,
                          text_column=piece.text_column, units=piece.units or None,
                          piece_chars=piece_chars, where=where)
    if not spec.byte_level:
        docs = whole_documents(docs)
    acc = Accumulator(V)
    batch, size, chars, stop, full = [], 0, 0, None, False
    for doc in docs:
        if full and not doc.continued:
            stop = doc.pos
            break
        batch.append(doc)
        size += len(doc.text)
        if size >= batch_chars:
            for d, ids in zip(batch, encode([d.text for d in batch])):
                acc.add(ids, d.continued)
            chars += size
            batch, size = [], 0
            full = acc.over(flush_bigrams)
            yield where.fraction, chars, acc.n_tokens + acc.part_tokens
    if batch:
        for d, ids in zip(batch, encode([d.text for d in batch])):
            acc.add(ids, d.continued)
        chars += size
    keys, counts = acc.keys_counts()
    _check_stamp(piece, "while it was read")
    fraction = where.fraction if stop is not None else 1.0
    steps = np.diff(keys, prepend=np.int64(0)) if keys.shape[0] else keys
    blob = piece_entry(piece.key).encode(
        {"unigrams": _narrow(acc.unigrams), "key_steps": _narrow(steps),
         "counts": _narrow(counts)}, compressed=compress,
        n_tokens=acc.n_tokens, n_documents=acc.n_documents, text_chars=chars, stop=stop,
        fraction=fraction, path=piece.path, start=piece.start, end=piece.end)
    return PieceResult(piece.key, blob, stop, fraction, acc.n_tokens, chars, peak_rss())


def count_piece(piece: Piece, spec: TokenizerSpec, V: int, flush_bigrams: int,
                piece_chars: int, compress: bool, control) -> PieceResult:
    """The worker task: `iter_count_piece` run to its end, reporting (key, share read,
    characters, tokens) through `control` every REPORT_SECONDS and raising Cancelled
    soon after the caller cancels."""
    job = iter_count_piece(piece, spec, V, flush_bigrams=flush_bigrams,
                           piece_chars=piece_chars, compress=compress)
    last = time.monotonic()
    while True:
        if control.cancelled():
            job.close()
            raise Cancelled("the corpus count was cancelled")
        try:
            fraction, chars, tokens = next(job)
        except StopIteration as stop:
            return stop.value
        now = time.monotonic()
        if now - last >= REPORT_SECONDS:
            last = now
            control.report((piece.key, fraction, chars, tokens))


def peak_rss() -> int:
    """The process's peak resident memory in bytes (0 where it cannot be read). On Linux
    from /proc (VmHWM): getrusage's maxrss of a spawned worker also counts the process
    it was forked from before the exec."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # Windows
        return 0
    peak = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return peak if sys.platform == "darwin" else peak * 1024  # macOS counts bytes, Linux KB
