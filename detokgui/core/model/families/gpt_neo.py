"""GPT-Neo (EleutherAI/gpt-neo-125m, 1.3B, 2.7B).

Differences from GPT-2: separate q/k/v Linear layers without bias ([out, in] weights),
out_proj with a bias; scores are NOT divided by sqrt(d') (temperature 1); layers
alternate global and local attention (a local layer sees only the last `window_size`
keys). Layer 0 of every released GPT-Neo is global. A local layer 0 whose window covers
every position is global too; any other local layer 0 is refused."""

from __future__ import annotations

from collections.abc import Mapping

import torch

from detokgui.core.base.errors import ModelLoadError
from detokgui.core.model.families.base import Family, ModelShape, checked_shape, config_value

_ATTN = "h.0.attn.attention."


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
            )
        except KeyError as exc:
            raise ModelLoadError(
                f"{name}: config.json lacks the GPT-Neo field {exc}; expected hidden_size, "
                "num_heads, max_position_embeddings and vocab_size."
            ) from exc
        checked_shape(shape, name)
        kind = first_layer_attention(cfg, name)
        window = config_value(cfg, "window_size", int, name, 256)
        if kind == "local" and window < shape.n_positions:
            raise ModelLoadError(
                f"{name}: layer 0 of this GPT-Neo uses local attention: a query at position i "
                f"sees only the keys j with i - {window} < j <= i, not the whole past. "
                "detokgui analyses a first layer with global attention, as every released "
                "GPT-Neo has (EleutherAI/gpt-neo-125m, 1.3B, 2.7B)."
            )
        return shape

    def stored_names(self, shape: ModelShape) -> dict[str, bool]:
        names = {"wte.weight": True, "wpe.weight": True}
        for ln in ("h.0.ln_1", "h.0.ln_2"):
            names |= {f"{ln}.weight": True, f"{ln}.bias": True}
        for proj in ("q_proj", "k_proj", "v_proj"):
            names |= {f"{_ATTN}{proj}.weight": True, f"{_ATTN}{proj}.bias": False}
        names |= {f"{_ATTN}out_proj.weight": True, f"{_ATTN}out_proj.bias": True}
        for lin in ("h.0.mlp.c_fc", "h.0.mlp.c_proj"):
            names |= {f"{lin}.weight": True, f"{lin}.bias": True}
        return names | {"ln_f.weight": False, "ln_f.bias": False}

    def canonical(self, stored: Mapping, shape: ModelShape, name: str) -> dict:
        self.require(stored, shape, name)
        d = shape.n_embd

        def bias(proj: str) -> torch.Tensor:
            w = stored[f"{_ATTN}{proj}.weight"]
            b = stored.get(f"{_ATTN}{proj}.bias")
            return b if b is not None else torch.zeros(d, dtype=w.dtype)

        qkv = ("q_proj", "k_proj", "v_proj")
        out = {
            "wte.weight": stored["wte.weight"],
            "wpe.weight": stored["wpe.weight"],
            "h.0.attn.c_attn.weight": torch.cat([stored[f"{_ATTN}{p}.weight"].T for p in qkv], 1),
            "h.0.attn.c_attn.bias": torch.cat([bias(p) for p in qkv]),
            "h.0.attn.c_proj.weight": stored[f"{_ATTN}out_proj.weight"].T.contiguous(),
            "h.0.attn.c_proj.bias": stored[f"{_ATTN}out_proj.bias"],
            "h.0.mlp.c_fc.weight": stored["h.0.mlp.c_fc.weight"].T.contiguous(),
            "h.0.mlp.c_fc.bias": stored["h.0.mlp.c_fc.bias"],
            "h.0.mlp.c_proj.weight": stored["h.0.mlp.c_proj.weight"].T.contiguous(),
            "h.0.mlp.c_proj.bias": stored["h.0.mlp.c_proj.bias"],
        }
        for key in ("h.0.ln_1.weight", "h.0.ln_1.bias", "h.0.ln_2.weight", "h.0.ln_2.bias",
                    "ln_f.weight", "ln_f.bias"):
            if key in stored:
                out[key] = stored[key]
        return out


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
