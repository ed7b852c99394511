"""Build the induction test model (tests/data/induction_model): a 2-layer GPT-2-architecture
model over 16 letters whose layer 0 has a previous-token head and whose layer 1 has an
induction head that K-composes with it (the circuit of Elhage et al. 2021 and Olsson et
al. 2022), to check `detokgui export composition` and the Layer 1 page against a model that
has one (the demo model has none).

    python scripts/train_induction_model.py --out tests/data/induction_model

Trained from scratch on a CPU, this tiny model stays on its loss plateau for thousands of
steps without forming the circuit, so the circuit is written into its initial weights and
the model is then trained:

- the residual stream's dimensions: 0-15 the letter (one-hot), 16 BOS, 17-28 the position
  (6 sine/cosine pairs), 29-44 the previous letter (written by layer 0), 45-60 the letter
  to predict (written by layer 1);
- layer 0, head PREVIOUS_HEAD: its query reads position i, its key position j rotated by one
  step, so that it attends to j = i - 1; its value reads the letter and its output writes
  it into dims 29-44;
- layer 1, head INDUCTION_HEAD: its query reads the letter at i, its key the previous letter
  at j (dims 29-44): it attends to the j whose previous letter is the letter at i; its
  value reads the letter at j and writes it into dims 45-60, which the (untied) output
  layer reads;
- every other head, both MLPs and the LayerNorms keep transformers' random initialisation.

Training (AdamW, all parameters) then runs on sequences [BOS] r r of 4-31 random letters
r (the rest of the 64 positions random letters), the data the circuit predicts. The
script measures the circuit with detokgui before and after and writes it, with the loss
curve, to train_log.json.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch

ALPHABET = "abcdefghijklmnop"
BOS = "<|endoftext|>"
N_POSITIONS = 64
D = 64
CONFIG = {"n_layer": 2, "n_head": 4, "n_embd": D, "n_inner": 64, "n_positions": N_POSITIONS,
          "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
          "tie_word_embeddings": False}
PREVIOUS_HEAD = 1  # layer 0
INDUCTION_HEAD = 2  # layer 1
LETTER, BOS_DIM, POSITION, PREVIOUS, OUTPUT = (slice(0, 16), 16, slice(17, 29),
                                               slice(29, 45), slice(45, 61))
PERIODS = (4.0, 7.0, 12.0, 21.0, 37.0, 64.0)  # of the position code's sine/cosine pairs


def tokenizer():
    """A character tokenizer: one token per letter of ALPHABET, then <|endoftext|> (BOS and
    EOS, as GPT-2's); transformers' fast tokenizer around a `tokenizers` WordLevel model
    that splits text into characters."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(ALPHABET)}
    vocab[BOS] = len(ALPHABET)
    tok = Tokenizer(models.WordLevel(vocab, unk_token=BOS))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens([BOS])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=BOS,
                                   unk_token=BOS, model_max_length=N_POSITIONS)


def head_columns(head: int, part: int) -> slice:
    """The columns of c_attn (Conv1D, [d, 3d]) of one head's query (part 0), key (1) or
    value (2)."""
    dh = D // CONFIG["n_head"]
    return slice(part * D + head * dh, part * D + (head + 1) * dh)


