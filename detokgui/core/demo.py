"""Random-initialised GPT-2 checkpoints with the real GPT-2 tokenizer.

Used for the app's demo model (try the interface without any download) and by the
tests, which load them through the same `Layer0.from_pretrained` path users hit.
"""

from __future__ import annotations

from pathlib import Path

import torch


def write_random_checkpoint(
    folder: str | Path,
    *,
    n_embd: int = 64,
    n_head: int = 4,
    n_positions: int = 128,
    n_layer: int = 1,
    vocab_size: int = 50257,
    seed: int = 0,
    weight_format: str = "safetensors",
    prefixed: bool = True,
    tokenizer: bool = True,
    perturb: bool = True,
) -> Path:
    """Write config.json, weights and tokenizer files of a random GPT-2 to `folder`.

    With `perturb`, ln_1's gamma/beta, the attention biases and the position embedding
    are moved away from their initial values so that LayerNorm folding and every one of
    the six terms are exercised. `prefixed=False` saves a bare GPT2Model (keys without
    `transformer.`)."""
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2Model

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    config = GPT2Config(
        n_embd=n_embd,
        n_head=n_head,
        n_layer=n_layer,
        n_positions=n_positions,
        vocab_size=vocab_size,
    )
    model = (GPT2LMHeadModel if prefixed else GPT2Model)(config).eval()
    if perturb:
        base = getattr(model, "transformer", model)
        g = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            blk = base.h[0]
            blk.ln_1.weight.copy_(1.0 + 0.3 * torch.randn(n_embd, generator=g))
            blk.ln_1.bias.copy_(0.2 * torch.randn(n_embd, generator=g))
            blk.attn.c_attn.bias.copy_(0.5 * torch.randn(3 * n_embd, generator=g))
            # q and k entries of order 1.5 whatever d is: scores like a trained model's.
            blk.attn.c_attn.weight.mul_(1.5 / (config.initializer_range * n_embd**0.5))
            base.wpe.weight.mul_(3.0)
            base.wpe.weight[0].mul_(4.0)
            blk.attn.c_proj.bias.copy_(0.1 * torch.randn(n_embd, generator=g))
    if weight_format == "safetensors":
        model.save_pretrained(folder, safe_serialization=True)
    elif weight_format == "bin":
        config.save_pretrained(folder)
        torch.save(model.state_dict(), folder / "pytorch_model.bin")
    else:
        raise ValueError(f"weight_format must be 'safetensors' or 'bin', not {weight_format!r}")
    if tokenizer:
        from detokgui.core.tokens import gpt2_tokenizer

        gpt2_tokenizer().save_pretrained(folder)
    return folder
