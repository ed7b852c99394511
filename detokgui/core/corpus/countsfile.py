"""Corpus counts as a file to hand on: count a corpus once (on a cluster, say) and open
the counts anywhere the corpus would be accepted (docs/large-corpora.md).

A counts file is a `.npz` (numpy's zip of arrays, compressed) holding

    unigrams   [V] int64              the count of every token id
    indptr     [V + 1] int64          the bigram counts c(prev, next) as a CSR matrix,
    indices    [nnz] int32 or int64   rows = prev, columns = next
    data       [nnz] int64
    meta       a JSON record: format (FORMAT), detokgui's version, the tokenizer's
               identity (the SHA-256 of its full definition) and name, the model it was
               counted for, V, the number of tokens and documents, the text column, and
               every input file with its SHA-256, size and kind

Opening one checks it whole (every member's CRC, shapes, counts that add up) and that its
tokenizer identity and V are the model's; counts of another tokenizer or vocabulary size
are refused with a message naming both. Several counts files of one tokenizer add up, as
long as no input file is in two of them.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import numpy as np
from scipy import sparse

from detokgui import __version__
from detokgui.core.base.atomic import atomic_open
from detokgui.core.base.errors import InputError
from detokgui.core.corpus.readers import open_corpus_file
from detokgui.core.corpus.result import CorpusCounts

FORMAT = "detokgui-counts-v1"
SUFFIX = ".npz"
_ARRAYS = ("unigrams", "indptr", "indices", "data")


def write_counts(path: str | os.PathLike, counts, *, tokenizer: str, model: str = "",
                 tokenizer_name: str = "") -> None:
    """Write `counts` (a CorpusCounts) to the counts file `path` (atomically), recording
    `tokenizer` (its identity, `counts.tokenizer_key`), the model's and the tokenizer's
    names."""
    b = counts.bigrams
    indices = b.indices.astype(np.int32) if counts.n_vocab < 2**31 else b.indices
    meta = {
        "format": FORMAT, "detokgui": __version__, "tokenizer": tokenizer,
        "tokenizer_name": tokenizer_name, "model": model, "n_vocab": counts.n_vocab,
        "n_tokens": int(counts.n_tokens), "n_documents": int(counts.n_documents),
        "n_distinct_bigrams": int(b.nnz), "text_column": counts.text_column,
        "key": counts.key,
        "inputs": [{"path": p, "sha256": d, "size": int(s), "kind": k}
                   for p, d, s, k in counts.inputs],
    }
    with atomic_open(path, "wb") as f:
        np.savez_compressed(f, unigrams=counts.unigrams, indptr=b.indptr.astype(np.int64),
                            indices=indices, data=b.data.astype(np.int64),
                            meta=np.array(json.dumps(meta)))


def counts_meta(path: str | os.PathLike) -> dict:
    """The meta record of a counts file (read without its arrays); InputError when the
    file is not a detokgui counts file."""
    path = Path(path)
    with open_corpus_file(path) as f:
        try:
            with zipfile.ZipFile(f) as z, z.open("meta.npy") as m:
                meta = json.loads(str(np.lib.format.read_array(m, allow_pickle=False)))
        except (zipfile.BadZipFile, KeyError, ValueError, OSError, EOFError) as exc:
            raise InputError(f"{path}: not a detokgui counts file ({_why(exc)}).") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise InputError(f"{path}: not a detokgui counts file (its record names no "
                         f"{FORMAT} format).")
    return meta


def describe(meta: dict) -> str:
    """'9,012,345 tokens in 8,013 documents of 3 files, gpt2's tokenizer (V = 50257)'"""
    n = len(meta.get("inputs", []))
    who = meta.get("model") or meta.get("tokenizer_name") or "an unnamed model"
    return (f"{meta['n_tokens']:,} tokens in {meta['n_documents']:,} documents of {n} "
            f"file{'s' * (n != 1)}, {who}'s tokenizer (V = {meta['n_vocab']})")


def check_tokenizer(path, meta: dict, tokenizer: str, V: int, model: str = "") -> None:
    """InputError, naming both, when the counts file's tokenizer or V are not the model's."""
    if meta.get("tokenizer") == tokenizer and int(meta.get("n_vocab", -1)) == int(V):
        return
    theirs = meta.get("model") or meta.get("tokenizer_name") or "another model"
    ours = f"the model {model}" if model else "this model"
    raise InputError(
        f"{path} holds counts made with the tokenizer of {theirs} (tokenizer "
        f"{str(meta.get('tokenizer'))[:12]}, V = {meta.get('n_vocab')}); {ours} has tokenizer "
        f"{tokenizer[:12]} and V = {V}: count the corpus with this model to use its counts.")


def read_counts(path: str | os.PathLike, tokenizer: str, V: int, model: str = ""):
    """The CorpusCounts in a counts file, after checking it against the model's tokenizer
    identity `tokenizer` and vocabulary size V (InputError naming both when they differ,
    or when the file is damaged)."""
    path = Path(path)
    meta = counts_meta(path)
    check_tokenizer(path, meta, tokenizer, V, model)
    try:
        with open_corpus_file(path) as f, np.load(f, allow_pickle=False) as z:
            uni, indptr, indices, data = (z[name] for name in _ARRAYS)
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, EOFError) as exc:
        raise InputError(f"{path}: a damaged counts file ({_why(exc)}).") from None
    nnz = indices.shape[0]
    if (uni.shape != (V,) or indptr.shape != (V + 1,) or data.shape != (nnz,)
            or uni.dtype.kind != "i" or indices.dtype.kind != "i" or data.dtype.kind != "i"
            or indptr[0] != 0 or indptr[-1] != nnz or np.any(np.diff(indptr) < 0)
            or np.any(data <= 0) or np.any(uni < 0)
            or (nnz and (indices.min() < 0 or indices.max() >= V))
            or int(uni.sum()) != int(meta["n_tokens"])):
        raise InputError(f"{path}: a damaged counts file (its counts contradict each other).")
    bigrams = sparse.csr_array((data.astype(np.int64), indices, indptr), shape=(V, V))
    inputs = tuple((i["path"], i["sha256"], int(i["size"]), i["kind"])
                   for i in meta.get("inputs", []))
    return CorpusCounts(uni.astype(np.int64), bigrams, int(meta["n_tokens"]),
                        int(meta["n_documents"]), tuple(i[0] for i in inputs),
                        str(meta.get("key", "")), inputs=inputs,
                        text_column=meta.get("text_column", "text"), tokenizer_key=tokenizer,
                        source=str(path))


def _why(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:160] or type(exc).__name__
