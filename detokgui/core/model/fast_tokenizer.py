"""Tokenising many texts in one call of the model's fast tokenizer.

A transformers fast tokenizer wraps a Rust `tokenizers.Tokenizer` (its
`backend_tokenizer`); that backend's `encode_batch_fast` tokenizes a list of texts in one
call without computing character offsets, and gives the ids `tokenizer.encode(text,
add_special_tokens=False)` gives, without transformers' per-call Python work. A tokenizer
without one (a sentencepiece model read by the sentencepiece library) is called as
transformers calls it.

Imports neither torch nor transformers: the corpus count's worker processes use it.
"""

from __future__ import annotations

from collections.abc import Sequence


def fast_backend(tokenizer):
    """The Rust `tokenizers.Tokenizer` behind a transformers fast tokenizer, or None."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    return backend if backend is not None and hasattr(backend, "encode_batch") else None


def encode_backend(backend, texts: Sequence[str]) -> list[list[int]]:
    """The ids of each text by a `tokenizers.Tokenizer`, no special tokens added."""
    encode = getattr(backend, "encode_batch_fast", backend.encode_batch)
    return [e.ids for e in encode(list(texts), add_special_tokens=False)]


def encode_batch(tokenizer, texts: Sequence[str]) -> list[list[int]]:
    """The ids of each text (`tokens.encode_text` of each: its own tokens, without a BOS
    or EOS the tokenizer would add), in one call of the fast backend when there is one."""
    backend = fast_backend(tokenizer)
    if backend is not None:
        return encode_backend(backend, texts)
    return [list(ids) for ids in tokenizer(list(texts), add_special_tokens=False)["input_ids"]]
