"""A corpus as its paths plus how they are read and counted (`Corpus`).

A `Corpus` is a tuple of path strings, so it goes wherever corpus paths go (the window's
shared selection, a view's request, the command line's --corpus), and it carries:

- `text_column`: the string column of parquet and arrow shards and the field of jsonl
  lines that holds the text ("text" by default); it decides what is counted, so two
  corpora with other columns are not equal;
- `workers`: how many processes count it (None: one per core), and `scheduler`: the
  address of a Dask scheduler to count it on instead (None: local processes). These say
  only how the counts are made, never what they are, so they take no part in equality.
"""

from __future__ import annotations

import os

from detokgui.core.base.pools import default_workers
from detokgui.core.corpus.readers import TEXT_COLUMN


class Corpus(tuple):
    """Corpus paths (a tuple of str) with `text_column`, `workers` and `scheduler`."""

    def __new__(cls, paths=(), *, text_column: str = TEXT_COLUMN, workers: int | None = None,
                scheduler=None):
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        self = super().__new__(cls, tuple(str(p) for p in paths))
        self.text_column = str(text_column or TEXT_COLUMN)
        self.workers = None if workers is None else int(workers)
        self.scheduler = scheduler or None
        return self

    def __eq__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return (tuple.__eq__(self, other) is True
                and self.text_column == getattr(other, "text_column", TEXT_COLUMN))

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        if self.text_column == TEXT_COLUMN:
            return tuple.__hash__(self)
        return hash((tuple(self), self.text_column))

    def __reduce__(self):
        scheduler = self.scheduler if isinstance(self.scheduler, str) else None
        return (_rebuild, (tuple(self), self.text_column, self.workers, scheduler))

    def __repr__(self):
        extra = "".join(f", {k}={v!r}" for k, v, d in (
            ("text_column", self.text_column, TEXT_COLUMN), ("workers", self.workers, None),
            ("scheduler", self.scheduler, None)) if v != d)
        return f"Corpus({list(self)!r}{extra})"

    def replace(self, **options) -> Corpus:
        """The same paths with some options changed."""
        kw = {"text_column": self.text_column, "workers": self.workers,
              "scheduler": self.scheduler, **options}
        return Corpus(tuple(self), **kw)


def _rebuild(paths, text_column, workers, scheduler):
    return Corpus(paths, text_column=text_column, workers=workers, scheduler=scheduler)


def as_corpus(paths, *, text_column: str | None = None, workers: int | None = None,
              scheduler=None) -> Corpus:
    """`paths` (a path, a list of them, or a Corpus) as a Corpus; the options given (not
    None) replace those `paths` carries."""
    base = paths if isinstance(paths, Corpus) else Corpus(paths)
    options = {k: v for k, v in (("text_column", text_column), ("workers", workers),
                                 ("scheduler", scheduler)) if v is not None}
    return base.replace(**options) if options else base


def counted_by(workers: int | None, scheduler: str | None) -> str:
    """How corpora are counted: "on the Dask cluster at ADDRESS" with a scheduler, else
    "by N local processes" (`workers`; None or 0: one per core)."""
    if scheduler:
        return f"on the Dask cluster at {scheduler}"
    n = workers or default_workers()
    return f"by {n} local process{'es' * (n != 1)}"
