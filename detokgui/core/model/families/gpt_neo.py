"""GPT-Neo (EleutherAI/gpt-neo-125m, 1.3B, 2.7B).

Differences from GPT-2: separate q/k/v Linear layers without bias ([out, in] weights),
out_proj with a bias; scores are NOT divided by sqrt(d') (temperature 1); layers
alternate global and local attention (a local layer sees only the last `window_size`
keys). Layer 0 of every released GPT-Neo is global. A local layer 0 whose window covers
every position is global too; any other local layer 0 is refused."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import torch

from detokgui.core.base.errors import ModelLoadError
from detokgui.core.model.families.base import Family, ModelShape, checked_shape, config_value


def _attn(block: int) -> str:
    return f"h.{block}.attn.attention."


class GPTNeo(Family):
    key = "gpt_neo"
    label = "GPT-Neo"
    model_types = ("gpt_neo",)
    prefixes = ("transformer.", "")
    anchor = "wte.weight"

    def shape(self, cfg: Mapping, name: str) -> ModelShape:
        try:
            d = config_value(cfg, "hidden_size", int, name)
            inner = config_value(cfg, "intermediate_size", int, name, None)
            shape = ModelShape(
                vocab_size=config_value(cfg, "vocab_size", int, name),
                n_positions=config_value(cfg, "max_position_embeddings", int, name),
                n_embd=d,
                n_head=config_value(cfg, "num_heads", int, name),
                n_inner=inner or 4 * d,
                layer_norm_epsilon=config_value(cfg, "layer_norm_epsilon", float, name, 1e-5),
                scale_attn_weights=False,
                activation_function=config_value(cfg, "activation_function", str, name,
                                                 "gelu_new"),
                family=self.key,
                n_layer=config_value(cfg, "num_layers", int, name, None),
            )
        except KeyError as exc:
            raise ModelLoadError(
                f"{name}: config.json lacks the GPT-Neo field {exc}; expected hidden_size, "
                "num_heads, max_position_embeddings and vocab_size."
            ) from exc
        checked_shape(shape, name)
        kind = first_layer_attention(cfg, name)
        window = config_value(cfg, "window_size", int, name, 256)
        shape = replace(shape, attention_layers=layer_attention(cfg), window_size=window)
        if kind == "local" and window < shape.n_positions:
            raise ModelLoadError(
                f"{name}: layer 0 of this GPT-Neo uses local attention: a query at position i "
                f"sees only the keys j with i - {window} < j <= i, not the whole past. "
                "detokgui analyses a first layer with global attention, as every released "
                "GPT-Neo has (EleutherAI/gpt-neo-125m, 1.3B, 2.7B)."
            )
        return shape

    def stored_names(self, shape: ModelShape) -> dict[str, bool]:
        names = {"wte.weight": True, "wpe.weight": True} | self.block_stored_names(shape, 0)
        return names | {"ln_f.weight": False, "ln_f.bias": False}

    def canonical(self, stored: Mapping, shape: ModelShape, name: str) -> dict:
        self.require(stored, shape, name)
        out = {"wte.weight": stored["wte.weight"], "wpe.weight": stored["wpe.weight"],
               **self.block_canonical(stored, shape, 0, name)}
        for key in ("ln_f.weight", "ln_f.bias"):
            if key in stored:
                out[key] = stored[key]
        return out

    def block_stored_names(self, shape: ModelShape, block: int) -> dict[str, bool]:
        attn, names = _attn(block), {}
        for ln in (f"h.{block}.ln_1", f"h.{block}.ln_2"):
            names |= {f"{ln}.weight": True, f"{ln}.bias": True}
        for proj in ("q_proj", "k_proj", "v_proj"):
            names |= {f"{attn}{proj}.weight": True, f"{attn}{proj}.bias": False}
        names |= {f"{attn}out_proj.weight": True, f"{attn}out_proj.bias": True}
        for lin in (f"h.{block}.mlp.c_fc", f"h.{block}.mlp.c_proj"):
            names |= {f"{lin}.weight": True, f"{lin}.bias": True}
        return names

    def block_canonical(self, stored: Mapping, shape: ModelShape, block: int,
                        name: str) -> dict:
        self.require(stored, shape, name, block)
        d, attn, h = shape.n_embd, _attn(block), f"h.{block}."

        def bias(proj: str) -> torch.Tensor:
            w = stored[f"{attn}{proj}.weight"]
            b = stored.get(f"{attn}{proj}.bias")
            return b if b is not None else torch.zeros(d, dtype=w.dtype)

        qkv = ("q_proj", "k_proj", "v_proj")
        return {
            f"{h}ln_1.weight": stored[f"{h}ln_1.weight"],
            f"{h}ln_1.bias": stored[f"{h}ln_1.bias"],
            f"{h}attn.c_attn.weight": torch.cat([stored[f"{attn}{p}.weight"].T for p in qkv], 1),
            f"{h}attn.c_attn.bias": torch.cat([bias(p) for p in qkv]),
            f"{h}attn.c_proj.weight": stored[f"{attn}out_proj.weight"].T.contiguous(),
            f"{h}attn.c_proj.bias": stored[f"{attn}out_proj.bias"],
            f"{h}ln_2.weight": stored[f"{h}ln_2.weight"],
            f"{h}ln_2.bias": stored[f"{h}ln_2.bias"],
            f"{h}mlp.c_fc.weight": stored[f"{h}mlp.c_fc.weight"].T.contiguous(),
            f"{h}mlp.c_fc.bias": stored[f"{h}mlp.c_fc.bias"],
            f"{h}mlp.c_proj.weight": stored[f"{h}mlp.c_proj.weight"].T.contiguous(),
            f"{h}mlp.c_proj.bias": stored[f"{h}mlp.c_proj.bias"],
        }


def layer_attention(cfg: Mapping) -> tuple[str, ...]:
    """"global" or "local" for each layer: attention_layers, or the attention_types
    pattern expanded ([[["global", "local"], 12]]: the pair repeated 12 times); () when
    neither can be read."""
    layers = cfg.get("attention_layers")
    if isinstance(layers, list) and layers:
        return tuple(str(k) for k in layers)
    out: list[str] = []
    try:
        for kinds, times in cfg.get("attention_types") or [[["global", "local"], 12]]:
            out += [str(k) for k in kinds] * int(times)
    except (TypeError, ValueError):
        return ()
    return tuple(out)


def first_layer_attention(cfg: Mapping, name: str) -> str:
    """"global" or "local": layer 0's attention, from attention_layers or, when absent,
    the attention_types pattern ([[["global", "local"], 12]]: the pair repeated 12 times)."""
    layers = cfg.get("attention_layers")
    if isinstance(layers, list) and layers:
        kind = layers[0]
    else:
        types = cfg.get("attention_types") or [[["global", "local"], 12]]
        try:
            kind = types[0][0][0]
        except (IndexError, KeyError, TypeError):
            kind = None
    if kind not in ("global", "local"):
        raise ModelLoadError(
            f"{name}: config.json's attention_layers/attention_types do not say whether "
            "layer 0 is global or local attention."
        )
    return kind


FAMILY = GPTNeo()
