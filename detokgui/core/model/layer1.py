"""`Layer1`: block 1 of a model, read on demand from where its layer 0 came from, with
its attention's LayerNorm folded in as `Layer0` folds layer 0 (docs/math/composition.md).

Loading layer 0 never reads block 1: `layer1(layer)` reads it the first time it is asked
for (a checkpoint folder or the Hugging Face cache: a file read; a hub model whose layer 0
alone is cached: only block 1's byte ranges are downloaded, `sources.hub.fetch_block`) and
keeps it on the layer (`Layer0.cached`). `layer1_job` does the same as a generator job
(progress while it downloads; closing it cancels the download within a second).

A model with a single layer has no block 1: InputError saying so.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from detokgui.core.base.errors import Cancelled, InputError, ModelLoadError
from detokgui.core.base.progress import Job, Progress
from detokgui.core.model.families import ModelShape, read_config
from detokgui.core.model.sources import checkpoint
from detokgui.core.model.weights import fold_attention

CACHE_KEY = "layer1"


@dataclass(eq=False)
class Layer1:
    """Block 1 of the model of a `Layer0`, on the layer's device and dtype.

    As stored (canonical, GPT-2's Conv1D layout; `families.block_keys(1)`):
        ln1_weight, ln1_bias [d]                 block 1's ln_1 (the attention's LayerNorm)
        qkv_weight [d, 3d], qkv_bias [3d]        W^Q | W^K | W^V of block 1
        attn_out_weight [d, d], attn_out_bias [d]
    Folded with block 1's ln_1 (`weights.fold_attention`), per head h of H:
        Wq, Wk, Wv [H, d, d'], bq, bk, bv [H, d'], bQK [H, d], Wo [H, d', d], bVO [d]
    Also: the layer's attention ("global", or "local" with a `window`, GPT-Neo), the
    number of layers of the model, and where the stored tensors are (`weights`, for the
    model's own forward pass of the first two blocks, `core.layer1.behaviour`)."""

    name: str
    family: str
    n_heads: int
    shape: ModelShape
    ln1_weight: torch.Tensor
    ln1_bias: torch.Tensor
    qkv_weight: torch.Tensor
    qkv_bias: torch.Tensor
    attn_out_weight: torch.Tensor
    attn_out_bias: torch.Tensor
    attention: str = "global"
    window: int | None = None
    n_layer: int | None = None
    weights: tuple[Path, ...] = ()
    weight_format: str = "safetensors"
    config: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        (self.Wq, self.Wk, self.Wv, self.bq, self.bk, self.bv, self.bQK, self.Wo,
         self.bVO) = fold_attention(self.ln1_weight, self.ln1_bias, self.qkv_weight,
                                    self.qkv_bias, self.attn_out_weight, self.attn_out_bias,
                                    self.n_heads)

    def __repr__(self) -> str:
        return (f"Layer1({self.name!r}, family={self.family!r}, H={self.n_heads}, "
                f"d={self.d}, attention={self.attention_label!r})")

    @property
    def d(self) -> int:
        return self.qkv_weight.shape[0]

    @property
    def d_head(self) -> int:
        return self.d // self.n_heads

    @property
    def attention_label(self) -> str:
        """"global attention", or "local attention (window 256)"."""
        if self.attention == "local":
            return f"local attention (window {self.window})"
        return "global attention"


def layer1(layer, progress: Callable[[float, str], None] | None = None) -> Layer1:
    """Block 1 of `layer`'s model (read the first time, then kept on the layer).
    `progress(fraction, message)` while block 1 downloads; an exception it raises
    (Cancelled) stops the download. InputError for a model with a single layer or a layer
    that does not know where it came from; ModelLoadError when block 1 cannot be read."""
    return layer.cached(CACHE_KEY, lambda: read_layer1(layer, progress))


def layer1_job(layer) -> Job[Layer1]:
    """Generator job: `layer1(layer)`, yielding the download's progress; closing the
    generator (Cancel) stops the download within a second and keeps nothing."""
    return layer.cached_job(CACHE_KEY,
                            lambda: callback_job(lambda report: read_layer1(layer, report)))


def has_layer1(layer) -> bool:
    """Whether block 1 is read already (nothing to load or download)."""
    return layer.is_cached(CACHE_KEY)


def read_layer1(layer, progress: Callable[[float, str], None] | None = None) -> Layer1:
    """Read block 1 of `layer`'s model from `layer.source` (at `layer.revision` for a hub
    model), without keeping it (`layer1` keeps it)."""
    report = progress or (lambda f, m: None)
    if layer.source is None:
        raise InputError(f"{layer.name} was built from tensors or from a loaded model, so "
                         "detokgui does not know where its block 1 is; load it by name or "
                         "folder (dg.load) to see layer 1.")
    shape, config = _config(layer)
    n = shape.n_layer
    if n is not None and n < 2:
        raise InputError(f"{layer.name} has a single layer: there is no layer 1 to compose "
                         "with layer 0.")
    report(0.0, f"Reading block 1 of {layer.name}")
    weights, fmt = checkpoint.block_weights(layer.source, shape, 1, revision=layer.revision,
                                            progress=report, label=layer.name)
    tensors, _stored = checkpoint.read_block_tensors(weights, fmt, shape, 1, layer.name)
    dev, dtype = layer.device, layer.dtype
    t = {k.removeprefix("h.1."): v.to(device=dev, dtype=dtype) for k, v in tensors.items()}
    for key, x in t.items():
        if not bool(torch.isfinite(x).all()):
            raise ModelLoadError(f"{layer.name}: block 1's {key} holds NaN or infinite "
                                 "values; the checkpoint is corrupt.")
    report(1.0, f"Read block 1 of {layer.name}")
    kind = shape.attention_kind(1)
    return Layer1(
        name=layer.name, family=shape.family, n_heads=shape.n_head, shape=shape,
        ln1_weight=t["ln_1.weight"], ln1_bias=t["ln_1.bias"],
        qkv_weight=t["attn.c_attn.weight"], qkv_bias=t["attn.c_attn.bias"],
        attn_out_weight=t["attn.c_proj.weight"], attn_out_bias=t["attn.c_proj.bias"],
        attention=kind, window=shape.window_size if kind == "local" else None,
        n_layer=n, weights=tuple(weights), weight_format=fmt, config=config)


def n_layers(layer) -> int | None:
    """How many layers `layer`'s model has, from its config.json (no weights read; the
    network only for a hub model whose config is in no cache); None when unknown."""
    if layer.source is None:
        return None
    try:
        return _config(layer)[0].n_layer
    except (ModelLoadError, OSError):
        return None


def _config(layer) -> tuple[ModelShape, dict]:
    """(ModelShape, config.json's contents) of `layer`'s checkpoint."""
    import json

    path = _config_path(layer)
    shape = read_config(path, layer.name)
    try:
        config = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"{layer.name}: config.json cannot be read ({exc}).") from exc
    return shape, config


def _config_path(layer) -> Path:
    """config.json of the layer's checkpoint, at the commit it was loaded at: found in a
    cache, else located (the network only for a hub model in no cache)."""
    source = str(layer.source)
    if layer.revision and not Path(source).expanduser().is_dir():
        source = f"{source.rsplit('@', 1)[0]}@{layer.revision}"
    found = checkpoint.config_file(source)
    return found if found is not None else checkpoint.locate(source).config


def callback_job(fn: Callable[[Callable[[float, str], None]], Any]) -> Job:
    """Generator job of a callback-style function `fn(report)`: `fn` runs on a helper
    thread, each `report(fraction, message)` is yielded as Progress, and closing the
    generator makes the next report raise Cancelled (the function stops there). Its
    exception, if any, is raised here."""
    messages: queue.Queue = queue.Queue()
    stop = threading.Event()
    out: dict[str, Any] = {}

    def report(fraction: float, message: str = "") -> None:
        if stop.is_set():
            raise Cancelled("cancelled")
        messages.put(Progress(float(fraction), message))

    def target() -> None:
        try:
            out["value"] = fn(report)
        except BaseException as exc:  # noqa: BLE001 - handed to the generator's thread
            out["error"] = exc
        finally:
            messages.put(None)

    threading.Thread(target=target, daemon=True, name="detokgui-layer1").start()
    try:
        while (item := messages.get()) is not None:
            yield item
    finally:
        stop.set()
    if "error" in out:
        raise out["error"]
    return out["value"]
