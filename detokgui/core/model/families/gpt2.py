"""GPT-2 (gpt2 to gpt2-xl, distilgpt2, Cerebras-GPT, DialoGPT, rinna/japanese-gpt-1b and
any fine-tune): the checkpoint stores the canonical tensors under their own names."""

from __future__ import annotations

from collections.abc import Mapping

from detokgui.core.base.errors import ModelLoadError
from detokgui.core.model.families.base import (
    LAYER0_KEYS,
    OPTIONAL_KEYS,
    Family,
    ModelShape,
    block_keys,
    checked_shape,
    config_value,
)


class GPT2(Family):
    key = "gpt2"
    label = "GPT-2"
    model_types = ("gpt2",)
    prefixes = ("transformer.", "", "model.transformer.")
    anchor = "wte.weight"

    def shape(self, cfg: Mapping, name: str) -> ModelShape:
        pos = cfg.get("position_embedding_type", "absolute")
        if pos not in (None, "absolute"):
            raise ModelLoadError(
                f"{name} uses position_embedding_type={pos!r}; detokgui needs learned "
                "absolute position embeddings (wpe)."
            )
        try:
            pos_field = "n_ctx" if "n_positions" not in cfg and "n_ctx" in cfg else "n_positions"
            d = config_value(cfg, "n_embd", int, name)
            inner = config_value(cfg, "n_inner", int, name, None)
            shape = ModelShape(
                vocab_size=config_value(cfg, "vocab_size", int, name),
                n_positions=config_value(cfg, pos_field, int, name),
                n_embd=d,
                n_head=config_value(cfg, "n_head", int, name),
                n_inner=inner or 4 * d,
                layer_norm_epsilon=config_value(cfg, "layer_norm_epsilon", float, name, 1e-5),
                scale_attn_weights=config_value(cfg, "scale_attn_weights", bool, name, True),
                activation_function=config_value(cfg, "activation_function", str, name,
                                                 "gelu_new"),
                family=self.key,
                n_layer=config_value(cfg, "n_layer", int, name, None),
            )
        except KeyError as exc:
            raise ModelLoadError(
                f"{name}: config.json lacks the GPT-2 field {exc}; "
                "expected n_embd, n_head, n_positions and vocab_size."
            ) from exc
        return checked_shape(shape, name)

    def stored_names(self, shape: ModelShape) -> dict[str, bool]:
        return {**dict.fromkeys(LAYER0_KEYS, True), **dict.fromkeys(OPTIONAL_KEYS, False)}

    def canonical(self, stored: Mapping, shape: ModelShape, name: str) -> dict:
        self._check_qkv_bias(stored, 0, name)
        self.require(stored, shape, name)
        return {k: stored[k] for k in LAYER0_KEYS + OPTIONAL_KEYS if k in stored}

    def block_stored_names(self, shape: ModelShape, block: int) -> dict[str, bool]:
        return dict.fromkeys(block_keys(block), True)

    def block_canonical(self, stored: Mapping, shape: ModelShape, block: int,
                        name: str) -> dict:
        self._check_qkv_bias(stored, block, name)
        self.require(stored, shape, name, block)
        return {k: stored[k] for k in block_keys(block)}

    @staticmethod
    def _check_qkv_bias(stored: Mapping, block: int, name: str) -> None:
        if (f"h.{block}.attn.c_attn.bias" not in stored
                and f"h.{block}.attn.c_attn.weight" in stored):
            raise ModelLoadError(
                f"{name}: {'layer' if block == 0 else 'block'} {block} has no query/key/value "
                "bias (c_attn.bias), which every GPT-2 checkpoint stores; the checkpoint is "
                "incomplete."
            )


FAMILY = GPT2()
