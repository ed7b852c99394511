"""What every family adapter produces: the model's sizes (`ModelShape`) and its layer-0
tensors under the canonical names `Layer0.from_tensors` reads (`LAYER0_KEYS`).

The canonical tensors are GPT-2's, in its Conv1D layout (x @ W + b):
    wte.weight [V, d] = E, wpe.weight [L, d] = P (P[j]: the embedding of position j)
    h.0.ln_1.weight/bias [d]                          gamma, beta of the attention's LayerNorm
    h.0.attn.c_attn.weight [d, 3d], .bias [3d]        W^Q | W^K | W^V and b^Q | b^K | b^V
    h.0.attn.c_proj.weight [d, d], .bias [d]          W^O, b^O
    h.0.ln_2.weight/bias [d]                          the MLP's LayerNorm
    h.0.mlp.c_fc.weight [d, d_mlp], .bias [d_mlp]     the MLP's input
    h.0.mlp.c_proj.weight [d_mlp, d], .bias [d]       the MLP's output
    ln_f.weight/bias [d]                              the final LayerNorm (optional)
A bias the model does not have is zero; a LayerNorm without learned parameters has
gamma = 1, beta = 0. Any later block i maps onto the same names with "h.{i}." (`block_keys`,
`Family.block_canonical`): block 1 is read only when asked for (`core.model.layer1`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from detokgui.core.base.errors import ModelLoadError

#: The tensors of one transformer block, after "h.{i}." (block i; GPT-2's names).
BLOCK_SUFFIXES = (
    "ln_1.weight",
    "ln_1.bias",
    "attn.c_attn.weight",
    "attn.c_attn.bias",
    "attn.c_proj.weight",
    "attn.c_proj.bias",
    "ln_2.weight",
    "ln_2.bias",
    "mlp.c_fc.weight",
    "mlp.c_fc.bias",
    "mlp.c_proj.weight",
    "mlp.c_proj.bias",
)


def block_keys(block: int) -> tuple[str, ...]:
    """The canonical names of block `block`'s tensors: "h.{block}.ln_1.weight", ..."""
    return tuple(f"h.{block}.{s}" for s in BLOCK_SUFFIXES)


LAYER0_KEYS = ("wte.weight", "wpe.weight", *block_keys(0))

#: Read when present (the final LayerNorm, for views that go through the unembedding).
OPTIONAL_KEYS = ("ln_f.weight", "ln_f.bias")


@dataclass(frozen=True)
class ModelShape:
    """What layer 0 needs from config.json, in every family's terms.

    n_positions is the number of positions a text may have (OPT stores two more rows);
    scale_attn_weights: scores are divided by sqrt(d') (False: by 1, as GPT-Neo);
    linear_bias: the linear layers store biases (False: OPT with enable_bias false);
    norm_affine: the LayerNorms store gamma and beta (False: gamma = 1, beta = 0)."""

    vocab_size: int
    n_positions: int
    n_embd: int
    n_head: int
    n_inner: int
    layer_norm_epsilon: float
    scale_attn_weights: bool
    activation_function: str
    family: str = "gpt2"
    linear_bias: bool = True
    norm_affine: bool = True
    #: Transformer blocks the model has (config.json's n_layer, num_layers or
    #: num_hidden_layers); None when the config does not say.
    n_layer: int | None = None
    #: "global" or "local" per layer (GPT-Neo's attention_layers); () when all are global.
    attention_layers: tuple[str, ...] = ()
    #: The window of a local layer: a query at i sees the keys i - window < j <= i.
    window_size: int | None = None

    def attention_kind(self, layer: int) -> str:
        """"global" or "local": the attention of layer `layer` (0-based)."""
        kinds = self.attention_layers
        return kinds[layer] if layer < len(kinds) else "global"


