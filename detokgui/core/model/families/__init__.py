"""Model families: one module each (gpt2, gpt_neo, opt) maps its layer 0 onto the
canonical tensors `Layer0` folds (`base` says which); everything else in detokgui is
family-agnostic. Models the decomposition does not apply to are refused here, with a
message naming their mechanism."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from detokgui.core.base.errors import ModelLoadError
from detokgui.core.model.families import gpt2, gpt_neo, opt
from detokgui.core.model.families.base import (
    LAYER0_KEYS,
    OPTIONAL_KEYS,
    Family,
    ModelShape,
    block_keys,
)

__all__ = [
    "FAMILIES",
    "LAYER0_KEYS",
    "OPTIONAL_KEYS",
    "SUPPORTED",
    "Family",
    "ModelShape",
    "block_keys",
    "family_for",
    "family_label",
    "get",
    "read_config",
    "with_family",
]

FAMILIES: tuple[Family, ...] = (gpt2.FAMILY, gpt_neo.FAMILY, opt.FAMILY)

#: What works, for refusal messages.
SUPPORTED = ("detokgui analyses models with learned absolute position embeddings and a "
             "pre-LayerNorm first layer: GPT-2 (gpt2 to gpt2-xl, distilgpt2, Cerebras-GPT, "
             "DialoGPT, rinna/japanese-gpt-1b and fine-tunes), GPT-Neo (125M, 1.3B, 2.7B) "
             "and OPT (opt-125m, opt-1.3b and larger; not opt-350m).")

_ROTARY = {
    "llama", "mistral", "mixtral", "gpt_neox", "gptj", "qwen2", "qwen2_moe", "qwen3",
    "phi", "phi3", "gemma", "gemma2", "gemma3", "stablelm", "olmo", "olmo2", "starcoder2",
    "cohere", "persimmon", "codegen", "falcon", "deepseek_v2", "deepseek_v3", "granite",
    "internlm2", "smollm3",
}
_ALIBI = {"bloom", "mpt"}
#: Learned absolute positions, but LayerNorm after attention (post-LN).
_POST_LN = {"openai-gpt": "GPT-1", "bert": "BERT", "roberta": "RoBERTa",
            "distilbert": "DistilBERT", "xlm": "XLM", "electra": "ELECTRA",
            "biogpt": "BioGPT"}
_BY_TYPE = {t: f for f in FAMILIES for t in f.model_types}


def family_label(key: str) -> str:
    """"GPT-2", "GPT-Neo", "OPT" for the family keys "gpt2", "gpt_neo", "opt"."""
    fam = get(key, None)
    return fam.label if fam is not None else key


def with_family(name: str, family: str) -> str:
    """"gpt2 (GPT-2 architecture)": a model's name and its family's architecture (a
    `family_label`), unless the name already says it (the demo models' names do) or the
    family is not known (""). "architecture", not the family alone: "random demo model
    (GPT-2)" read as GPT-2."""
    return f"{name} ({family} architecture)" if family and family not in name else name


def get(key: str, default=KeyError) -> Family:
    """The family with key `key` ("gpt2", "gpt_neo", "opt")."""
    for fam in FAMILIES:
        if fam.key == key:
            return fam
    if default is KeyError:
        raise KeyError(key)
    return default


def family_for(cfg: Mapping, name: str) -> Family:
    """The family of config.json's contents `cfg`; ModelLoadError naming the model's
    position mechanism (rotary, ALiBi, post-LN) when the analysis does not apply."""
    model_type = str(cfg.get("model_type", "")).lower()
    if model_type in _BY_TYPE:
        return _BY_TYPE[model_type]
    if model_type in _ROTARY or cfg.get("rope_theta") or cfg.get("rotary_dim") or cfg.get(
        "rotary_pct"
    ):
        raise ModelLoadError(
            f"{name} is a {model_type or 'rotary'} model: it encodes position by rotating "
            "queries and keys (rotary embeddings), so there is no learned position embedding "
            f"P and the position terms T_pp, T_pe, T_ep and T_p do not exist. {SUPPORTED}"
        )
    if model_type in _ALIBI or cfg.get("alibi"):
        raise ModelLoadError(
            f"{name} is a {model_type or 'ALiBi'} model: it biases attention by distance "
            "(ALiBi) instead of adding a learned position embedding, so the position terms "
            f"do not exist. {SUPPORTED}"
        )
    if model_type in _POST_LN:
        raise ModelLoadError(
            f"{name} is a {_POST_LN[model_type]} model: its LayerNorm comes after attention "
            "(post-LN), so the first attention layer reads the raw sum e + p and the "
            f"LayerNorm folding does not apply. {SUPPORTED}"
        )
    raise ModelLoadError(
        f"{name} is not a model detokgui can analyse "
        f"(model_type={model_type or 'missing'!r}). {SUPPORTED}"
    )


def read_config(path: Path, name: str) -> ModelShape:
    """Parse config.json into the family's ModelShape; ModelLoadError when it cannot be
    read or describes a model the analysis does not apply to."""
    try:
        cfg = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelLoadError(f"{name}: config.json cannot be read ({exc}).") from exc
    if not isinstance(cfg, dict):
        raise ModelLoadError(f"{name}: config.json does not hold a configuration object.")
    return family_for(cfg, name).shape(cfg, name)
