"""A user's corpus: paths -> corpus files -> documents -> token pieces -> windows, streamed.

A corpus is one or more files, folders or glob patterns (`scan_corpus`). Corpus files are
`.txt` or `.jsonl` (plain, `.gz` or `.zst`), `.parquet` and `.arrow` (an Arrow IPC file,
or a folder written by `datasets`' save_to_disk or found in its cache); folders are
searched recursively. A file is read by `core.corpus.readers` (what a document is in each
format, and the messages of bad input); this module walks the paths and reads the files
one after the other (`CorpusReader`), tokenizes documents in batches with the model's
fast tokenizer (`iter_token_pieces`) and cuts them into windows (`iter_windows`).

- No bigram and no window spans two documents; they do span the pieces of one long
  `.txt` document (`Document.continued`).
- Only regular files (or links to them) are read: a named pipe, a device (a link to
  /dev/zero), a socket named as a corpus file is refused before anything is read from it
  (it could be read forever, or only once). In a folder, such entries and files of other
  types are not read but listed as skipped (`CorpusScan.skipped`, `skipped_line`); so are
  the files of a `datasets` folder that are not its data (`cache-*.arrow` results of a
  map or filter beside dataset_info.json, arrow files state.json does not list), while
  its metadata files (state.json, dataset_info.json, dataset_dict.json, locks) are passed
  over in silence.
- A counts file (`.npz`, `core.corpus.countsfile`) stands for a counted corpus where
  counts are asked for (`CorpusScan.counts`); what reads texts refuses it in one line.
"""

from __future__ import annotations

import glob
import json
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from detokgui.core.base.errors import InputError
from detokgui.core.corpus.readers import (
    EOT_LINE,
    KINDS_LINE,
    PIECE_CHARS,
    SUFFIXES,
    Document,
    Progress,
    file_type,
    kind_of,
    not_regular,
    open_corpus_file,
    read_documents,
    stat_path,
    whole_documents,
)
from detokgui.core.corpus.spec import Corpus, as_corpus
from detokgui.core.model.fast_tokenizer import encode_batch
from detokgui.core.model.sources.demo import sample_corpus
from detokgui.core.model.tokens import BYTE_LEVEL, bos_id, scheme

__all__ = ["EOT_LINE", "PIECE_CHARS", "SUFFIXES", "Corpus", "CorpusReader", "CorpusScan",
           "Document", "Skipped", "TokenPiece", "as_corpus", "corpus_files", "corpus_windows",
           "file_type", "iter_token_pieces", "iter_windows", "open_corpus_file", "scan_corpus",
           "skipped_line"]

SAMPLE_NAME = "sample"
COUNTS_SUFFIX = ".npz"  # a counts file (core.corpus.countsfile)
_DATASET_META = ("state.json", "dataset_info.json", "dataset_dict.json")


@dataclass(frozen=True)
class Skipped:
    """A folder entry that is not read as part of the corpus, and why."""

    path: Path
    reason: str


@dataclass(frozen=True)
class CorpusScan:
    """The corpus files behind some paths, the folder entries skipped, and the counts
    files named."""

    files: list[Path]
    skipped: list[Skipped] = field(default_factory=list)
    counts: list[Path] = field(default_factory=list)


def sample_paths(paths) -> list[str]:
    """Corpus paths as files here: SAMPLE_NAME ("sample"), when no such file exists, is
    the sample corpus shipped in the package."""
    return [str(sample_corpus()) if str(p) == SAMPLE_NAME and not Path(p).exists() else str(p)
            for p in paths]


def stored_path(path) -> str:
    """A corpus path as a session stores it: SAMPLE_NAME for the shipped sample corpus
    (its path differs from one installation to the next), else absolute."""
    absolute = Path(path).absolute()
    return SAMPLE_NAME if absolute == sample_corpus().absolute() else str(absolute)


def is_counts_file(path) -> bool:
    return str(path).lower().endswith(COUNTS_SUFFIX)


class _Folder:
    """What a folder's `datasets` files say about its other files."""

    def __init__(self):
        self.known: dict[Path, tuple[set[str] | None, bool]] = {}

    def of(self, folder: Path) -> tuple[set[str] | None, bool]:
        """(the data files state.json lists, or None; whether dataset_info.json is there)"""
        if folder not in self.known:
            listed = None
            try:
                state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
                files = state.get("_data_files") if isinstance(state, dict) else None
                if isinstance(files, list):
                    listed = {f.get("filename") for f in files if isinstance(f, dict)}
            except (OSError, ValueError):
                pass
            self.known[folder] = (listed, (folder / "dataset_info.json").is_file())
        return self.known[folder]


def _folder_entry(f: Path, folders: _Folder) -> Path | Skipped | None:
    """A folder entry as a corpus file, a Skipped entry, or None (a sub-folder, or a
    `datasets` metadata file)."""
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
    kind = kind_of(f)
    if kind is None:
        if f.name in _DATASET_META or f.name.endswith(".lock"):
            return None
        if is_counts_file(f):
            return Skipped(f, "a counts file: open it on its own")
        return Skipped(f, "not a corpus file type")
    if kind == ".arrow":
        listed, info = folders.of(f.parent)
        if listed is not None and f.name not in listed:
            return Skipped(f, "not one of the dataset's data files (state.json)")
        if listed is None and info and f.name.startswith("cache-"):
            return Skipped(f, "a datasets cache file (the result of a map or filter)")
    return f


def _glob(pattern: str) -> list[Path]:
    matches = sorted(glob.glob(pattern, recursive=True))
    if not matches:
        raise InputError(f"{pattern} matches no file.")
    return [Path(m) for m in matches]


