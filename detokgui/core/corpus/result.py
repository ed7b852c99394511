"""The counts of a corpus (`CorpusCounts`), however they were made: counted here, read
from the cache, or opened from a counts file (docs/math/text-side.md#c4-corpus-counts)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from detokgui.core.base.errors import InputError


@dataclass(eq=False)
class CorpusCounts:
    """Token counts of a corpus. `bigrams[v, u]` = c(v, u), u following v.

    `inputs`: (path, SHA-256, size, kind) of every corpus file; `tokenizer_key` the
    identity of the tokenizer that made them; `source` the counts file they were read
    from ("" otherwise); `pieces_counted` / `pieces_cached` how many pieces this run
    counted and took from the cache, `peak_rss` the largest peak memory of a process that
    counted (bytes; 0 when nothing was counted)."""

    unigrams: np.ndarray  # [V] int64
    bigrams: sparse.csr_array  # [V, V] int64, rows = previous token
    n_tokens: int
    n_documents: int
    files: tuple[str, ...]
    key: str
    inputs: tuple = ()
    text_column: str = "text"
    tokenizer_key: str = ""
    source: str = ""
    pieces_counted: int = 0
    pieces_cached: int = 0
    peak_rss: int = 0
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


def csr_of(keys: np.ndarray, counts: np.ndarray, V: int) -> sparse.csr_array:
    """The [V, V] CSR matrix of sorted unique bigram keys prev * V + next and counts."""
    prev, nxt = np.divmod(keys, V)
    indptr = np.zeros(V + 1, dtype=np.int64)
    np.cumsum(np.bincount(prev, minlength=V), out=indptr[1:])
    index_type = np.int32 if V < 2**31 else np.int64
    return sparse.csr_array((counts.astype(np.int64, copy=False), nxt.astype(index_type),
                             indptr), shape=(V, V))
