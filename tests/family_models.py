"""Random checkpoints of every family, written by transformers' own config and model
classes with LayerNorms, biases and positions perturbed, and their own layer-0 scores."""

from pathlib import Path

import torch

#: name: (transformers config class, its arguments, model class name, base model class name)
SPECS = {
    "gpt2": ("GPT2Config", {"n_embd": 36, "n_head": 3, "n_layer": 2, "n_positions": 40,
                                "n_inner": 52, "vocab_size": 50257}, "GPT2LMHeadModel", "GPT2Model"),
    "gpt_neo": ("GPTNeoConfig", {"hidden_size": 48, "num_heads": 6, "num_layers": 2,
                                     "max_position_embeddings": 40, "intermediate_size": 80,
                                     "attention_types": [[["global", "local"], 1]],
                                     "window_size": 8, "vocab_size": 50257},
                "GPTNeoForCausalLM", "GPTNeoModel"),
    # 50272 embedding rows for the 50257-token tokenizer: OPT's padding rows
    "opt": ("OPTConfig", {"hidden_size": 40, "num_attention_heads": 5, "num_hidden_layers": 2,
                              "ffn_dim": 72, "max_position_embeddings": 36, "word_embed_proj_dim": 40,
                              "vocab_size": 50272}, "OPTForCausalLM", "OPTModel"),
    "opt_no_bias": ("OPTConfig", {"hidden_size": 32, "num_attention_heads": 4,
                                      "num_hidden_layers": 1, "ffn_dim": 48,
                                      "max_position_embeddings": 24, "word_embed_proj_dim": 32,
                                      "enable_bias": False, "layer_norm_elementwise_affine": False,
                                      "vocab_size": 50257}, "OPTForCausalLM", "OPTModel"),
}


def build(name, seed=0, base=False, **overrides):
    """(model, config) of family spec `name`, eager attention, perturbed."""
    import transformers

    cfg_cls, kwargs, lm_cls, base_cls = SPECS[name]
    cfg = getattr(transformers, cfg_cls)(**{**kwargs, **overrides})
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = getattr(transformers, base_cls if base else lm_cls)(cfg).eval()
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "norm" in pname or ".ln_" in pname or pname.endswith("bias"):
                p.add_(0.3 * torch.randn(p.shape, generator=g))
            elif "wpe" in pname or "embed_positions" in pname:
                p.mul_(3.0)
            elif any(s in pname for s in ("q_proj.weight", "k_proj.weight", "c_attn.weight")):
                p.mul_(1.5 / (p.std() * cfg.hidden_size**0.5))
    return model, cfg


def write(folder, name, seed=0, base=False, safe=True, tokenizer=True, **overrides):
    """Save a `build` model with the GPT-2 tokenizer to `folder`; returns (folder, model)."""
    from detokgui.core.model.tokens import gpt2_tokenizer

    folder = Path(folder)
    model, _ = build(name, seed, base, **overrides)
    model.save_pretrained(folder, safe_serialization=safe)
    if tokenizer:
        gpt2_tokenizer().save_pretrained(folder)
    return folder, model


def _decoder(model):
    for attr in ("transformer", "model", "decoder"):
        model = getattr(model, attr, model)
    return getattr(model, "decoder", model)


def raw_scores(model, ids):
    """q_i . k_j [H, n, n] from the model's own layer-0 modules, before any scaling."""
    ids = torch.as_tensor(ids)
    n = len(ids)
    core = _decoder(model)
    with torch.no_grad():
        if hasattr(core, "embed_tokens"):  # OPT: positions stored with an offset of 2
            x = core.embed_tokens.weight[ids] + core.embed_positions.weight[2:n + 2]
            blk = core.layers[0]
            h = blk.self_attn_layer_norm(x)
            q, k = blk.self_attn.q_proj(h), blk.self_attn.k_proj(h)
            H = blk.self_attn.num_heads
        else:
            x = core.wte.weight[ids] + core.wpe.weight[:n]
            blk = core.h[0]
            h = blk.ln_1(x)
            if hasattr(blk.attn, "attention"):  # GPT-Neo
                att = blk.attn.attention
                q, k, H = att.q_proj(h), att.k_proj(h), att.num_heads
            else:
                q, k, _ = blk.attn.c_attn(h).split(blk.attn.split_size, dim=-1)
                H = blk.attn.num_heads
        q = q.view(n, H, -1).transpose(0, 1)
        k = k.view(n, H, -1).transpose(0, 1)
        return q @ k.transpose(1, 2)


def attention(model, ids):
    """The model's own layer-0 attention probabilities, [H, n, n]."""
    with torch.no_grad():
        out = model(torch.tensor([list(ids)]), output_attentions=True)
    return out.attentions[0][0]
