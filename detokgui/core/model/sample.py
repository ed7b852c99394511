"""Seeded samples of token ids: the same seed gives the same sample, so a figure, a view and
a test that draw "N random tokens" draw the same ones."""

from __future__ import annotations

import torch

from detokgui.core.base.checks import as_int, check_count


def random_token_sample(layer, n: int, seed: int = 0) -> list[int]:
    """A seeded sample of n distinct token ids (same seed, same sample)."""
    n = min(check_count(n, "sample size"), layer.n_vocab)
    g = torch.Generator().manual_seed(as_int(seed, "seed"))
    return torch.randperm(layer.n_vocab, generator=g)[:n].sort().values.tolist()
