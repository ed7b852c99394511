"""The provenance record of an export: everything needed to say what produced a file and
to produce it again (`core.base.provenance` puts it into PNG, SVG, PDF and CSV sidecars
and reads it back).

    {"format": "detokgui-provenance", "version": 1,
     "detokgui": "<version>", "created": "2026-11-28T11:30:00+00:00",
     "model": {"name": "gpt2", "family": "gpt2", "revision": "<commit or null>",
               "source": "<folder or hub name>", "dtype": "float32",
               "vocab": 50257, "positions": 1024, "d": 768, "heads": 12,
               "layer0_sha256": "<hex>"},
     "analysis": "topk", "conventions": {...}, "options": {...},
     "corpus": {...} or null, "session": "<path>" or null}

`model_b` is added for a comparison. Only plain values (str, int, float, bool, None, lists
and dicts of them): the record is JSON as it is, and small enough for `DataFrame.attrs`.
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Mapping

from detokgui import __version__
from detokgui.core.base.provenance import FORMAT, VERSION

_DIGEST_KEY = "provenance.layer0_sha256"

#: The layer-0 tensors of a `Layer0` as read from the checkpoint (canonical names), in the
#: order they are hashed.
LAYER0_TENSORS = (
    "E", "P", "ln1_weight", "ln1_bias", "qkv_weight", "qkv_bias", "attn_out_weight",
    "attn_out_bias", "ln2_weight", "ln2_bias", "mlp_in_weight", "mlp_in_bias",
    "mlp_out_weight", "mlp_out_bias",
)


def layer0_digest(layer) -> str:
    """SHA-256 of the layer's layer-0 tensors as loaded (embeddings, ln_1, attention, ln_2,
    MLP: `LAYER0_TENSORS`, each with its shape and dtype) and its head count and eps: the
    same weights give the same digest whatever folder or name they were opened from.
    Computed once per layer (it reads every tensor once) and kept on it; run it on a worker
    the first time for a large model (`Layer0.cached`)."""

    def compute() -> str:
        import torch  # here: the record's other parts need no torch

        h = hashlib.sha256(b"detokgui-layer0-tensors-v1|")
        h.update(f"{layer.n_heads}|{layer.eps!r}|".encode())
        for name in LAYER0_TENSORS:
            t = getattr(layer, name).detach().contiguous()
            h.update(f"{name}|{tuple(t.shape)}|{t.dtype}|".encode())
            # the bytes as a buffer: hashlib reads it without holding the GIL
            h.update(t.reshape(-1).view(torch.uint8).cpu().numpy())
        return h.hexdigest()

    return layer.cached(_DIGEST_KEY, compute)


def has_digest(layer) -> bool:
    """Whether `layer0_digest(layer)` is already computed (then it costs nothing)."""
    return layer.is_cached(_DIGEST_KEY)


def model_facts(layer, digest: bool = True) -> dict:
    """The model part of a record: name, family, the hub commit it resolved to, where it
    was read from, dtype, sizes and (`digest`) the SHA-256 of its layer-0 tensors."""
    facts = {
        "name": str(layer.name),
        "family": str(layer.family),
        "revision": getattr(layer, "revision", None),
        "source": getattr(layer, "source", None),
        "dtype": str(layer.dtype).removeprefix("torch."),
        "vocab": int(layer.n_vocab),
        "positions": int(layer.n_positions),
        "d": int(layer.d),
        "heads": int(layer.n_heads),
    }
    if digest:
        facts["layer0_sha256"] = layer0_digest(layer)
    return facts


def plain(value):
    """`value` with only JSON's types: numpy and torch scalars as numbers, tuples and sets
    as lists, paths and other objects as their str."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [plain(v) for v in items]
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", 1) == 0:
        return plain(item())
    return str(value)


def now() -> str:
    """The current time in UTC, ISO 8601 to the second."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def provenance_record(layer=None, *, analysis: str | None = None,
                      conventions: Mapping | None = None, options: Mapping | None = None,
                      corpus=None, layer_b=None, session: str | None = None,
                      **extra) -> dict:
    """The provenance record (module docstring) of a result of `layer` (None: no model,
    e.g. a training series' figure, which names its checkpoints in `options`) made by
    `analysis` with `conventions` (what the result's labels state: sigma, tau, BOS, query
    position...) and `options` (what was asked for: heads, tokens, k...); `corpus`: its
    identity (`core.corpus.provenance.corpus_identity`) or None; `layer_b`: model B of a
    comparison; `session`: the session file the export was made in; `extra`: more
    top-level entries (e.g. "view"). JSON-serialisable as it is."""
    record = {
        "format": FORMAT,
        "version": VERSION,
        "detokgui": __version__,
        "created": now(),
        "model": model_facts(layer) if layer is not None else None,
    }
    if layer_b is not None:
        record["model_b"] = model_facts(layer_b)
    record.update({
        "analysis": analysis,
        "conventions": plain(dict(conventions or {})),
        "options": plain(dict(options or {})),
        "corpus": plain(corpus) if corpus else None,
        "session": str(session) if session else None,
    })
    record.update({k: plain(v) for k, v in extra.items()})
    return record
