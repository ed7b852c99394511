"""Reading one corpus file (a shard) as documents, whole or one piece of it at a time.

Shards, by name:

- `.txt` and `.jsonl`, each plain or compressed (`.gz`, `.zst`): lines, decoded strictly as
  UTF-8. A `.jsonl` line is a JSON object whose text field (`text`, or the column named
  by `text_column`) is one document; other fields are ignored, blank lines skipped. A
  `.txt` document is the part between lines that hold only `<|endoftext|>` (EOT_LINE, a
  file convention of GPT-2 corpora, never tokenized); a very long one is handed on in
  pieces of about PIECE_CHARS characters cut where GPT-2's pre-tokenizer cuts too
  (`Document.continued` marks the later pieces of one document).
- `.parquet` (pyarrow) and `.arrow` (Arrow IPC, as a file or as the stream `datasets`
  writes): every non-null, non-blank value of the string column `text_column` (default
  "text") is one document.

Nothing is held whole: lines are read in chunks of _READ_BYTES (a `.zst` is fed to the
decompressor 4 KB at a time, so even a pathological frame decompresses in bounded
steps), a parquet file one row group's batch at a time, an arrow file one record batch at
a time; nothing is memory-mapped (a file truncated while mapped would crash the reader).

A *piece* of a shard is a range [start, end) of positions (`plan_shard`, the units the
count is split into): byte offsets of a plain file, decompressed byte offsets of a
compressed one (read from the beginning: a compressed stream cannot be entered in the
middle), row indices of a parquet or arrow file. A piece reads the documents whose
position lies in its range, reading on past `end` to finish the last one, so that every
document belongs to exactly one piece and documents stay documents. The position of a
document (`Document.pos`) is its line's offset for jsonl, the offset of the separator line
before it for txt (0 for the first), its row for tables: a piece stopped before some
document continues from that document's position.

Bad input raises `InputError`, one line naming the file and the place (line, byte offset,
row group or row): missing or unreadable paths, files that are not regular files, empty
files, binary or non-UTF-8 data, invalid or truncated gzip and zstd data, jsonl lines that
are not objects with a string text field, a parquet or arrow file that cannot be read, a
missing or non-string text column.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import os
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from detokgui.core.base.errors import InputError

TEXT_COLUMN = "text"
EOT_LINE = "<|endoftext|>"  # the .txt document separator line (a file convention, not a token)
PIECE_CHARS = 1 << 20  # hand a long .txt document on in pieces of about 1M characters
TEXT_SUFFIXES = (".txt", ".jsonl")
COMPRESSIONS = ("", ".gz", ".zst")
TABLE_SUFFIXES = (".parquet", ".arrow")
SUFFIXES = (*(t + c for c in COMPRESSIONS for t in TEXT_SUFFIXES), *TABLE_SUFFIXES)
KINDS_LINE = ".txt, .jsonl (optionally .gz or .zst), .parquet, .arrow"
_READ_BYTES = 1 << 16
_ZSTD_FEED = 1 << 12  # compressed bytes per decompressor call: bounds its output
_TABLE_ROWS = 1024  # rows converted to Python strings at a time
_EOT_BYTES = EOT_LINE.encode()


def kind_of(path: str | os.PathLike) -> str | None:
    """The shard kind of a file name: its corpus suffix (".jsonl.zst", ".parquet", ...), or
    None for any other name."""
    name = Path(path).name.lower()
    return next((s for s in sorted(SUFFIXES, key=len, reverse=True) if name.endswith(s)), None)


def _compression(kind: str) -> str:
    return next((c for c in (".gz", ".zst") if kind.endswith(c)), "")


@dataclass(frozen=True)
class Document:
    """One document, or one piece of a long one (`continued`: same document as the
    previous piece). `line` is its 1-based line (row, for a table) in the (decompressed)
    file, 0 where unknown; `pos` its position (see the module docstring)."""

    text: str
    source: str  # the file it came from
    line: int
    continued: bool = False
    pos: int = 0


# --------------------------------------------------------------------------- opening

_NOT_REGULAR = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                (stat.S_ISSOCK, "a socket"))


def file_type(mode: int) -> str:
    """What a stat mode is, in words: "a regular file", "a named pipe (FIFO)", ..."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _NOT_REGULAR if test(mode)), "not a regular file")