def write_circuit(model, strength: float = 1.0) -> None:
    """The circuit of the module docstring, written into `model`'s weights."""
    t = model.transformer
    n_letters = len(ALPHABET)
    dh = D // CONFIG["n_head"]
    with torch.no_grad():
        t.wte.weight.zero_()
        t.wte.weight[:n_letters, LETTER] = 4.0 * torch.eye(n_letters)
        t.wte.weight[n_letters, BOS_DIM] = 4.0
        t.wpe.weight.zero_()
        j = torch.arange(N_POSITIONS, dtype=torch.float32)
        pos0 = POSITION.start
        for k, period in enumerate(PERIODS):
            w = 2 * math.pi / period
            t.wpe.weight[:, pos0 + 2 * k] = 2.0 * torch.cos(w * j)
            t.wpe.weight[:, pos0 + 2 * k + 1] = 2.0 * torch.sin(w * j)

        # layer 0: previous-token head
        W = t.h[0].attn.c_attn.weight
        q, k, v = (head_columns(PREVIOUS_HEAD, p) for p in range(3))
        for c in (q, k, v):
            W[:, c] = 0.0
            t.h[0].attn.c_attn.bias[c] = 0.0
        s = 1.6 * strength
        for m, period in enumerate(PERIODS):
            w = 2 * math.pi / period
            a, b = pos0 + 2 * m, pos0 + 2 * m + 1
            W[a, q.start + 2 * m] = s
            W[b, q.start + 2 * m + 1] = s
            # the key of position j is the code of j + 1: q_i . k_j peaks at j = i - 1
            W[a, k.start + 2 * m] = s * math.cos(w)
            W[b, k.start + 2 * m] = -s * math.sin(w)
            W[a, k.start + 2 * m + 1] = s * math.sin(w)
            W[b, k.start + 2 * m + 1] = s * math.cos(w)
        W[LETTER, v] = torch.eye(n_letters)[:, :dh]
        O = t.h[0].attn.c_proj.weight  # [d, d], rows: the heads' values
        O[v.start - 2 * D:v.stop - 2 * D, :] = 0.0
        O[v.start - 2 * D:v.stop - 2 * D, PREVIOUS] = 3.0 * torch.eye(dh)

        # layer 1: induction head
        W = t.h[1].attn.c_attn.weight
        q, k, v = (head_columns(INDUCTION_HEAD, p) for p in range(3))
        for c in (q, k, v):
            W[:, c] = 0.0
            t.h[1].attn.c_attn.bias[c] = 0.0
        W[LETTER, q] = 2.0 * strength * torch.eye(n_letters)[:, :dh]
        W[PREVIOUS, k] = 2.0 * strength * torch.eye(dh)
        W[LETTER, v] = torch.eye(n_letters)[:, :dh]
        O = t.h[1].attn.c_proj.weight
        O[v.start - 2 * D:v.stop - 2 * D, :] = 0.0
        O[v.start - 2 * D:v.stop - 2 * D, OUTPUT] = 3.0 * torch.eye(dh)

        # the MLPs write nothing at first; the output layer reads the predicted letter
        for blk in t.h:
            blk.mlp.c_proj.weight.zero_()
            blk.mlp.c_proj.bias.zero_()
        model.lm_head.weight.zero_()
        model.lm_head.weight[:n_letters, OUTPUT] = 2.0 * torch.eye(n_letters)


def batch(g: torch.Generator, size: int, vocab: int, bos: int) -> torch.Tensor:
    """[size, N_POSITIONS] training sequences: [BOS] r r, r of 4-31 random letters, then
    random letters."""
    out = torch.randint(0, vocab, (size, N_POSITIONS), generator=g)
    for row in out:
        n = int(torch.randint(4, (N_POSITIONS - 1) // 2 + 1, (), generator=g))
        r = torch.randint(0, vocab, (n,), generator=g)
        row[0] = bos
        row[1:1 + n] = r
        row[1 + n:1 + 2 * n] = r
    return out


def build(steps: int, seed: int, batch_size: int, lr: float, log_every: int = 50):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.set_num_threads(1)  # a tiny model: more threads only contend
    tok = tokenizer()
    vocab, bos = len(ALPHABET), tok.bos_token_id
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(tok), bos_token_id=bos, eos_token_id=bos, **CONFIG)
    config._attn_implementation = "eager"
    model = GPT2LMHeadModel(config)
    write_circuit(model)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    g = torch.Generator().manual_seed(seed + 1)
    log, start = [], time.perf_counter()
    for step in range(steps + 1):
        ids = batch(g, batch_size, vocab, bos)
        loss = model(input_ids=ids, labels=ids).loss
        if step % log_every == 0 or step == steps:
            log.append({"step": step, "loss": round(loss.item(), 4),
                        "seconds": round(time.perf_counter() - start, 1)})
            print(log[-1], flush=True)
        if step == steps:
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval(), tok, log


def measure(folder: Path) -> dict:
    """The circuit as detokgui finds it in the saved model: the heads with the highest
    previous-token and induction scores, and the K-composition partner of the induction
    head."""
    from detokgui.core import Layer0
    from detokgui.core.base.progress import run
    from detokgui.core.composition.behaviour import behaviour_job
    from detokgui.core.composition.scores import composition_job

    layer = Layer0.from_pretrained(str(folder), device="cpu")
    comp = run(composition_job(layer))
    beh = run(behaviour_job(layer))
    ind, prev = beh.induction_head(), beh.previous_token_head()
    return {
        "induction_head": ind, "induction_score": round(float(beh.induction[1, ind]), 4),
        "previous_token_head": prev,
        "previous_token_score": round(float(beh.previous_token[0, prev]), 4),
        "k_composition_partner": comp.partner("K", ind),
        "k_composition": round(float(comp.of("K")[prev, ind]), 4),
        "baseline_hi": round(comp.baseline_hi, 4),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("tests/data/induction_model"))
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    model, tok, log = build(args.steps, args.seed, args.batch, args.lr)
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out, safe_serialization=True)
    tok.save_pretrained(args.out)
    summary = measure(args.out)
    print(summary)
    (args.out / "train_log.json").write_text(json.dumps(
        {"config": CONFIG, "alphabet": ALPHABET, "previous_head": PREVIOUS_HEAD,
         "induction_head": INDUCTION_HEAD, "steps": args.steps, "batch": args.batch,
         "lr": args.lr, "seed": args.seed, "log": log, "result": summary},
        indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
