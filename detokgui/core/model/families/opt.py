"""OPT (facebook/opt-125m, opt-1.3b ... opt-66b).

Differences from GPT-2: separate q/k/v Linear layers ([out, in] weights) with biases
(none when enable_bias is false); the query is multiplied by d'^-1/2 after its bias,
which is the same as dividing the scores by sqrt(d'); the learned positions are stored
with an offset of 2: P[j] = embed_positions row j + 2; the embedding matrix may have more
rows than the tokenizer (padding rows, dropped when the model loads); the MLP's
LayerNorm is called final_layer_norm inside each layer; LayerNorm eps is torch's
default 1e-5. OPT-350m (do_layer_norm_before false, project_in/out) is post-LN and is
refused."""

from __future__ import annotations

from collections.abc import Mapping

import torch

from detokgui.core.base.errors import ModelLoadError
from detokgui.core.model.families.base import Family, ModelShape, checked_shape, config_value

POSITION_OFFSET = 2


class OPT(Family):
    key = "opt"
    label = "OPT"
    model_types = ("opt",)
    prefixes = ("model.decoder.", "decoder.", "")
    anchor = "embed_tokens.weight"

    def shape(self, cfg: Mapping, name: str) -> ModelShape:
        try:
            d = config_value(cfg, "hidden_size", int, name)
            shape = ModelShape(
                vocab_size=config_value(cfg, "vocab_size", int, name),
                n_positions=config_value(cfg, "max_position_embeddings", int, name),
                n_embd=d,
                n_head=config_value(cfg, "num_attention_heads", int, name),
                n_inner=config_value(cfg, "ffn_dim", int, name),
                layer_norm_epsilon=1e-5,
                scale_attn_weights=True,
                activation_function=config_value(cfg, "activation_function", str, name, "relu"),
                family=self.key,
                linear_bias=config_value(cfg, "enable_bias", bool, name, True),
                norm_affine=config_value(cfg, "layer_norm_elementwise_affine", bool, name,
                                         True),
                n_layer=config_value(cfg, "num_hidden_layers", int, name, None),
            )
        except KeyError as exc:
            raise ModelLoadError(
                f"{name}: config.json lacks the OPT field {exc}; expected hidden_size, "
                "num_attention_heads, ffn_dim, max_position_embeddings and vocab_size."
            ) from exc
        pre_ln = config_value(cfg, "do_layer_norm_before", bool, name, True)
        proj = config_value(cfg, "word_embed_proj_dim", int, name, d)
        if not pre_ln:
            raise ModelLoadError(
                f"{name} is a post-LayerNorm OPT (do_layer_norm_before=false, as "
                "facebook/opt-350m): its first attention layer reads the raw sum e + p, "
                "normalised only after the residual, so the LayerNorm folding and the "
                "six-term decomposition do not apply. Every other OPT size (opt-125m, "
                "opt-1.3b and larger) is pre-LayerNorm and works, as do GPT-2 and GPT-Neo."
            )
        if proj != d:
            raise ModelLoadError(
                f"{name}: this OPT stores {proj}-wide token embeddings and projects them to "
                f"its width {d} (word_embed_proj_dim, project_in), so E is not what layer 0 "
                "adds to P; detokgui reads OPTs whose embeddings have the model's width "
                "(opt-125m, opt-1.3b and larger; opt-350m is also post-LN). GPT-2 and "
                "GPT-Neo work too."
            )
        return checked_shape(shape, name)

    def stored_names(self, shape: ModelShape) -> dict[str, bool]:
        names = {"embed_tokens.weight": True, "embed_positions.weight": True}
        names |= self.block_stored_names(shape, 0)
        return names | {"final_layer_norm.weight": False, "final_layer_norm.bias": False}

    def block_stored_names(self, shape: ModelShape, block: int) -> dict[str, bool]:
        at, names = f"layers.{block}.", {}
        for ln in (at + "self_attn_layer_norm", at + "final_layer_norm"):
            names |= {f"{ln}.weight": shape.norm_affine, f"{ln}.bias": shape.norm_affine}
        for lin in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                    "self_attn.out_proj", "fc1", "fc2"):
            names |= {f"{at}{lin}.weight": True, f"{at}{lin}.bias": shape.linear_bias}
        return names

    def canonical(self, stored: Mapping, shape: ModelShape, name: str) -> dict:
        self.require(stored, shape, name)
        L = shape.n_positions
        E = stored["embed_tokens.weight"]
        table = stored["embed_positions.weight"]
        if table.dim() != 2 or table.shape[0] != L + POSITION_OFFSET:
            raise ModelLoadError(
                f"{name}: embed_positions has shape {list(table.shape)}; an OPT with "
                f"max_position_embeddings={L} stores {L + POSITION_OFFSET} rows "
                f"(positions offset by {POSITION_OFFSET})."
            )
        out = {"wte.weight": E, "wpe.weight": table[POSITION_OFFSET:],
               **self.block_canonical(stored, shape, 0, name)}
        if ("final_layer_norm.weight" in stored or "final_layer_norm.bias" in stored
                or not shape.norm_affine):
            out["ln_f.weight"], out["ln_f.bias"] = _norm(stored, "final_layer_norm",
                                                         shape.n_embd, E.dtype)
        return out

    def block_canonical(self, stored: Mapping, shape: ModelShape, block: int,
                        name: str) -> dict:
        self.require(stored, shape, name, block)
        d, at, h = shape.n_embd, f"layers.{block}.", f"h.{block}."
        dtype = stored[f"{at}self_attn.q_proj.weight"].dtype

        def linear(lin: str, width: int) -> tuple[torch.Tensor, torch.Tensor]:
            w = stored[f"{at}{lin}.weight"]
            b = stored.get(f"{at}{lin}.bias")
            return w.T, b if b is not None else torch.zeros(width, dtype=w.dtype)

        q, k, v = (linear(f"self_attn.{p}_proj", d) for p in "qkv")
        out_w, out_b = linear("self_attn.out_proj", d)
        fc1_w, fc1_b = linear("fc1", shape.n_inner)
        fc2_w, fc2_b = linear("fc2", d)
        ln1_w, ln1_b = _norm(stored, at + "self_attn_layer_norm", d, dtype)
        ln2_w, ln2_b = _norm(stored, at + "final_layer_norm", d, dtype)
        return {
            f"{h}ln_1.weight": ln1_w, f"{h}ln_1.bias": ln1_b,
            f"{h}attn.c_attn.weight": torch.cat([q[0], k[0], v[0]], 1),
            f"{h}attn.c_attn.bias": torch.cat([q[1], k[1], v[1]]),
            f"{h}attn.c_proj.weight": out_w.contiguous(), f"{h}attn.c_proj.bias": out_b,
            f"{h}ln_2.weight": ln2_w, f"{h}ln_2.bias": ln2_b,
            f"{h}mlp.c_fc.weight": fc1_w.contiguous(), f"{h}mlp.c_fc.bias": fc1_b,
            f"{h}mlp.c_proj.weight": fc2_w.contiguous(), f"{h}mlp.c_proj.bias": fc2_b,
        }


def _norm(stored: Mapping, ln: str, d: int, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """gamma, beta of LayerNorm `ln` (1 and 0 when it has no learned parameters)."""
    w, b = stored.get(f"{ln}.weight"), stored.get(f"{ln}.bias")
    w = w if w is not None else torch.ones(d, dtype=dtype)
    return w, b if b is not None else torch.zeros(d, dtype=dtype)


FAMILY = OPT()