def not_regular(path: Path, mode: int) -> InputError:
    link = f" (a link to {os.path.realpath(path)})" if os.path.islink(path) else ""
    return InputError(f"{path}{link} is {file_type(mode)}, not a regular file; only regular "
                      "files are read as corpus files.")


def stat_path(path: Path) -> os.stat_result:
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
    st = stat_path(path)
    if not stat.S_ISREG(st.st_mode):
        raise not_regular(path, st.st_mode)
    nonblock = getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, os.O_RDONLY | nonblock | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise InputError(f"{path}: cannot open ({exc.strerror or exc}).") from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise not_regular(path, mode)
        if nonblock:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def file_stamp(path: str | os.PathLike) -> tuple[int, ...]:
    """(device, inode, size, mtime, ctime) of a file: what any rewrite or edit changes
    (ctime cannot be set back); InputError when it cannot be read."""
    st = stat_path(Path(path))
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def hash_file(path: str | os.PathLike, block: int = 1 << 20) -> tuple[str, int]:
    """(SHA-256 hex digest, size in bytes) of a corpus file's stored bytes."""
    h = hashlib.sha256()
    n = 0
    with open_corpus_file(path) as f:
        try:
            while chunk := f.read(block):
                h.update(chunk)
                n += len(chunk)
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror or exc}).") from exc
    return h.hexdigest(), n


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"


class Progress:
    """How far a reader got: `stored` runs from `lo` to `hi` (stored byte offsets of a
    text file, rows of a table) as it reads; `fraction` is the share of that span done."""

    def __init__(self):
        self.stored, self.lo, self.hi = 0, 0, 0

    @property
    def fraction(self) -> float:
        if self.hi <= self.lo:
            return 0.0
        return min(1.0, max(0.0, (self.stored - self.lo) / (self.hi - self.lo)))


# --------------------------------------------------------------------------- lines


def _chunks(raw: BinaryIO, compression: str, path: Path, where: Progress) -> Iterator[bytes]:
    """The file's (decompressed) bytes in chunks, with `where.stored` the stored bytes
    consumed so far. InputError for invalid or truncated compressed data."""
    if compression == ".gz":
        g = gzip.GzipFile(fileobj=raw, mode="rb")
        while True:
            try:
                chunk = g.read(_READ_BYTES)
            except (OSError, EOFError, zlib.error) as exc:
                raise InputError(f"{path}: not a valid gzip file ({_one_line(exc)}).") from None
            where.stored = raw.tell()
            if not chunk:
                return
            yield chunk
    elif compression == ".zst":
        yield from _zstd_chunks(raw, path, where)
    else:
        while chunk := raw.read(_READ_BYTES):
            where.stored = raw.tell()
            yield chunk


def _zstd_chunks(raw: BinaryIO, path: Path, where: Progress) -> Iterator[bytes]:
    """Decompressed bytes of a .zst file of one or more frames; InputError when the data is
    not zstd or ends inside a frame (a truncated file)."""
    import zstandard

    dctx = zstandard.ZstdDecompressor()
    dobj, in_frame, offset = dctx.decompressobj(), False, 0
    while data := raw.read(_READ_BYTES):
        where.stored = raw.tell()
        view = memoryview(data)
        while view:
            feed, view = view[:_ZSTD_FEED], view[_ZSTD_FEED:]
            try:
                out = dobj.decompress(feed)
            except zstandard.ZstdError as exc:
                raise InputError(f"{path}: not valid zstd data ({_one_line(exc)}).") from None
            in_frame = True
            if out:
                offset += len(out)
                yield out
            if dobj.eof:  # a frame ended: what is left starts the next one
                rest = dobj.unused_data
                dobj, in_frame = dctx.decompressobj(), False
                if rest:
                    view = memoryview(bytes(rest) + bytes(view))
    if in_frame and not dobj.eof:
        raise InputError(f"{path}: truncated zstd data (the file ends inside a frame, after "
                         f"{offset} decompressed bytes).")


