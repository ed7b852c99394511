"""Reading a user's corpus: files -> documents -> token pieces -> windows, streamed.

A corpus is one or more files or folders. Files are `.txt` or `.jsonl`, each optionally
gzipped (`.txt.gz`, `.jsonl.gz`); folders are searched recursively for such files.

- A document is a jsonl line's `text` field (other fields are ignored, blank lines are
  skipped), or a part of a `.txt` file between lines that hold only `<|endoftext|>`
  (EOT_LINE). That line is a file-format convention (GPT-2 corpora are written so), read
  whatever the model's tokenizer: it is never tokenized, and need not be a token of the
  model.
- Nothing is held whole: files are read line by line, and a very long `.txt` document is
  handed on in pieces of about `PIECE_CHARS` characters, cut only where GPT-2's
  pre-tokenizer would cut too (after a line ending in one newline, before a line starting
  with a non-space character), so the pieces tokenize exactly as the whole would (with a
  byte-level BPE tokenizer; `iter_token_pieces` joins them back for any other).
  `Document.continued` marks a piece that continues the previous piece's document: no
  bigram and no window spans two documents, but they do span the pieces of one.
- Only regular files (or links to them) are read: a named pipe, a device (a link to
  /dev/zero), a socket named as a corpus file is refused before anything is read from it
  (it could be read forever, or only once). In a folder, such entries and files of other
  types are not read but listed as skipped (`CorpusScan.skipped`, `skipped_line`).
- Bad input raises `InputError` with a one-line message naming the file (and the line or
  byte offset): missing or unreadable paths, unsupported file types, files that are not
  regular files, empty files, binary or non-UTF-8 data, invalid gzip, jsonl lines that
  are not JSON objects with a string `text`.
"""

from __future__ import annotations

import codecs
import gzip
import json
import os
import stat
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from detokgui.core.base.errors import InputError
from detokgui.core.model.sources.demo import sample_corpus
from detokgui.core.model.tokens import BYTE_LEVEL, bos_id, scheme

SUFFIXES = (".txt", ".jsonl", ".txt.gz", ".jsonl.gz")
EOT_LINE = "<|endoftext|>"  # the .txt document separator line (a file convention, not a token)
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

_NOT_REGULAR = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                (stat.S_ISSOCK, "a socket"))


def file_type(mode: int) -> str:
    """What a stat mode is, in words: "a regular file", "a named pipe (FIFO)", ..."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _NOT_REGULAR if test(mode)), "not a regular file")


def _not_regular(path: Path, mode: int) -> InputError:
    link = f" (a link to {os.path.realpath(path)})" if os.path.islink(path) else ""
    return InputError(f"{path}{link} is {file_type(mode)}, not a regular file; only regular "
                      "files are read as corpus files.")


def _stat(path: Path) -> os.stat_result:
    """os.stat of `path` (following links); InputError when it cannot be made."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise InputError(f"{path} is a link to {os.readlink(path)}, which does not "
                             "exist.") from None
        raise InputError(f"The corpus file {path} does not exist (no such file or "
                         "folder).") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc}).") from exc


def open_corpus_file(path: str | os.PathLike) -> BinaryIO:
    """`path` opened for reading bytes, when it is (or links to) a regular file; else
    InputError naming the path and what it is (a FIFO, a device, a socket, a folder).

    The open itself never waits (O_NONBLOCK: opening a FIFO without a writer would), and
    the check is repeated on the opened file, so a path swapped for a FIFO in between is
    refused too."""
    path = Path(path)
    st = _stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, st.st_mode)
    nonblock = getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, os.O_RDONLY | nonblock | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise InputError(f"{path}: cannot open ({exc.strerror or exc}).") from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode)
        if nonblock:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


@dataclass(frozen=True)
class Skipped:
    """A folder entry that is not read as part of the corpus, and why."""

    path: Path
    reason: str


@dataclass(frozen=True)
class CorpusScan:
    """The corpus files behind some paths, and the folder entries skipped."""

    files: list[Path]
    skipped: list[Skipped] = field(default_factory=list)


def _folder_entry(f: Path) -> Path | Skipped | None:
    """A folder entry as a corpus file, a Skipped entry, or None (a sub-folder)."""
    try:
        mode = os.stat(f).st_mode
    except FileNotFoundError:
        return Skipped(f, "a broken link") if os.path.islink(f) else None
    except OSError as exc:
        return Skipped(f, f"cannot be read: {exc.strerror or exc}")
    if stat.S_ISDIR(mode):
        return None
    if not stat.S_ISREG(mode):
        return Skipped(f, file_type(mode))
    if _kind(f) is None:
        return Skipped(f, "not a .txt or .jsonl file")
    return f


