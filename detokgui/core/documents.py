"""Reading a user's corpus: files -> documents -> token pieces -> windows, streamed.

A corpus is one or more files or folders. Files are `.txt` or `.jsonl`, each optionally
gzipped (`.txt.gz`, `.jsonl.gz`); folders are searched recursively for such files.

- A document is a jsonl line's `text` field (other fields are ignored, blank lines are
  skipped), or a part of a `.txt` file between lines that hold only `<|endoftext|>`.
- Nothing is held whole: files are read line by line, and a very long `.txt` document is
  handed on in pieces of about `PIECE_CHARS` characters, cut only where GPT-2's
  pre-tokenizer would cut too (after a line ending in one newline, before a line starting
  with a non-space character), so the pieces tokenize exactly as the whole would.
  `Document.continued` marks a piece that continues the previous piece's document: no
  bigram and no window spans two documents, but they do span the pieces of one.
- Bad input raises `InputError` with a one-line message naming the file (and the line or
  byte offset): missing or unreadable paths, unsupported file types, empty files, binary
  or non-UTF-8 data, invalid gzip, jsonl lines that are not JSON objects with a string
  `text`.
"""

from __future__ import annotations

import codecs
import gzip
import json
import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from detokgui.core.errors import InputError

SUFFIXES = (".txt", ".jsonl", ".txt.gz", ".jsonl.gz")
EOT_LINE = "<|endoftext|>"
PIECE_CHARS = 1 << 20  # hand a long .txt document on in pieces of about 1M characters
_READ_BYTES = 1 << 16


@dataclass(frozen=True)
class Document:
    """One document, or one piece of a long one (`continued`: same document as the
    previous piece)."""

    text: str
    source: str  # the file it came from
    line: int  # 1-based line where it starts in that (decompressed) file
    continued: bool = False


def _kind(path: Path) -> str | None:
    name = path.name.lower()
    for s in SUFFIXES:
        if name.endswith(s):
            return s
    return None


SAMPLE_NAME = "sample"