def scan_corpus(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> CorpusScan:
    """The corpus files named by `paths`: files, glob patterns ("data/*.parquet",
    "**/*.jsonl.zst", when no file has that very name), or folders searched recursively
    for corpus files (in sorted order); the folder entries skipped (other file types,
    named pipes, devices, sockets, broken links, `datasets` files that are not data);
    and the counts files named (.npz). Hidden entries (a name starting with ".", such as
    .git, and everything under them) are neither read nor listed. Raises InputError for a
    missing path, a pattern that matches nothing, a path named explicitly that is not a
    regular corpus file, or when no corpus file is found. The name SAMPLE_NAME
    ("sample"), when no such file exists, is the sample corpus shipped in the package."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[Path] = []
    skipped: list[Skipped] = []
    counts: list[Path] = []
    folders = _Folder()
    for item in paths:
        p = Path(item)
        if str(item) == SAMPLE_NAME and not os.path.lexists(p):
            files.append(sample_corpus())
            continue
        from_glob = not os.path.lexists(p) and glob.has_magic(str(item))
        for q in (_glob(str(item)) if from_glob else [p]):
            mode = stat_path(q).st_mode
            if stat.S_ISDIR(mode):
                try:
                    entries = sorted(f for f in q.rglob("*") if not _hidden(f.relative_to(q)))
                except OSError as exc:
                    raise InputError(f"{q}: cannot list the folder "
                                     f"({exc.strerror or exc}).") from exc
                for f in entries:
                    got = _folder_entry(f, folders)
                    if isinstance(got, Skipped):
                        skipped.append(got)
                    elif got is not None:
                        files.append(got)
            elif from_glob:
                got = _folder_entry(q, folders)
                if isinstance(got, Skipped) and is_counts_file(q):
                    counts.append(q)
                elif isinstance(got, Skipped):
                    skipped.append(got)
                elif got is not None:
                    files.append(got)
            elif not stat.S_ISREG(mode):
                raise not_regular(q, mode)
            elif is_counts_file(q):
                counts.append(q)
            elif kind_of(q) is None:
                raise InputError(f"{q}: unsupported file type; a corpus file is {KINDS_LINE}, "
                                 "or a counts file (.npz).")
            else:
                files.append(q)
    if not files and not counts:
        raise InputError(f"No corpus files ({KINDS_LINE}) were found"
                         + (f"; {skipped_line(skipped)}." if skipped else "."))
    return CorpusScan(_unique(files), skipped, _unique(counts))


def _unique(files: list[Path]) -> list[Path]:
    seen, unique = set(), []
    for f in files:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") and part not in (".", "..") for part in relative.parts)


def text_files(paths) -> list[Path]:
    """The corpus files of `scan_corpus(paths)`; InputError when a counts file is among
    them (it has no texts to read)."""
    scan = scan_corpus(paths)
    if scan.counts:
        raise InputError(f"{scan.counts[0]} is a counts file (token counts without the "
                         "texts); reading texts needs the corpus files themselves.")
    return scan.files


def corpus_files(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    """The corpus files of `scan_corpus(paths)`."""
    return scan_corpus(paths).files


def skipped_items(skipped: Sequence[Skipped], shown: int = 5) -> list[str]:
    """"a/notes.md (not a corpus file type)" for each of the first `shown` skipped folder
    entries, then "and N more" when there are more."""
    items = [f"{s.path} ({s.reason})" for s in skipped[:shown]]
    if len(skipped) > shown:
        items.append(f"and {len(skipped) - shown} more")
    return items


def skipped_line(skipped: Sequence[Skipped], shown: int = 5) -> str:
    """One line listing the skipped folder entries: "skipped 2 files: a/notes.md (not a
    corpus file type), a/p.txt (a named pipe (FIFO))", the first `shown` of them."""
    items = skipped_items(skipped, shown)
    n = len(skipped)
    return f"skipped {n} file{'s' * (n != 1)} of the corpus folder: " + ", ".join(items)


class CorpusReader:
    """Iterate the documents of some corpus files, tracking bytes read for progress.

    `paths` may be a `Corpus` (its `text_column` names the text of parquet, arrow and jsonl
    files). `bytes_read` / `total_bytes` is the fraction of the files (as stored,
    compressed or not) consumed so far."""

    def __init__(self, paths, piece_chars: int = PIECE_CHARS, text_column: str | None = None):
        corpus = as_corpus(paths, text_column=text_column)
        self.text_column = corpus.text_column
        self.files = text_files(corpus)
        self.piece_chars = int(piece_chars)
        try:
            self.sizes = [f.stat().st_size for f in self.files]
        except OSError as exc:
            raise InputError(f"{exc.filename}: cannot read ({exc.strerror or exc}).") from exc
        self.total_bytes = sum(self.sizes)
        self.bytes_read = 0

    @property
    def fraction(self) -> float:
        return min(1.0, self.bytes_read / self.total_bytes) if self.total_bytes else 1.0

    def __iter__(self) -> Iterator[Document]:
        done = 0
        for f, size in zip(self.files, self.sizes):
            where = Progress()
            n_docs = 0
            for doc in read_documents(f, text_column=self.text_column,
                                      piece_chars=self.piece_chars, where=where):
                n_docs += 1
                self.bytes_read = done + int(where.fraction * size)
                yield doc
            if n_docs == 0:
                raise InputError(f"{f}: the file holds no text.")
            done += size
            self.bytes_read = done


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
        documents = whole_documents(documents)
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
    for doc, ids in zip(batch, encode_batch(tokenizer, [d.text for d in batch])):
        yield TokenPiece(ids, doc.continued)


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