def _lines(path: Path, compression: str, start: int, where: Progress
           ) -> Iterator[tuple[int, bytes]]:
    """(offset of the line's start in the decompressed file, the line's bytes with its
    newline) from the first line that starts at or after `start`. InputError for binary
    data (a NUL byte) or an empty file."""
    offset_word = "decompressed byte offset" if compression else "byte offset"
    with open_corpus_file(path) as raw:
        skip = max(0, start - 1)  # the byte before `start` says whether a line starts there
        if skip and not compression:
            raw.seek(skip)
        offset = skip if not compression else 0
        pending = b""
        started = start == 0
        empty = True
        for chunk in _chunks(raw, compression, path, where):
            empty = False
            if offset + len(chunk) <= skip:  # a compressed file: decompress up to `start`
                offset += len(chunk)
                continue
            if offset < skip:
                chunk = chunk[skip - offset:]
                offset = skip
            nul = chunk.find(b"\x00")
            if nul >= 0:
                raise InputError(f"{path}: binary data (a NUL byte at {offset_word} "
                                 f"{offset + nul}); a corpus file must be UTF-8 text.")
            if not started:
                cut = chunk.find(b"\n")
                if cut < 0:
                    offset += len(chunk)
                    continue
                chunk = chunk[cut + 1:]
                offset += cut + 1
                started = True
            line_start = offset - len(pending)
            data = pending + chunk if pending else chunk
            offset += len(chunk)
            lines = data.split(b"\n")
            pending = lines.pop()
            for line in lines:
                yield line_start, line + b"\n"
                line_start += len(line) + 1
        if empty and start == 0:
            raise InputError(f"{path}: the file is empty.")
        if pending and started:
            yield offset - len(pending), pending


def _decode(path: Path, line: bytes, at: int, compression: str) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        word = "decompressed byte offset" if compression else "byte offset"
        raise InputError(f"{path}: not UTF-8 text (an invalid byte at {word} "
                         f"{at + exc.start}).") from None


class _Lines:
    """Line numbers for messages: exact from the start of the file; a piece that starts
    later counts the lines before it only when a message needs one."""

    def __init__(self, path: Path, compression: str, start: int):
        self.path, self.compression, self.start = path, compression, start
        self.count = 0

    def __call__(self, line_start: int) -> int:
        self.count += 1
        return self.count if self.start == 0 else 0

    def number(self, line_start: int, counted: int) -> int:
        if counted:
            return counted
        n = 0
        where = Progress()
        with open_corpus_file(self.path) as raw:
            done = 0
            for chunk in _chunks(raw, self.compression, self.path, where):
                part = chunk[: max(0, line_start - done)]
                n += part.count(b"\n")
                done += len(chunk)
                if done >= line_start:
                    break
        return n + 1


def _jsonl_documents(path: Path, compression: str, start: int, end: int | None,
                     column: str, where: Progress) -> Iterator[Document]:
    lines = _Lines(path, compression, start)
    for at, raw_line in _lines(path, compression, start, where):
        if end is not None and at >= end:
            return
        lineno = lines(at)
        line = _decode(path, raw_line, at, compression)
        if not line.strip():
            continue

        def here(at=at, lineno=lineno) -> str:
            return f"{path}, line {lines.number(at, lineno)}"

        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{here()}: not valid JSON ({exc.msg}).") from None
        if not isinstance(obj, dict):
            raise InputError(f"{here()}: {_json_type(obj)}, not an object with a "
                             f"\"{column}\" field.")
        if column not in obj:
            raise InputError(f"{here()}: the JSON object has no \"{column}\" field.")
        text = obj[column]
        if not isinstance(text, str):
            raise InputError(f"{here()}: \"{column}\" is not a string.")
        if "\x00" in text:
            raise InputError(f"{here()}: the text holds NUL characters (binary data?).")
        if text.strip():
            yield Document(text, str(path), lineno, False, at)


def _is_separator(line: bytes) -> bool:
    return _EOT_BYTES in line and line.decode("utf-8", "replace").strip() == EOT_LINE