class Family:
    """One model family's layer 0: config.json -> ModelShape, stored tensor names, and
    the stored tensors -> the canonical ones. Subclasses set the class attributes."""

    key: str = ""  # "gpt2", as config.json's model_type
    label: str = ""  # "GPT-2", as people write it
    model_types: tuple[str, ...] = ()
    #: Prefixes the stored names may carry (the base model's, the LM head model's).
    prefixes: tuple[str, ...] = ("",)
    #: The stored name of the token embedding, to find which prefix a checkpoint uses.
    anchor: str = ""

    def shape(self, cfg: Mapping, name: str) -> ModelShape:
        raise NotImplementedError

    def stored_names(self, shape: ModelShape) -> dict[str, bool]:
        """{stored name without prefix: whether layer 0 cannot do without it}."""
        raise NotImplementedError

    def canonical(self, stored: Mapping, shape: ModelShape, name: str) -> dict:
        """The canonical tensors (module docstring) from the stored ones (unprefixed)."""
        raise NotImplementedError

    def block_stored_names(self, shape: ModelShape, block: int) -> dict[str, bool]:
        """{stored name without prefix: whether block `block` cannot do without it}: the
        tensors of one transformer block (its LayerNorms, attention and MLP)."""
        raise NotImplementedError

    def block_canonical(self, stored: Mapping, shape: ModelShape, block: int,
                        name: str) -> dict:
        """Block `block`'s canonical tensors (`block_keys(block)`, GPT-2's layout) from the
        stored ones (unprefixed)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ shared

    def prefix(self, available, name: str) -> str:
        """The first of `prefixes` under which `available` (the checkpoint's names) holds
        the token embedding."""
        available = set(available)
        for prefix in self.prefixes:
            if prefix + self.anchor in available:
                return prefix
        raise ModelLoadError(
            f"{name}: the weights hold no token embedding ({self.anchor}); the checkpoint is "
            f"not a {self.label} model."
        )

    def resolve(self, available, shape: ModelShape, name: str) -> dict[str, str]:
        """{unprefixed stored name: the name the checkpoint stores it under}, for the
        first prefix under which `available` (the checkpoint's names) holds the token
        embedding."""
        prefix = self.prefix(available, name)
        return {k: prefix + k for k in self.stored_names(shape)}

    def resolve_block(self, available, shape: ModelShape, block: int,
                      name: str) -> dict[str, str]:
        """`resolve` for the tensors of block `block`."""
        prefix = self.prefix(available, name)
        return {k: prefix + k for k in self.block_stored_names(shape, block)}

    def require(self, stored: Mapping, shape: ModelShape, name: str,
                block: int | None = None) -> None:
        """ModelLoadError naming the layer-0 tensors (or block `block`'s) `stored` lacks."""
        names = (self.stored_names(shape) if block is None
                 else self.block_stored_names(shape, block))
        missing = [k for k, needed in names.items() if needed and k not in stored]
        if missing:
            what = "layer-0" if block is None else f"block-{block}"
            raise ModelLoadError(
                f"{name}: the checkpoint lacks {self.label} {what} tensors: "
                f"{', '.join(missing)}."
            )


# --------------------------------------------------------------------------- config.json

_JSON_KINDS = ((bool, "true or false"), (int, "a whole number"), (float, "a decimal number"),
               (str, "a string"), (list, "a list"), (dict, "an object"), (type(None), "null"))
_MISSING = object()


def config_value(cfg: Mapping, field: str, kind: type, name: str, default=_MISSING):
    """config.json's `field` when its JSON type is `kind` (int: a whole number, not 768.0,
    "768" or true; float: any number; null only where there is a default), else
    ModelLoadError naming the field; `default` when the field is absent (KeyError when
    there is none)."""
    if field not in cfg or (cfg[field] is None and default is not _MISSING):
        if default is _MISSING:
            raise KeyError(field)
        return default
    value = cfg[field]
    ok = (isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
          or kind is float and isinstance(value, int) and not isinstance(value, bool))
    if not ok:
        got = next(k for t, k in _JSON_KINDS if isinstance(value, t))
        want = "a number" if kind is float else dict(_JSON_KINDS)[kind]
        raise ModelLoadError(f"{name}: config.json has {field}={json.dumps(value)}; it must "
                             f"be {want}, not {got}.")
    return float(value) if kind is float else value


def checked_shape(shape: ModelShape, name: str) -> ModelShape:
    """`shape` when its sizes make sense, else ModelLoadError naming the bad field."""
    import math

    for field in ("vocab_size", "n_positions", "n_embd", "n_head", "n_inner"):
        if getattr(shape, field) < 1:
            raise ModelLoadError(
                f"{name}: config.json has {field}={getattr(shape, field)}; it must be at least 1."
            )
    if not (math.isfinite(shape.layer_norm_epsilon) and shape.layer_norm_epsilon > 0):
        raise ModelLoadError(
            f"{name}: config.json has layer_norm_epsilon={shape.layer_norm_epsilon}; "
            "it must be a positive number."
        )
    if shape.n_embd % shape.n_head:
        raise ModelLoadError(
            f"{name}: n_embd={shape.n_embd} is not divisible by n_head={shape.n_head}."
        )
    return shape
