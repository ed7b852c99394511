"""Tokenising long texts in pieces, so that a pasted book reports progress and can be
stopped."""

from __future__ import annotations

import re
from collections.abc import Generator

from detokgui.core.base.progress import Progress
from detokgui.core.model.tokens import BYTE_LEVEL, encode_text, scheme

PIECE_CHARS = 1 << 16

# A newline between two non-whitespace characters. GPT-2's byte-level pre-tokenizer
# (' ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+' and the contractions) never puts
# such a newline in one pre-token with its neighbours, and BPE merges only within a
# pre-token, so the text can be cut right after it without changing any token.
_CUT = re.compile(r"(?<=\S)\n(?=\S)")


def iter_encode(tokenizer, text: str, piece_chars: int = PIECE_CHARS
                ) -> Generator[Progress, None, list[int]]:
    """The ids `tokens.encode_text(tokenizer, text)` gives (the text's own tokens, without
    a BOS or EOS the tokenizer would add, such as OPT's </s>), computed
    piece by piece (pieces of about `piece_chars` characters, cut after a newline between
    two non-whitespace characters; a text without such a newline is one piece). Only a
    byte-level BPE tokenizer is cut: any other (sentencepiece starts every text it encodes
    with a word-start '▁') encodes the text in one piece. Yields Progress after each piece."""

    n = len(text)
    ids: list[int] = []
    start = 0
    cuts = scheme(tokenizer) == BYTE_LEVEL
    while start < n:
        end = n
        if cuts and n - start > piece_chars:
            cut = _CUT.search(text, start + piece_chars)
            if cut is not None:
                end = cut.end()
        ids.extend(encode_text(tokenizer, text[start:end]))
        start = end
        yield Progress(start / n, f"Tokenising the text: {start:,} of {n:,} characters")
    return ids