def scan_corpus(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> CorpusScan:
    """The corpus files named by `paths`: files, or folders searched recursively for
    .txt/.jsonl[.gz] regular files (in sorted order), and the folder entries skipped
    (other file types, named pipes, devices, sockets, broken links). Hidden entries (a name
    starting with ".", such as .git, and everything under them) are neither read nor listed. Raises InputError
    for a missing path, a path named explicitly that is not a regular corpus file, or when
    no corpus file is found. The name SAMPLE_NAME ("sample"), when no such file exists, is
    the sample corpus shipped in the package."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[Path] = []
    skipped: list[Skipped] = []
    for p in map(Path, paths):
        if str(p) == SAMPLE_NAME and not os.path.lexists(p):

            files.append(sample_corpus())
            continue
        mode = _stat(p).st_mode
        if stat.S_ISDIR(mode):
            try:
                entries = sorted(f for f in p.rglob("*") if not _hidden(f.relative_to(p)))
            except OSError as exc:
                raise InputError(f"{p}: cannot list the folder ({exc.strerror or exc}).") from exc
            for f in entries:
                got = _folder_entry(f)
                if isinstance(got, Skipped):
                    skipped.append(got)
                elif got is not None:
                    files.append(got)
        elif not stat.S_ISREG(mode):
            raise _not_regular(p, mode)
        elif _kind(p) is None:
            raise InputError(
                f"{p}: unsupported file type; a corpus file ends in {', '.join(SUFFIXES)}."
            )
        else:
            files.append(p)
    if not files:
        raise InputError("No corpus files (.txt, .jsonl, optionally .gz) were found"
                         + (f"; {skipped_line(skipped)}." if skipped else "."))
    seen, unique = set(), []
    for f in files:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return CorpusScan(unique, skipped)


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def corpus_files(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    """The corpus files of `scan_corpus(paths)`."""
    return scan_corpus(paths).files


def skipped_line(skipped: Sequence[Skipped], shown: int = 5) -> str:
    """One line listing the skipped folder entries: "skipped 2 files: a/notes.md (not a
    .txt or .jsonl file), a/p.txt (a named pipe (FIFO))", the first `shown` of them."""
    items = [f"{s.path} ({s.reason})" for s in skipped[:shown]]
    if len(skipped) > shown:
        items.append(f"and {len(skipped) - shown} more")
    n = len(skipped)
    return f"skipped {n} file{'s' * (n != 1)} of the corpus folder: " + ", ".join(items)


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
        if not isinstance(obj, dict):
            raise InputError(f"{path}, line {lineno}: {_json_type(obj)}, not an object with a "
                             "\"text\" field.")
        if "text" not in obj:
            raise InputError(f"{path}, line {lineno}: the JSON object has no \"text\" field.")
        text = obj["text"]
        if not isinstance(text, str):
            raise InputError(f"{path}, line {lineno}: \"text\" is not a string.")
        if "\x00" in text:
            raise InputError(f"{path}, line {lineno}: the text holds NUL characters "
                             "(binary data?).")
        if text.strip():
            yield Document(text, str(path), lineno), consumed


def _json_type(value) -> str:
    """A JSON value's type in words: "a JSON array", "a JSON string", ..."""
    for types, name in ((list, "a JSON array"), (str, "a JSON string"),
                        (bool, f"JSON {json.dumps(value)}"), ((int, float), "a JSON number"),
                        (type(None), "JSON null")):
        if isinstance(value, types):
            return name
    return "not a JSON object"


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
    with open_corpus_file(path) as raw:
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
    tokenizer, without special tokens added (a fast tokenizer encodes a batch at once).

    The pieces of a long document are cut where GPT-2's byte-level pre-tokenizer cuts too;
    for any other tokenizer (sentencepiece adds a word-start '▁' at the start of every
    text it encodes) they are joined back and the document is encoded whole."""
    if tokenizer is None:
        raise InputError("The model has no tokenizer files, so a corpus cannot be tokenized.")

    if scheme(tokenizer) != BYTE_LEVEL:
        documents = _whole_documents(documents)
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


def _whole_documents(documents: Iterable[Document]) -> Iterator[Document]:
    """The documents with each one's continued pieces joined to it (once, not piece by
    piece: a document of many pieces is copied once)."""
    head: Document | None = None
    parts: list[str] = []

    def whole() -> Document:
        return head if len(parts) == 1 else Document("".join(parts), head.source, head.line,
                                                     head.continued)

    for doc in documents:
        if doc.continued and head is not None:
            parts.append(doc.text)
            continue
        if head is not None:
            yield whole()
        head, parts = doc, [doc.text]
    if head is not None:
        yield whole()


def _encode(tokenizer, batch: Sequence[Document]) -> Iterator[TokenPiece]:
    enc = tokenizer([d.text for d in batch], add_special_tokens=False)["input_ids"]
    for doc, ids in zip(batch, enc):
        yield TokenPiece(list(ids), doc.continued)


def iter_windows(pieces: Iterable[TokenPiece], n_positions: int,
                 prepend: int | None = None) -> Iterator[list[int]]:
    """Cut each document's tokens into consecutive windows of at most `n_positions`
    tokens (the last window of a document may be shorter). With `prepend` (a token id,
    e.g. the model's BOS, as the authors prepended GPT-2's <|endoftext|>), every window
    starts with it and holds at most
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


def corpus_windows(paths, tokenizer, n_positions: int, *, prepend_bos: bool = False,
                   reader: CorpusReader | None = None) -> Iterator[list[int]]:
    """Windows of the corpus at `paths` (see `iter_windows`); pass `reader` to follow its
    progress (`reader.fraction`). `prepend_bos` ("prepend BOS") starts every window with
    the model's own BOS token, `tokens.bos_id`: the tokenizer's bos_token_id, else its
    eos_token_id (GPT-2: <|endoftext|>, OPT: </s>); InputError when it has neither."""

    reader = reader or CorpusReader(paths)
    bos = None
    if prepend_bos:
        if tokenizer is None:
            raise InputError("The model has no tokenizer files, so a corpus cannot be "
                             "tokenized.")
        bos = bos_id(tokenizer)
        if bos is None:
            raise InputError("The model's tokenizer has neither a BOS nor an EOS token, so "
                             "there is nothing to prepend; turn 'prepend BOS' off.")
    return iter_windows(iter_token_pieces(tokenizer, reader), n_positions, bos)
