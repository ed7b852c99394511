"""Content identities of models, tokenizers and files: the keys of detokgui's on-disk caches.

An identity is a hex SHA-256 of exactly what a cached result depends on, so a cache entry
is reused for the same content whatever the path or name, and never for other content.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Generator
from pathlib import Path
from typing import BinaryIO

import torch

from detokgui.core.base.errors import InputError

_MODEL_KEY = "model_identity"
_READ_BYTES = 1 << 20


def _hash_tensor(h, t: torch.Tensor) -> None:
    t = t.detach().contiguous()
    h.update(f"{tuple(t.shape)}|{t.dtype}|".encode())
    # the bytes as a buffer, not a copy: hashlib reads it without the GIL, where
    # .tobytes() holds it for the whole copy, and the window with it
    h.update(t.reshape(-1).view(torch.uint8).cpu().numpy())


def model_identity(layer) -> str:
    """SHA-256 of everything the token-side analyses of `layer` depend on: the layer-0
    tensors E, P, ln_1 (gamma, beta), c_attn (W, b), the head count, eps and the dtype.
    Computed once per Layer0 (it reads every tensor) and kept on it."""

    def compute() -> str:
        h = hashlib.sha256(b"detokgui-layer0-v1|")
        h.update(f"{layer.n_heads}|{layer.eps!r}|{layer.dtype}|".encode())
        for t in (layer.E, layer.P, layer.ln1_weight, layer.ln1_bias, layer.qkv_weight,
                  layer.qkv_bias):
            _hash_tensor(h, t)
        return h.hexdigest()

    return layer.cached(_MODEL_KEY, compute)


def tokenizer_identity(tokenizer) -> str:
    """SHA-256 of a tokenizer's full definition: a fast tokenizer's serialised form
    (vocabulary, merges, normaliser, pre-tokenizer, added tokens); else its vocabulary and
    BPE merges."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        text = backend.to_str()
    else:
        vocab = sorted(tokenizer.get_vocab().items())
        ranks = getattr(tokenizer, "bpe_ranks", {}) or {}
        merges = sorted((" ".join(pair), rank) for pair, rank in ranks.items())
        text = json.dumps([type(tokenizer).__name__, vocab, merges])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _open_bytes(path: Path) -> BinaryIO:
    return open(path, "rb")  # the caller closes it


def iter_file_digest(path: Path, opener: Callable[[Path], BinaryIO] = _open_bytes
                     ) -> Generator[int, None, tuple[str, int]]:
    """Generator: yields the bytes read so far while hashing `path` (opened by `opener`);
    returns (SHA-256 hex digest, size in bytes). Raises InputError when the file cannot be
    read."""
    h = hashlib.sha256()
    done = 0
    try:
        with opener(path) as f:
            while chunk := f.read(_READ_BYTES):
                h.update(chunk)
                done += len(chunk)
                yield done
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc}).") from exc
    return h.hexdigest(), done
