"""Validation of the indices every analysis takes: positions, heads, token ids. Each
raises InputError with a message meant for people."""

from __future__ import annotations

import operator

import numpy as np

from detokgui.core.errors import InputError


def as_int(value, what: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise InputError(f"The {what} must be a whole number, not {value!r}.") from None


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
    if isinstance(heads, (int, np.integer)):
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
