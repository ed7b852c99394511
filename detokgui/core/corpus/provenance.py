"""The corpus part of a provenance record (`core.model.provenance.provenance_record`):
which documents a result was computed from, cheaply.

From counts (`CorpusCounts`) it is exact: the counts' key and every input file with the
SHA-256 the counting read it with (or the counts file they were opened from). From paths
alone nothing is read: each path with its size and last change, which tell a moved or
edited corpus from the same one without hashing gigabytes at every export.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

from detokgui.core.corpus.documents import SAMPLE_NAME
from detokgui.core.model.sources.demo import sample_corpus


def _stat(path: str) -> dict:
    if path == SAMPLE_NAME and not Path(path).exists():
        path = str(sample_corpus())
    entry: dict = {"path": str(Path(path).expanduser().absolute())}
    try:
        st = os.stat(path)
    except OSError:
        entry["missing"] = True
        return entry
    if Path(path).is_file():
        entry["bytes"] = st.st_size
    entry["modified"] = datetime.datetime.fromtimestamp(
        st.st_mtime, datetime.timezone.utc).isoformat(timespec="seconds")
    return entry


def corpus_identity(corpus=None, counts=None) -> dict | None:
    """{"paths": [{path, bytes, modified}...], "text_column"} for corpus paths (a
    `Corpus` or a list of paths; "sample" is the sample corpus shipped with detokgui), with "counts_key", "tokens", "documents" and "inputs"
    ([path, sha256, bytes] per file) or "counts_file" when `counts` are given; None when
    neither is."""
    if not corpus and counts is None:
        return None
    out: dict = {}
    if corpus:
        paths = [corpus] if isinstance(corpus, (str, os.PathLike)) else list(corpus)
        out["paths"] = [_stat(str(p)) for p in paths]
        out["text_column"] = getattr(corpus, "text_column", "text")
    if counts is not None:
        out["counts_key"] = counts.key
        out["tokens"] = int(counts.n_tokens)
        out["documents"] = int(counts.n_documents)
        if getattr(counts, "source", ""):
            out["counts_file"] = str(counts.source)
        inputs = getattr(counts, "inputs", ()) or ()
        out["inputs"] = [[str(i[0]), str(i[1]), int(i[2])] for i in inputs]
        out.setdefault("text_column", getattr(counts, "text_column", "text"))
    return out