def _txt_documents(path: Path, compression: str, start: int, end: int | None,
                   piece_chars: int, where: Progress) -> Iterator[Document]:
    """The documents of a .txt from `start`: the one at offset 0 when start is 0, and
    those after each separator line that starts in [start, end)."""
    lines = _Lines(path, compression, start)
    buf: list[str] = []
    size, continued = 0, False
    inside = start == 0  # reading a document this piece owns
    doc_pos, doc_line = 0, 1 if start == 0 else 0
    for at, raw_line in _lines(path, compression, start, where):
        lineno = lines(at)
        if _is_separator(raw_line):
            if inside and buf and ("".join(buf).strip() or continued):
                yield Document("".join(buf), str(path), doc_line, continued, doc_pos)
            buf, size, continued = [], 0, False
            if end is not None and at >= end:
                return
            inside, doc_pos, doc_line = True, at, lineno + 1 if lineno else 0
            continue
        if not inside:
            if end is not None and at >= end:
                return
            continue
        line = _decode(path, raw_line, at, compression)
        if size >= piece_chars and _safe_cut(buf[-1], line):
            yield Document("".join(buf), str(path), doc_line, continued, doc_pos)
            buf, size, continued = [], 0, True
        buf.append(line)
        size += len(line)
    if inside and buf and ("".join(buf).strip() or continued):
        yield Document("".join(buf), str(path), doc_line, continued, doc_pos)


def _safe_cut(previous: str, line: str) -> bool:
    """Cutting between these two lines leaves GPT-2's pre-tokenization unchanged: the
    previous line ends in a single newline after a non-space, the next starts with a
    non-space character."""
    return (previous.endswith("\n") and len(previous) >= 2 and not previous[-2].isspace()
            and bool(line) and not line[0].isspace())


def _json_type(value) -> str:
    """A JSON value's type in words: "a JSON array", "a JSON string", ..."""
    for types, name in ((list, "a JSON array"), (str, "a JSON string"),
                        (bool, f"JSON {json.dumps(value)}"), ((int, float), "a JSON number"),
                        (type(None), "JSON null")):
        if isinstance(value, types):
            return name
    return "not a JSON object"


def whole_documents(documents) -> Iterator[Document]:
    """The documents with each one's continued pieces joined to it (once, not piece by
    piece: a document of many pieces is copied once): for a tokenizer other than
    byte-level BPE, whose tokens may differ where a document is cut."""
    head: Document | None = None
    parts: list[str] = []

    def whole() -> Document:
        return head if len(parts) == 1 else Document("".join(parts), head.source, head.line,
                                                     head.continued, head.pos)

    for doc in documents:
        if doc.continued and head is not None:
            parts.append(doc.text)
            continue
        if head is not None:
            yield whole()
        head, parts = doc, [doc.text]
    if head is not None:
        yield whole()


# --------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class Unit:
    """A unit of a table read at once: a parquet row group or an arrow record batch.
    `locator`: the row group's or batch's index, or for an arrow stream the byte offset
    of the batch's message; `first` its first row in the file; `rows`; `size` the text
    column's bytes (uncompressed), which the pieces are sized by."""

    locator: int
    first: int
    rows: int
    size: int


def _arrow():
    import pyarrow  # a heavy import, only for shards that need it

    return pyarrow


def _text_type_ok(pa, t) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    return (pa.types.is_string(t) or pa.types.is_large_string(t)
            or getattr(pa.types, "is_string_view", lambda _: False)(t))


def check_column(path: Path, schema, column: str) -> None:
    """InputError when the table schema has no string column `column`."""
    pa = _arrow()
    names = list(schema.names)
    if column not in names:
        shown = ", ".join(names[:12]) + (", …" if len(names) > 12 else "")
        raise InputError(f"{path} has no column \"{column}\" (its columns: {shown or 'none'}); "
                         "name the column that holds the text (--text-column, text_column=).")
    t = schema.field(column).type
    if not _text_type_ok(pa, t):
        raise InputError(f"{path}: the column \"{column}\" holds {t}, not text (strings); "
                         "name the column that holds the text (--text-column, text_column=).")


def _table_error(path: Path, what: str, exc: BaseException) -> InputError:
    return InputError(f"{path}: {what} ({_one_line(exc)}).")


def _parquet(path: Path):
    pa = _arrow()
    import pyarrow.parquet as pq

    with open_corpus_file(path):
        pass  # the regular-file checks; pyarrow opens it again, natively
    try:
        return pq.ParquetFile(str(path))
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise _table_error(path, "not a readable parquet file", exc) from None


