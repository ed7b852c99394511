"""What the first two blocks do on repeated random tokens, measured with the model's own
forward pass (docs/math/composition.md#behaviour-previous-token-and-induction-scores):
the previous-token score and the induction score of every head, in layers 0 and 1.

The sequences: `sequences` seeded draws of `length` distinct random tokens r (no special
token), each repeated once, [BOS] r r (BOS: the tokenizer's bos_token_id, else
eos_token_id, when `prepend_bos`). With alpha the attention of a head and r starting at
position s:

    previous-token score = mean over sequences and i in s+1 .. T-1 of alpha(i, i - 1)
    induction score      = mean over sequences and i in s+length .. T-1 of alpha(i, i - length + 1)

(the second copy's query at i attends to the token after the earlier copy of its own
token). The forward pass is transformers' own class of the model's family (GPT2Model,
GPTNeoModel, OPTModel) built with two layers from config.json and the checkpoint's own
tensors of the embeddings and blocks 0 and 1, eager attention, `output_attentions`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np
import torch

from detokgui.core.base.checks import as_int
from detokgui.core.base.errors import InputError, ModelLoadError
from detokgui.core.base.progress import Job, Progress, rescaled
from detokgui.core.model.families import get as get_family
from detokgui.core.model.layer1 import Layer1, layer1_job
from detokgui.core.model.sources.checkpoint import read_stored
from detokgui.core.model.tokens import bos_id

DEFAULT_SEQUENCES = 16
DEFAULT_LENGTH = 50
CACHE_KEY = "composition.behaviour"
#: Stored tensors the first two blocks' forward pass may do without (the final
#: LayerNorm, after the last block, does not change attention).
NOT_NEEDED = ("ln_f.", "final_layer_norm.")


@dataclass(eq=False)
class Behaviour:
    """previous_token[l, h], induction[l, h] of head h in layer l (0 or 1), measured on
    `sequences` sequences of `length` random tokens repeated once (BOS first when `bos`
    is not None)."""

    previous_token: np.ndarray  # [2, H]
    induction: np.ndarray  # [2, H]
    sequences: int
    length: int
    seed: int
    bos: int | None
    layer1_attention: str = "global attention"

    def previous_token_head(self) -> int:
        """The layer-0 head with the highest previous-token score."""
        return int(np.argmax(self.previous_token[0]))

    def induction_head(self) -> int:
        """The layer-1 head with the highest induction score."""
        return int(np.argmax(self.induction[1]))

    def label(self) -> str:
        return (f"{self.sequences} sequences of {self.length} random tokens repeated once"
                + (", BOS first" if self.bos is not None else ""))


def ordinary_tokens(layer) -> torch.Tensor:
    """The ids of the tokens the random sequences draw from: every id but the tokenizer's
    special tokens."""
    special = set(getattr(layer.tokenizer, "all_special_ids", None) or ())
    return torch.tensor([t for t in range(layer.n_vocab) if t not in special])


def default_length(layer, prepend_bos: bool = True) -> int:
    """DEFAULT_LENGTH, or as many tokens as fit twice in the model's positions, or as many
    distinct ordinary tokens as the vocabulary has, whichever is least."""
    fit = (layer.n_positions - int(prepend_bos)) // 2
    return max(2, min(DEFAULT_LENGTH, fit, len(ordinary_tokens(layer))))


def check_choices(layer, sequences: int = DEFAULT_SEQUENCES, length: int | None = None,
                  seed: int = 0, prepend_bos: bool = True) -> tuple[int, int, int, int | None]:
    """(sequences, length, start, BOS id or None) of a choice of repeated sequences, checked
    against the model without drawing any: InputError when they do not fit it."""
    sequences = as_int(sequences, "number of sequences")
    if sequences < 1:
        raise InputError(f"The number of sequences must be at least 1, not {sequences}.")
    as_int(seed, "seed")
    bos = bos_id(layer.tokenizer) if prepend_bos else None
    if prepend_bos and bos is None:
        raise InputError(f"{layer.name}'s tokenizer has no BOS or EOS token to put first; "
                         "measure without one (prepend_bos=False).")
    length = default_length(layer, prepend_bos) if length is None else as_int(length, "length")
    start = int(bos is not None)
    if length < 2 or start + 2 * length > layer.n_positions:
        raise InputError(f"A repeated sequence of {length} tokens needs "
                         f"{start + 2 * length} positions; {layer.name} has "
                         f"{layer.n_positions}: choose a length from 2 to "
                         f"{(layer.n_positions - start) // 2}.")
    return sequences, length, start, bos


def repeated_sequences(layer, sequences: int = DEFAULT_SEQUENCES, length: int | None = None,
                       seed: int = 0, prepend_bos: bool = True) -> tuple[torch.Tensor, int]:
    """([sequences, T] token ids: [BOS] r r with r `length` distinct random tokens, the
    position where r starts). InputError when the sequences do not fit the model."""
    sequences, length, start, bos = check_choices(layer, sequences, length, seed, prepend_bos)
    pool = ordinary_tokens(layer)
    if len(pool) < length:
        raise InputError(f"{layer.name} has {len(pool)} ordinary tokens, fewer than a "
                         f"sequence of {length} distinct ones; choose a shorter length.")
    g = torch.Generator().manual_seed(as_int(seed, "seed"))
    rows = []
    for _ in range(sequences):
        r = pool[torch.randperm(len(pool), generator=g)[:length]]
        rows.append(torch.cat([torch.tensor([bos] * start, dtype=torch.long), r, r]))
    return torch.stack(rows), start


def scores(attn: torch.Tensor, start: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """(previous-token, induction) scores [H] of attention `attn` [B, H, T, T] on
    repeated sequences whose first copy starts at `start` (module docstring)."""
    T = attn.shape[-1]
    i = torch.arange(start + 1, T)
    prev = attn[:, :, i, i - 1].mean(dim=(0, 2))
    q = torch.arange(start + length, T)
    ind = attn[:, :, q, q - length + 1].mean(dim=(0, 2))
    return prev.double().cpu().numpy(), ind.double().cpu().numpy()


def two_blocks(layer, l1: Layer1) -> torch.nn.Module:
    """transformers' own base model of the family (GPT2Model, GPTNeoModel, OPTModel's
    decoder) with two layers, holding the checkpoint's tensors of the embeddings and
    blocks 0 and 1, in float32 on the CPU, eager attention."""
    import transformers

    shape = l1.shape
    family = get_family(shape.family)
    cfg = dict(l1.config)
    for key in ("architectures", "transformers_version", "_name_or_path", "torch_dtype",
                "dtype"):
        cfg.pop(key, None)
    if shape.family == "gpt2":
        cfg["n_layer"] = 2
    elif shape.family == "gpt_neo":
        cfg["num_layers"] = 2
        kinds = [shape.attention_kind(0), shape.attention_kind(1)]
        cfg.pop("attention_layers", None)
        cfg["attention_types"] = [[kinds, 1]]
    else:
        cfg["num_hidden_layers"] = 2
    model_type = cfg.pop("model_type")
    config = transformers.AutoConfig.for_model(model_type, **cfg)
    with _quiet():
        model = transformers.AutoModel.from_config(config, attn_implementation="eager")
    target = getattr(model, "decoder", model)

    def select(available):
        return {**family.resolve(available, shape, layer.name),
                **family.resolve_block(available, shape, 1, layer.name)}

    stored = read_stored(l1.weights, l1.weight_format, select)
    params = dict(target.named_parameters())
    missing = [k for k in params if k not in stored and not k.startswith(NOT_NEEDED)]
    if missing:
        raise ModelLoadError(f"{layer.name}: the checkpoint lacks {', '.join(missing[:4])} "
                             "for the forward pass of the first two blocks.")
    with torch.no_grad():
        for k, p in params.items():
            if k in stored:
                if tuple(stored[k].shape) != tuple(p.shape):
                    raise ModelLoadError(f"{layer.name}: {k} has shape "
                                         f"{list(stored[k].shape)}, the model {list(p.shape)}.")
                p.copy_(stored[k].to(p.dtype))
    return model.float().eval()


@contextlib.contextmanager
def _quiet():
    """transformers' info and warnings about a config built from a checkpoint's fields,
    not shown (a person reads the scores, not them)."""
    import logging

    log = logging.getLogger("transformers")
    before = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(before)


def attentions(model: torch.nn.Module, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The attention [B, H, T, T] of layers 0 and 1 of `two_blocks`'s model on `ids`."""
    with torch.no_grad():
        out = model(input_ids=ids, output_attentions=True)
    a0, a1 = out.attentions[:2]
    return a0, a1


