"""The demo models, and random-initialised GPT-2 checkpoints with the real GPT-2 tokenizer.

- "demo": a small GPT-2-architecture model *trained* on public-domain English, shipped
  inside the package (`detokgui/resources/demo_model`, its README says how it was
  trained), so that a newcomer without internet sees learned layer-0 structure.
- "random-demo": the same interface on random weights (GPT-2-small-like shapes), written
  once into the user cache; useful to compare learned structure against noise.

Random checkpoints are also what the tests load, through the same
`Layer0.from_pretrained` path users hit.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import torch

from detokgui.core.base.atomic import atomic_folder, sweep_stale_parts
from detokgui.core.base.diskcache import log
from detokgui.core.base.errors import ModelLoadError
from detokgui.core.base.paths import cache_root
from detokgui.core.model.tokens import gpt2_tokenizer

DEMO = "demo"
RANDOM_DEMO = "random-demo"
DEMO_NAMES = (DEMO, RANDOM_DEMO)
DEMO_TITLE = "demo model (trained 2-layer GPT-2 architecture, not GPT-2)"
RANDOM_DEMO_TITLE = "random demo model (random weights)"
#: The demo models' entries in menus and messages.
DEMO_LABELS = {
    DEMO: "Demo model (trained, not GPT-2)",
    RANDOM_DEMO: "Random demo model (random weights)",
}
DEMO_DESCRIPTION = (
    "The demo model is not GPT-2: a 2-layer GPT-2-architecture model (d=128, 8 heads, "
    "128 positions, the real GPT-2 tokenizer) trained on a CPU on 9.7M tokens of "
    "public-domain and freely licensed English (Austen, Bibles, State of the Union "
    "addresses, dictionaries, manuals). Its layer 0 has a sharp previous-token head (7) "
    "and broad heads (0, 1, 3, 4)."
)
RANDOM_DEMO_DESCRIPTION = (
    "The random demo model has random weights (GPT-2-small-like: d=384, 12 heads, 1024 "
    "positions) and the real GPT-2 tokenizer: its rankings and curves are noise."
)
_RANDOM_DEMO_FOLDER = "random-demo-model-v2"
_REQUIRED = ("config.json", "model.safetensors", "tokenizer.json")


def demo_model_folder() -> Path:
    """The trained demo model shipped inside the package."""
    from importlib.resources import files

    return Path(str(files("detokgui.resources") / "demo_model"))


def sample_corpus() -> Path:
    """The sample corpus shipped inside the package: about 3 MB of public-domain English
    (Austen, Bibles, State of the Union addresses, Bierce), one {"text": ...} per line."""
    from importlib.resources import files

    return Path(str(files("detokgui.resources") / "sample_corpus" / "public-domain-sample.jsonl.gz"))


def random_demo_folder(report: Callable[[float, str], None] | None = None) -> Path:
    """The random demo model in the user cache, written (atomically) on first use.

    A folder left incomplete by an older version is replaced, and the stale temporary
    folder of a killed first use removed. ModelLoadError when the cache folder cannot be
    written."""

    folder = cache_root() / _RANDOM_DEMO_FOLDER
    if all((folder / f).is_file() for f in _REQUIRED):
        return folder
    try:
        if folder.exists():
            shutil.rmtree(folder)
        sweep_stale_parts(folder.parent, _RANDOM_DEMO_FOLDER)
        if report is not None:
            report(0.0, "Writing the random demo model (once)")
        with atomic_folder(folder) as tmp:
            write_random_checkpoint(tmp, n_embd=384, n_head=12, n_positions=1024, seed=0)
    except OSError as exc:
        raise ModelLoadError(f"The random demo model cannot be written to the cache: "
                             f"{exc.strerror or exc}: {exc.filename or folder.parent}") from exc
    return folder


def rewrite_random_demo(reason: str, report: Callable[[float, str], None] | None = None
                        ) -> Path:
    """Discard the random demo model in the cache, which could not be loaded (`reason`),
    saying so in one line (core.base.diskcache's logger), and write it again."""

    folder = cache_root() / _RANDOM_DEMO_FOLDER
    log.warning(f"discarded the damaged random demo model {folder} ({reason}); writing it again")
    shutil.rmtree(folder, ignore_errors=True)
    return random_demo_folder(report)


def resolve(name: str, report: Callable[[float, str], None] | None = None) -> tuple[str, str]:
    """(folder or hub name to load, display title) for a model name; the demo names map
    to their folders, anything else is returned as it is."""
    if name == DEMO:
        return str(demo_model_folder()), DEMO_TITLE
    if name == RANDOM_DEMO:
        return str(random_demo_folder(report)), RANDOM_DEMO_TITLE
    return name, name


def description(name: str) -> str | None:
    return {DEMO: DEMO_DESCRIPTION, RANDOM_DEMO: RANDOM_DEMO_DESCRIPTION}.get(name)


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

        gpt2_tokenizer().save_pretrained(folder)
    return folder
