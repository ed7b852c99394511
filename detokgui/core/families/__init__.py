"""Model families: how each maps its layer 0 onto the canonical tensors of `Layer0`."""

from __future__ import annotations

_LABELS = {"gpt2": "GPT-2", "gpt_neo": "GPT-Neo", "opt": "OPT"}


def family_label(key: str) -> str:
    """"GPT-2", "GPT-Neo", "OPT" for the family keys "gpt2", "gpt_neo", "opt"."""
    return _LABELS.get(key, key)