def corpus_files(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    """The corpus files named by `paths` (files, or folders searched recursively for
    .txt/.jsonl[.gz] files, in sorted order). Raises InputError for a missing path, an
    unsupported file named explicitly, or when no corpus file is found. The name
    SAMPLE_NAME ("sample"), when no such file exists, is the sample corpus shipped in the
    package."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[Path] = []
    for p in map(Path, paths):
        if str(p) == SAMPLE_NAME and not p.exists():
            from detokgui.core.demo import sample_corpus

            files.append(sample_corpus())
        elif p.is_dir():
            try:
                found = sorted(f for f in p.rglob("*") if f.is_file() and _kind(f))
            except OSError as exc:
                raise InputError(f"{p}: cannot list the folder ({exc.strerror or exc}).") from exc
            files.extend(found)
        elif p.exists():
            if _kind(p) is None:
                raise InputError(
                    f"{p}: unsupported file type; a corpus file ends in "
                    f"{', '.join(SUFFIXES)}."
                )
            files.append(p)
        else:
            raise InputError(f"{p}: no such file or folder.")
    if not files:
        raise InputError("No corpus files (.txt, .jsonl, optionally .gz) were found.")
    seen, unique = set(), []
    for f in files:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


class CorpusReader:
    """Iterate the documents of some corpus files, tracking bytes read for progress.

    `bytes_read` / `total_bytes` is the fraction of the files (as stored, compressed or
    not) consumed so far."""

    def __init__(self, paths, piece_chars: int = PIECE_CHARS):
        self.files = corpus_files(paths)
        self.piece_chars = int(piece_chars)
        try:
            self.total_bytes = sum(f.stat().st_size for f in self.files)
        except OSError as exc:
            raise InputError(f"{exc.filename}: cannot read ({exc.strerror or exc}).") from exc
        self.bytes_read = 0

    @property
    def fraction(self) -> float:
        return min(1.0, self.bytes_read / self.total_bytes) if self.total_bytes else 1.0

    def __iter__(self) -> Iterator[Document]:
        done = 0
        for f in self.files:
            for doc, consumed in self._read(f):
                self.bytes_read = done + consumed
                yield doc
            done += _size(f)
            self.bytes_read = done

    # ------------------------------------------------------------------ one file

    def _read(self, path: Path) -> Iterator[tuple[Document, int]]:
        kind = _kind(path)
        n_docs = 0
        lines = _lines(path, kind.endswith(".gz"))
        docs = _jsonl_documents if kind.startswith(".jsonl") else self._txt_documents
        for doc, consumed in docs(path, lines):
            n_docs += 1
            yield doc, consumed
        if n_docs == 0:
            raise InputError(f"{path}: the file holds no text.")

    def _txt_documents(self, path: Path, lines) -> Iterator[tuple[Document, int]]:
        buf: list[str] = []
        size, start, continued, consumed = 0, 1, False, 0
        for lineno, line, consumed in lines:
            if line.strip() == EOT_LINE:
                if buf and "".join(buf).strip():
                    yield Document("".join(buf), str(path), start, continued), consumed
                buf, size, start, continued = [], 0, lineno + 1, False
                continue
            if size >= self.piece_chars and _safe_cut(buf[-1], line):
                yield Document("".join(buf), str(path), start, continued), consumed
                buf, size, start, continued = [], 0, lineno, True
            buf.append(line)
            size += len(line)
        if buf and ("".join(buf).strip() or continued):
            yield Document("".join(buf), str(path), start, continued), consumed


def _safe_cut(previous: str, line: str) -> bool:
    """Cutting between these two lines leaves GPT-2's pre-tokenization unchanged: the
    previous line ends in a single newline after a non-space, the next starts with a
    non-space character."""
    return (previous.endswith("\n") and len(previous) >= 2 and not previous[-2].isspace()
            and bool(line) and not line[0].isspace())


def _jsonl_documents(path: Path, lines) -> Iterator[tuple[Document, int]]:
    for lineno, line, consumed in lines:
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}, line {lineno}: not valid JSON ({exc.msg}).") from None
        if not isinstance(obj, dict) or "text" not in obj:
            raise InputError(f"{path}, line {lineno}: the JSON object has no \"text\" field.")
        text = obj["text"]
        if not isinstance(text, str):
            raise InputError(f"{path}, line {lineno}: \"text\" is not a string.")
        if "\x00" in text:
            raise InputError(f"{path}, line {lineno}: the text holds NUL characters "
                             "(binary data?).")
        if text.strip():
            yield Document(text, str(path), lineno), consumed


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _lines(path: Path, gz: bool) -> Iterator[tuple[int, str, int]]:
    """(line number, line with its newline, stored bytes consumed so far), decoding UTF-8
    strictly; binary data (NUL bytes) and invalid UTF-8 raise InputError with the
    (decompressed) byte offset."""
    where = "decompressed byte offset" if gz else "byte offset"
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise InputError(f"{path}: cannot open ({exc.strerror or exc}).") from exc
    with raw:
        stream = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
        decoder = codecs.getincrementaldecoder("utf-8")("strict")
        offset, lineno, pending, empty = 0, 0, "", True
        while True:
            try:
                chunk = stream.read(_READ_BYTES)
            except (OSError, EOFError, zlib.error) as exc:
                if gz:
                    raise InputError(f"{path}: not a valid gzip file ({exc}).") from None
                raise InputError(f"{path}: cannot read ({exc}).") from None
            final = not chunk
            if chunk:
                empty = False
                nul = chunk.find(b"\x00")
                if nul >= 0:
                    raise InputError(
                        f"{path}: binary data (a NUL byte at {where} {offset + nul}); "
                        "a corpus file must be UTF-8 text.")
            held = len(decoder.getstate()[0])  # bytes of a split character, from before
            try:
                text = decoder.decode(chunk, final=final)
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{path}: not UTF-8 text (an invalid byte at {where} "
                    f"{offset - held + exc.start}).") from None
            offset += len(chunk)
            consumed = raw.tell()
            pending += text
            if final:
                break
            parts = pending.split("\n")
            pending = parts.pop()
            for part in parts:
                lineno += 1
                yield lineno, part + "\n", consumed
        if empty:
            raise InputError(f"{path}: the file is empty.")
        if pending:
            lineno += 1
            yield lineno, pending, raw.tell()


# --------------------------------------------------------------------------- tokens


@dataclass(frozen=True)
class TokenPiece:
    """The token ids of one `Document` piece; `continued` as in Document."""

    ids: list[int]
    continued: bool


def iter_token_pieces(tokenizer, documents: Iterable[Document],
                      batch_chars: int = 1 << 20) -> Iterator[TokenPiece]:
    """Tokenize documents in batches of about `batch_chars` characters with the model's own
    tokenizer, without special tokens added (a fast tokenizer encodes a batch at once)."""
    if tokenizer is None:
        raise InputError("The model has no tokenizer files, so a corpus cannot be tokenized.")
    batch: list[Document] = []
    size = 0
    for doc in documents:
        batch.append(doc)
        size += len(doc.text)
        if size >= batch_chars:
            yield from _encode(tokenizer, batch)
            batch, size = [], 0
    if batch:
        yield from _encode(tokenizer, batch)


def _encode(tokenizer, batch: Sequence[Document]) -> Iterator[TokenPiece]:
    enc = tokenizer([d.text for d in batch], add_special_tokens=False)["input_ids"]
    for doc, ids in zip(batch, enc):
        yield TokenPiece(list(ids), doc.continued)


def iter_windows(pieces: Iterable[TokenPiece], n_positions: int,
                 prepend: int | None = None) -> Iterator[list[int]]:
    """Cut each document's tokens into consecutive windows of at most `n_positions`
    tokens (the last window of a document may be shorter). With `prepend` (a token id,
    e.g. <|endoftext|> as the authors did), every window starts with it and holds at most
    n_positions - 1 of the document's tokens."""
    size = int(n_positions) - (prepend is not None)
    if size < 1:
        raise InputError(f"n_positions {n_positions} leaves no room for a window.")
    head = [prepend] if prepend is not None else []
    buf: list[int] = []
    for piece in pieces:
        if not piece.continued and buf:
            yield head + buf
            buf = []
        buf.extend(piece.ids)
        while len(buf) > size:
            yield head + buf[:size]
            buf = buf[size:]
    if buf:
        yield head + buf


def corpus_windows(paths, tokenizer, n_positions: int, *, prepend_eos: bool = False,
                   reader: CorpusReader | None = None) -> Iterator[list[int]]:
    """Windows of the corpus at `paths` (see `iter_windows`); pass `reader` to follow its
    progress (`reader.fraction`). `prepend_eos` starts every window with the tokenizer's
    end-of-text token."""
    reader = reader or CorpusReader(paths)
    eos = None
    if prepend_eos:
        eos = getattr(tokenizer, "eos_token_id", None)
        if eos is None:
            raise InputError("The tokenizer has no end-of-text token to prepend.")
    return iter_windows(iter_token_pieces(tokenizer, reader), n_positions, eos)
