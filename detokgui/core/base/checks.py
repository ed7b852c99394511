"""Validation of the indices every analysis takes: positions, heads, token ids, and of
named choices (conventions, directions). Each raises InputError with a message meant for
people."""

from __future__ import annotations

import operator

import numpy as np

from detokgui.core.base.errors import InputError


def as_int(value, what: str) -> int:
    """`value` as an int: ints, numpy integers and whole floats (3.0) pass; anything else
    (None, 1.5, "3", True) is an InputError."""
    if isinstance(value, (bool, np.bool_)):
        raise InputError(f"The {what} must be a whole number, not {value!r}.")
    try:
        return operator.index(value)
    except TypeError:
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            return int(value)
        raise InputError(f"The {what} must be a whole number, not {value!r}.") from None


def check_choice(name: str, value, choices):
    """`value` when it is one of `choices` (the names a setting takes), else an InputError
    "The <name> must be one of a, b, c, not 'x'."."""
    if isinstance(value, str) and value in choices:
        return value
    raise InputError(f"The {name} must be one of {', '.join(choices)}, not {value!r}.")


def check_count(value, what: str, lo: int = 1, hi: int | None = None) -> int:
    """A whole number in lo..hi (hi None: no upper bound)."""
    n = as_int(value, what)
    if n < lo or (hi is not None and n > hi):
        bound = f"at least {lo}" if hi is None else f"in {lo}..{hi}"
        raise InputError(f"The {what} must be {bound}, not {n}.")
    return n


def check_text(text, what: str = "text") -> str:
    """A str that is valid Unicode: bytes that were not UTF-8 (command-line arguments
    decoded by the OS with surrogate escapes) are refused."""
    if not isinstance(text, str):
        raise InputError(f"The {what} must be a string, not {type(text).__name__}.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"The {what} is not valid UTF-8 (at character {exc.start + 1}); "
            "give the text in UTF-8."
        ) from None
    return text


def check_position(layer, i, what: str = "query position") -> int:
    """Validate a position (0-based) against the model's n_positions; returns it as int."""
    i = as_int(i, what)
    L = layer.n_positions
    if not 0 <= i < L:
        raise InputError(
            f"The {what} {i} is outside 0..{L - 1} (the model has {L} positions)."
        )
    return i


def check_heads(layer, heads) -> list[int]:
    """None -> all heads; else validate each head index (0-based)."""
    if heads is None:
        return list(range(layer.n_heads))
    if isinstance(heads, (str, bytes)):
        raise InputError(f"Heads must be head numbers, not {heads!r}.")
    if isinstance(heads, (int, float, np.number)) or np.ndim(heads) == 0:
        heads = [heads]
    hs = [as_int(h, "head") for h in heads]
    if not hs:
        raise InputError("No heads were selected.")
    for h in hs:
        if not 0 <= h < layer.n_heads:
            raise InputError(f"Head {h} is outside 0..{layer.n_heads - 1}.")
    return hs


def check_token(layer, token) -> int:
    t = as_int(token, "token id")
    if not 0 <= t < layer.n_vocab:
        raise InputError(f"Token id {t} is outside the vocabulary (0..{layer.n_vocab - 1}).")
    return t


def token_tensor(layer, token_ids, what: str = "tokens"):
    """A sequence of token ids as a 1-D LongTensor on the layer's device: whole numbers,
    anything else is an InputError (range and length are the caller's checks)."""
    import torch

    if isinstance(token_ids, torch.Tensor):
        t = token_ids.detach()
        if t.is_floating_point() and not bool((t == t.round()).all()):
            raise InputError(f"The {what} must be whole numbers (token ids).")
        if t.is_complex() or t.dtype == torch.bool:
            raise InputError(f"The {what} must be token ids, not {t.dtype} values.")
        return t.to(device=layer.device, dtype=torch.long).reshape(-1)
    try:
        arr = np.asarray(token_ids)
    except (TypeError, ValueError) as exc:
        raise InputError(f"The {what} must be a sequence of token ids ({exc}).") from None
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.integer)
                                     or np.issubdtype(arr.dtype, np.floating)):
        shown = repr(token_ids)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise InputError(f"The {what} must be whole numbers (token ids), not {shown}.")
    if np.issubdtype(arr.dtype, np.floating) and not np.all(np.mod(arr, 1) == 0):
        raise InputError(f"The {what} must be whole numbers (token ids).")
    return torch.as_tensor(arr.astype(np.int64), device=layer.device).reshape(-1)


def query_tensor(layer, token_ids, what: str = "query tokens"):
    """`token_tensor` of at least one token id, each inside the vocabulary (0..V-1)."""
    ids = token_tensor(layer, token_ids, what)
    if ids.numel() == 0:
        raise InputError(f"No {what} were given.")
    for t in (int(ids.min()), int(ids.max())):
        check_token(layer, t)
    return ids