def measure(layer, l1: Layer1, sequences: int = DEFAULT_SEQUENCES, length: int | None = None,
            seed: int = 0, prepend_bos: bool = True, batch: int = 8) -> Job[Behaviour]:
    """Generator job: the previous-token and induction scores of every head of layers 0
    and 1 (module docstring), a batch of sequences at a time."""
    ids, start = repeated_sequences(layer, sequences, length, seed, prepend_bos)
    length = (ids.shape[1] - start) // 2
    yield Progress(0.05, "building the first two blocks")
    model = two_blocks(layer, l1)
    prev = np.zeros((2, layer.n_heads))
    ind = np.zeros((2, layer.n_heads))
    for a in range(0, len(ids), batch):
        part = ids[a:a + batch]
        for k, att in enumerate(attentions(model, part)):
            p, q = scores(att, start, length)
            prev[k] += p * len(part)
            ind[k] += q * len(part)
        yield Progress(0.1 + 0.9 * min(1.0, (a + batch) / len(ids)),
                       f"forward pass: {min(a + batch, len(ids))} of {len(ids)} sequences")
    n = len(ids)
    return Behaviour(prev / n, ind / n, n, length, int(seed),
                     int(ids[0, 0]) if start else None, l1.attention_label)


def behaviour_job(layer, sequences: int = DEFAULT_SEQUENCES, length: int | None = None,
                  seed: int = 0, prepend_bos: bool = True) -> Job[Behaviour]:
    """Generator job: block 1 (`layer1_job`), then `measure`; kept on the layer per
    choice of sequences, length, seed and BOS."""
    n, length_, _, _ = check_choices(layer, sequences, length, seed, prepend_bos)
    key = (CACHE_KEY, n, length_, int(seed), bool(prepend_bos))
    return layer.cached_job(key, lambda: _behaviour_steps(layer, sequences, length, seed,
                                                          prepend_bos))


def _behaviour_steps(layer, sequences, length, seed, prepend_bos) -> Job[Behaviour]:
    l1 = yield from rescaled(layer1_job(layer), 0.0, 0.5)
    return (yield from rescaled(measure(layer, l1, sequences, length, seed, prepend_bos),
                                0.5, 1.0))
