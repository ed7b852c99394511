"""Searching the vocabulary's display strings by substring, prefix or regular expression
(`search_vocabulary`), and reading a text file of any size as text (`read_text_file`):
the Qt-free halves of the Tokens panel (A1)."""

from __future__ import annotations

import codecs
import io
import time

import regex

from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import Progress
from detokgui.core.model.tokens import SPACE_MARK

MODES = ("substring", "prefix", "regex")
REGEX_SECONDS = 2.0  # time limit of one regular-expression search over the vocabulary
PROGRESS_EVERY = 5000


def read_text_file(path: str, block: int = 1 << 20) -> str:
    """The file's text (UTF-8, undecodable bytes replaced; a clear message if unreadable).

    Decoded a megabyte at a time: decoding holds the GIL, and one call over 10 MB would
    keep the GUI thread waiting for it for tens of milliseconds."""
    decoder = io.IncrementalNewlineDecoder(  # newlines as text mode reads them
        codecs.getincrementaldecoder("utf-8")(errors="replace"), translate=True)
    parts = []
    try:
        with open(path, "rb") as f:
            while chunk := f.read(block):
                parts.append(decoder.decode(chunk))
        parts.append(decoder.decode(b"", final=True))
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    return "".join(parts)


def _matcher(query: str, mode: str, seconds: float):
    """match(display string) -> bool for one search (see search_vocabulary)."""
    q = query.replace(" ", SPACE_MARK)
    if mode == "substring":
        return lambda s: q in s
    if mode == "prefix":
        bare = q.lstrip(SPACE_MARK)
        return lambda s: s.startswith(q) or (q == bare and s.startswith(SPACE_MARK + bare))
    if mode != "regex":
        raise ValueError(f"unknown search mode {mode!r}")
    try:
        pattern = regex.compile(query.replace(SPACE_MARK, " ").replace(" ", SPACE_MARK))
    except regex.error as exc:
        raise InputError(f"invalid regular expression: {exc}") from None
    deadline = time.perf_counter() + seconds

    def match(s):
        left = deadline - time.perf_counter()
        if left <= 0:
            raise TimeoutError
        return pattern.search(s, concurrent=True, timeout=left) is not None
    return match


def search_vocabulary(strings, query: str, mode: str, seconds: float = REGEX_SECONDS):
    """Generator job: ids whose display form matches, shortest first. A typed space and
    the visible marker are the same thing; prefix mode ignores a leading space. A regular
    expression (the `regex` module, which releases the GIL) that has not finished within
    `seconds` over the whole vocabulary raises InputError, as does an invalid one."""
    match = _matcher(query, mode, seconds)
    hits = []
    try:
        for start in range(0, len(strings), PROGRESS_EVERY):
            part = strings[start:start + PROGRESS_EVERY]
            hits.extend(start + i for i, s in enumerate(part) if match(s))
            yield Progress((start + len(part)) / max(1, len(strings)), "Searching the vocabulary")
    except TimeoutError:
        raise InputError(f"The regular expression did not finish within {seconds:g} s over "
                         "the vocabulary (nested repetition such as (a+)+ can take forever); "
                         "simplify it.") from None
    hits.sort(key=lambda i: (len(strings[i]), i))
    return hits