def _parquet_units(path: Path, pf, column: str) -> list[Unit]:
    meta = pf.metadata
    index = pf.schema_arrow.get_field_index(column)
    units, first = [], 0
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        size = 0
        for c in range(rg.num_columns):
            col = rg.column(c)
            if col.path_in_schema.split(".")[0] == column or c == index:
                size = int(col.total_uncompressed_size)
                break
        units.append(Unit(g, first, int(rg.num_rows), size))
        first += int(rg.num_rows)
    return units


def _arrow_open(path: Path):
    """("file" or "stream", the reader, the open file) of an Arrow IPC file."""
    pa = _arrow()
    from pyarrow import ipc

    with open_corpus_file(path) as raw:
        magic = raw.read(6)
    f = pa.OSFile(str(path))
    try:
        if magic == b"ARROW1":
            return "file", ipc.open_file(f), f
        return "stream", ipc.open_stream(f), f
    except (pa.ArrowException, OSError, ValueError) as exc:
        f.close()
        if not magic:
            raise InputError(f"{path}: the file is empty.") from None
        raise _table_error(path, "not a readable Arrow IPC file", exc) from None


def _column_bytes(array) -> int:
    return int(sum(b.size for b in array.buffers() if b is not None))


def _arrow_units(path: Path, column: str) -> list[Unit]:
    pa = _arrow()
    kind, reader, f = _arrow_open(path)
    try:
        check_column(path, reader.schema, column)
        index = reader.schema.get_field_index(column)
        units, first = [], 0
        try:
            if kind == "file":
                for i in range(reader.num_record_batches):
                    b = reader.get_batch(i)
                    units.append(Unit(i, first, b.num_rows, _column_bytes(b.column(index))))
                    first += b.num_rows
            else:
                sequential = any(pa.types.is_dictionary(t) for t in reader.schema.types)
                while True:
                    at = f.tell()
                    try:
                        b = reader.read_next_batch()
                    except StopIteration:
                        break
                    units.append(Unit(-1 if sequential else at, first, b.num_rows,
                                      _column_bytes(b.column(index))))
                    first += b.num_rows
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise _table_error(path, f"a damaged Arrow IPC file (record batch {len(units)})",
                               exc) from None
        return units
    finally:
        f.close()


def table_units(path: Path, kind: str, column: str) -> list[Unit]:
    """The row groups (parquet) or record batches (arrow) of a table shard, after checking
    that it can be read and has the string column `column`."""
    if kind == ".parquet":
        pf = _parquet(path)
        check_column(path, pf.schema_arrow, column)
        return _parquet_units(path, pf, column)
    return _arrow_units(path, column)


def _values(path: Path, array, first: int, lo: int, hi: int) -> Iterator[Document]:
    """Documents of rows [lo, hi) of a string array whose row 0 is file row `first`."""
    for a in range(lo, hi, _TABLE_ROWS):
        b = min(hi, a + _TABLE_ROWS)
        for k, text in enumerate(array.slice(a, b - a).to_pylist()):
            if text is None:
                continue
            row = first + a + k
            if "\x00" in text:
                raise InputError(f"{path}, row {row + 1}: the text holds NUL characters "
                                 "(binary data?).")
            if text.strip():
                yield Document(text, str(path), row + 1, False, row)


def _table_documents(path: Path, kind: str, start: int, end: int | None, column: str,
                     units, where: Progress) -> Iterator[Document]:
    pa = _arrow()
    if units:
        where.lo, where.hi = start, min(end, units[-1].first + units[-1].rows) if end else (
            units[-1].first + units[-1].rows)
    end = float("inf") if end is None else end
    units = [u for u in units if u.first + u.rows > start and u.first < end]
    if kind == ".parquet":
        pf = _parquet(path)
        check_column(path, pf.schema_arrow, column)
        for u in units:
            row = u.first
            batches = pf.iter_batches(batch_size=_TABLE_ROWS * 8, row_groups=[u.locator],
                                      columns=[column], use_threads=False)
            while True:
                try:
                    batch = next(batches)
                except StopIteration:
                    break
                except (pa.ArrowException, OSError, ValueError) as exc:
                    raise _table_error(path, f"row group {u.locator} cannot be read",
                                       exc) from None
                arr = batch.column(0)
                n = len(arr)
                lo, hi = max(0, start - row), min(n, end - row)
                if lo < hi:
                    yield from _values(path, arr, row, int(lo), int(hi))
                row += n
                where.stored = row
        return
    fkind, reader, f = _arrow_open(path)
    try:
        check_column(path, reader.schema, column)
        index = reader.schema.get_field_index(column)
        if fkind == "stream" and any(u.locator < 0 for u in units):
            batches, first = _stream_batches(path, reader), 0  # dictionaries: from the start
        else:
            batches = (_arrow_batch(path, fkind, reader, f, u) for u in units)
            first = units[0].first if units else 0
        for batch in batches:
            rows = batch.num_rows
            if first >= end:
                break
            if first + rows > start:
                arr = batch.column(index)
                lo, hi = max(0, start - first), min(rows, end - first)
                yield from _values(path, arr, first, int(lo), int(hi))
            first += rows
            where.stored = first
    finally:
        f.close()


