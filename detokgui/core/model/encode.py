"""Tokenising one long text in pieces with the model's fast tokenizer
(`fast_tokenizer.encode_batch`, several pieces per call), so that a pasted book reports
progress and can be stopped (`iter_encode`)."""

from __future__ import annotations

import re
from collections.abc import Generator

from detokgui.core.base.progress import Progress
from detokgui.core.model.fast_tokenizer import encode_backend, encode_batch, fast_backend
from detokgui.core.model.tokens import BYTE_LEVEL, scheme

__all__ = ["encode_backend", "encode_batch", "fast_backend", "iter_encode"]

PIECE_CHARS = 1 << 16
BATCH_CHARS = 1 << 20  # characters tokenized per call in `iter_encode`: its progress steps

# A newline between two non-whitespace characters. GPT-2's byte-level pre-tokenizer
# (' ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+' and the contractions) never puts
# such a newline in one pre-token with its neighbours, and BPE merges only within a
# pre-token, so the text can be cut right after it without changing any token.
_CUT = re.compile(r"(?<=\S)\n(?=\S)")


def iter_encode(tokenizer, text: str, piece_chars: int = PIECE_CHARS,
                batch_chars: int = BATCH_CHARS) -> Generator[Progress, None, list[int]]:
    """The ids `tokens.encode_text(tokenizer, text)` gives (the text's own tokens, without
    a BOS or EOS the tokenizer would add, such as OPT's </s>), computed piece by piece
    (pieces of about `piece_chars` characters, cut after a newline between two
    non-whitespace characters; a text without such a newline is one piece), about
    `batch_chars` characters of pieces per call of the fast tokenizer. Only a byte-level
    BPE tokenizer is cut: any other (sentencepiece starts every text it encodes with a
    word-start '▁') encodes the text in one piece. Yields Progress after each call."""

    n = len(text)
    ids: list[int] = []
    cuts = scheme(tokenizer) == BYTE_LEVEL
    start = 0
    while start < n:
        batch: list[str] = []
        size = 0
        while start < n and (not batch or size < batch_chars):
            end = n
            if cuts and n - start > piece_chars:
                cut = _CUT.search(text, start + piece_chars)
                if cut is not None:
                    end = cut.end()
            batch.append(text[start:end])
            size += end - start
            start = end
        for piece in encode_batch(tokenizer, batch):
            ids.extend(piece)
        yield Progress(start / n, f"Tokenising the text: {start:,} of {n:,} characters")
    return ids