def _arrow_batch(path: Path, fkind: str, reader, f, u: Unit):
    pa = _arrow()
    from pyarrow import ipc

    try:
        if fkind == "file":
            return reader.get_batch(u.locator)
        f.seek(u.locator)
        return ipc.read_record_batch(ipc.read_message(f), reader.schema)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise _table_error(path, f"the record batch at row {u.first + 1} cannot be read",
                           exc) from None


def _stream_batches(path: Path, reader):
    pa = _arrow()
    while True:
        try:
            yield reader.read_next_batch()
        except StopIteration:
            return
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise _table_error(path, "a damaged Arrow IPC stream", exc) from None


# --------------------------------------------------------------------------- a shard


def read_documents(path: str | os.PathLike, kind: str | None = None, start: int = 0,
                   end: int | None = None, *, text_column: str = TEXT_COLUMN,
                   units=None, piece_chars: int = PIECE_CHARS,
                   where: Progress | None = None) -> Iterator[Document]:
    """The documents of the shard `path` whose positions lie in [start, end) (end None:
    to the end; see the module docstring). `units`: a table's row groups or batches
    (`table_units`), read from the file when not given. `where.stored` follows the
    stored bytes consumed."""
    path = Path(path)
    kind = kind or kind_of(path)
    where = where or Progress()
    if kind is None:
        raise InputError(f"{path}: unsupported file type; a corpus file ends in "
                         f"{', '.join(SUFFIXES)}.")
    if kind in TABLE_SUFFIXES:
        if units is None:
            units = table_units(path, kind, text_column)
        return _table_documents(path, kind, start, end, text_column, units, where)
    compression = _compression(kind)
    size = stat_path(path).st_size
    where.lo, where.hi = (0, size) if compression else (start, size if end is None else end)
    if kind.startswith(".jsonl"):
        return _jsonl_documents(path, compression, start, end, text_column, where)
    return _txt_documents(path, compression, start, end, piece_chars, where)


@dataclass(frozen=True)
class PlannedPiece:
    """A piece of a shard: positions [start, end) (end None: to the end of a compressed
    file), `weight` the stored bytes it stands for (progress), and the table units it
    reads (none for text files)."""

    start: int
    end: int | None
    weight: int
    units: tuple = field(default=())


def plan_shard(path: str | os.PathLike, kind: str, text_column: str,
               piece_bytes: int) -> list[PlannedPiece]:
    """The pieces of a shard, each about `piece_bytes` of text (at least one row group or
    record batch of a table; a compressed text file is one piece: it cannot be entered in
    the middle). Reads a table's footer or batch headers (and checks its text column),
    nothing else."""
    path = Path(path)
    size = stat_path(path).st_size
    piece_bytes = max(1, int(piece_bytes))
    if kind in TABLE_SUFFIXES:
        units = table_units(path, kind, text_column)
        groups: list[list[Unit]] = []
        for u in units:
            if groups and sum(x.size for x in groups[-1]) + u.size <= piece_bytes:
                groups[-1].append(u)
            else:
                groups.append([u])
        total = sum(u.size for u in units) or 1
        return [PlannedPiece(g[0].first, g[-1].first + g[-1].rows,
                             int(size * sum(u.size for u in g) / total), tuple(g))
                for g in groups]
    if _compression(kind) or size <= piece_bytes:
        return [PlannedPiece(0, None if _compression(kind) else size, size)]
    cuts = list(range(0, size, piece_bytes)) + [size]
    return [PlannedPiece(a, b, b - a) for a, b in itertools.pairwise(cuts)]
