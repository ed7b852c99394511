"""Train a small GPT-2-architecture model on the packaged sample corpus, on a CPU, saving
checkpoints at log-spaced steps: a real training series for `detokgui export series` and
the Training series view (issue 20).

    python3 scripts/train_series.py --out /tmp/series-run --minutes 15
    python3 scripts/train_series.py --out /tmp/tiny --steps 8 --d 32 --heads 4 --layers 1

The model is `GPT2LMHeadModel` (tied embeddings, the real GPT-2 tokenizer, V = 50,257),
by default d = 128, 8 heads, 2 layers, 128 positions, like the demo model. Two tricks make
layer 0 learn within minutes on a CPU (the demo model's card describes the same):

- sampled softmax: the loss of a batch is the cross-entropy over a shared candidate set
  C = (the batch's target tokens) u (`--sampled` random tokens), logits h W_E[C]^T, so a
  step costs O(|C| d) per position instead of O(V d);
- the position embedding W_pos learns at `--pos-lr-mult` times the learning rate.

Checkpoints go to OUT/step-XXXXXX (save_pretrained: safetensors + config + tokenizer),
each written to a temporary folder and renamed, at steps 0, 1, 2, 4, 8, 12, 16, 24, 32,
48, ... (2^k and 3 * 2^(k-1)) and at the last step. OUT/train_log.json gets, per saved
step, the training loss, the held-out loss (full softmax) and each layer-0 head's
attention share on the previous token and on the last 4 positions, measured on held-out
windows. Seeded: the same arguments give the same checkpoints.

    python3 scripts/train_series.py --out /tmp/series-run --resume --minutes 30

`--resume` continues from the newest OUT/step-XXXXXX: the weights (and the architecture)
come from that checkpoint and the step numbering continues; the optimizer is a FRESH
AdamW (its moments were not saved) with a short linear warm-up (`--warmup` steps, from
1/warmup of the learning rate); batch, learning rate, schedule, etc. default to the
previous run's values in train_log.json. `--steps` and `--minutes` count this run only.
Checkpoints keep their log spacing, every ~1.25x steps (5,000, 6,250, ... after 4,000),
and the last step is always saved. train_log.json keeps the earlier entries and records
each resume under "resumes" (start step, fresh optimizer, warm-up, hyper-parameters).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from detokgui.core.base.atomic import atomic_folder, atomic_open
from detokgui.core.model.sources.demo import sample_corpus
from detokgui.core.model.tokens import gpt2_tokenizer


def save_steps(limit: int) -> list[int]:
    """0, 1, 2, 4, 8, 12, 16, 24, 32, 48, ...: 2^k and 3 * 2^(k-1), up to `limit`."""
    steps = {0, 1, 2}
    k = 2
    while 2**k <= limit:
        steps.add(2**k)
        steps.add(3 * 2 ** (k - 1))
        k += 1
    return sorted(s for s in steps if s <= limit)


def resume_save_steps(start: int, limit: int, ratio: float = 1.25) -> list[int]:
    """Log-spaced steps after `start` for a resumed run: round(start * ratio^k), k >= 1,
    up to `limit` (start 0 falls back to `save_steps`)."""
    if start <= 0:
        return save_steps(limit)
    steps, k = set(), 1
    while round(start * ratio**k) <= limit:
        steps.add(round(start * ratio**k))
        k += 1
    return sorted(steps)


def newest_checkpoint(out: Path) -> tuple[int, Path] | None:
    """(step, folder) of the highest complete OUT/step-XXXXXX, or None."""
    found = []
    for f in out.glob("step-*"):
        tail = f.name[len("step-"):]
        if f.is_dir() and tail.isdigit() and (f / "config.json").is_file():
            found.append((int(tail), f))
    return max(found) if found else None


def step_folder(out: Path, step: int) -> Path:
    return out / f"step-{step:06d}"


def read_tokens(corpus: Path, tokenizer, max_chars: int | None) -> np.ndarray:
    """The corpus's documents tokenised and joined, <|endoftext|> between documents."""
    eos = tokenizer.eos_token_id
    texts, n = [], 0
    with gzip.open(corpus, "rt", encoding="utf-8") as f:
        for line in f:
            text = json.loads(line)["text"]
            texts.append(text)
            n += len(text)
            if max_chars is not None and n >= max_chars:
                break
    pieces = []
    for ids in tokenizer(texts)["input_ids"]:
        pieces.extend(ids)
        pieces.append(eos)
    return np.asarray(pieces, dtype=np.int64)


def layer0_attention(model, ids: torch.Tensor) -> torch.Tensor:
    """Layer 0's attention A[b, h, i, j] = softmax_j((q_i . k_j) / sqrt(d') + causal mask)
    of the embeddings x = W_E[t] + W_pos[i] through ln_1 and c_attn."""
    tr = model.transformer
    blk = tr.h[0]
    n = ids.shape[1]
    x = tr.wte(ids) + tr.wpe(torch.arange(n))
    q, k, _ = blk.attn.c_attn(blk.ln_1(x)).split(model.config.n_embd, dim=-1)
    heads = model.config.n_head
    dh = model.config.n_embd // heads
    q = q.view(ids.shape[0], n, heads, dh).transpose(1, 2)
    k = k.view(ids.shape[0], n, heads, dh).transpose(1, 2)
    scores = q @ k.transpose(-1, -2) / math.sqrt(dh)
    mask = torch.ones(n, n, dtype=torch.bool).tril()
    return scores.masked_fill(~mask, float("-inf")).softmax(-1)


@torch.no_grad()
def measure(model, val: np.ndarray, ctx: int, n_windows: int = 8) -> dict:
    """Held-out loss (full softmax) and layer-0 previous-token / recent-4 attention shares
    per head, averaged over query positions 4..ctx-1 of `n_windows` fixed windows."""
    model.eval()
    starts = np.linspace(0, len(val) - ctx - 1, n_windows).astype(np.int64)
    ids = torch.from_numpy(np.stack([val[s:s + ctx] for s in starts]))
    tgt = torch.from_numpy(np.stack([val[s + 1:s + ctx + 1] for s in starts]))
    logits = model(input_ids=ids).logits
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             tgt.reshape(-1)).item()
    att = layer0_attention(model, ids)[:, :, 4:, :]  # queries with 4 earlier positions
    i = torch.arange(4, ctx)
    prev = att[:, :, torch.arange(len(i)), i - 1].mean(dim=(0, 2))
    recent = sum(att[:, :, torch.arange(len(i)), i - r] for r in range(4)).mean(dim=(0, 2))
    model.train()
    return {"val_loss": round(loss, 4), "prev": [round(v, 4) for v in prev.tolist()],
            "recent4": [round(v, 4) for v in recent.tolist()]}


def save(model, tokenizer, folder: Path, step: int, half: bool) -> None:
    if folder.exists():
        return
    with atomic_folder(folder) as tmp:
        if half:
            state = {k: v.half() for k, v in model.state_dict().items()}
            model.save_pretrained(tmp, state_dict=state, safe_serialization=True)
        else:
            model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        (tmp / "training_step.json").write_text(json.dumps({"step": step}) + "\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, type=Path, help="series folder (step-* inside)")
    p.add_argument("--minutes", type=float, default=None, help="stop after this long")
    p.add_argument("--steps", type=int, default=None, help="stop after this many steps")
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--ctx", type=int, default=128)
    p.add_argument("--batch", type=int, default=None, help="default 16")
    p.add_argument("--lr", type=float, default=None, help="default 2.5e-3")
    p.add_argument("--pos-lr-mult", type=float, default=None, help="default 5")
    p.add_argument("--warmup", type=int, default=50,
                   help="linear warm-up steps (also after --resume, for the fresh optimizer)")
    p.add_argument("--schedule", choices=("cosine", "constant"), default=None,
                   help="learning rate after the warm-up: cosine decay to 0.1x over the run "
                        "(--steps or --minutes, whichever ends first), or constant; default cosine")
    p.add_argument("--sampled", type=int, default=None, help="random negatives per step (default 2048)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-chars", type=int, default=None, help="read only this much text")
    p.add_argument("--threads", type=int, default=None, help="torch threads")
    p.add_argument("--half", action="store_true", help="save float16 weights")
    p.add_argument("--resume", action="store_true",
                   help="continue from the newest OUT/step-* (its weights; steps continue; a "
                        "fresh AdamW with --warmup steps of warm-up; other settings default "
                        "to OUT/train_log.json's)")
    args = p.parse_args(argv)
    if args.minutes is None and args.steps is None:
        p.error("give --minutes or --steps (or both)")
    return args


TRAIN_DEFAULTS = {"batch": 16, "lr": 2.5e-3, "pos_lr_mult": 5.0, "schedule": "cosine",
                  "sampled": 2048}


def train(args: argparse.Namespace) -> dict:
    from transformers import GPT2Config, GPT2LMHeadModel

    out: Path = args.out
    previous: dict = {}
    start = 0
    resume_from = None
    if args.resume:
        newest = newest_checkpoint(out)
        if newest is None:
            raise SystemExit(f"--resume: no step-* checkpoint in {out}")
        start, resume_from = newest
        if (out / "train_log.json").is_file():
            previous = json.loads((out / "train_log.json").read_text())
    for key, default in TRAIN_DEFAULTS.items():
        if getattr(args, key) is None:
            setattr(args, key, previous.get(key, default))

    if args.threads:
        torch.set_num_threads(args.threads)
    # a resumed run draws new batches: the generators are seeded with (seed, start step)
    torch.manual_seed(args.seed if start == 0 else args.seed * 1_000_003 + start)
    rng = np.random.default_rng(args.seed if start == 0 else [args.seed, start])
    tokenizer = gpt2_tokenizer()
    tokens = read_tokens(sample_corpus(), tokenizer, args.max_chars)
    n_val = max(len(tokens) // 20, args.ctx * 20)
    train_tok, val_tok = tokens[:-n_val], tokens[-n_val:]
    config = GPT2Config(n_embd=args.d, n_head=args.heads, n_layer=args.layers,
                        n_positions=args.ctx, vocab_size=len(tokenizer),
                        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id)
    if resume_from is not None:
        model = GPT2LMHeadModel.from_pretrained(resume_from, dtype=torch.float32)
        config = model.config
        args.d, args.heads, args.layers = config.n_embd, config.n_head, config.n_layer
        args.ctx = min(args.ctx, config.n_positions)
    else:
        model = GPT2LMHeadModel(config)
    model.train()
    tr = model.transformer
    pos = [tr.wpe.weight]
    decay = [p for n, p in model.named_parameters()
             if p.dim() == 2 and p is not tr.wpe.weight and not n.startswith("lm_head")]
    other = [p for n, p in model.named_parameters()
             if p.dim() < 2 and not n.startswith("lm_head")]
    groups = [{"params": decay, "weight_decay": 0.01, "mult": 1.0},
              {"params": other, "weight_decay": 0.0, "mult": 1.0},
              {"params": pos, "weight_decay": 0.0, "mult": args.pos_lr_mult}]
    opt = torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.98))
    limit = args.steps if args.steps is not None else 10**9
    budget = args.minutes * 60 if args.minutes is not None else float("inf")
    planned = {start + s for s in save_steps(limit)} if start == 0 else \
        set(resume_save_steps(start, start + limit))
    log: list[dict] = [e for e in previous.get("log", []) if e["step"] <= start]
    seconds0 = float(previous.get("train_seconds", 0.0)) if start else 0.0
    out.mkdir(parents=True, exist_ok=True)

    def checkpoint(step: int, train_loss: float | None) -> None:
        entry = {"step": step, "train_loss": train_loss,
                 "s": round(seconds0 + time.time() - t0, 1)}
        entry.update(measure(model, val_tok, args.ctx))
        save(model, tokenizer, step_folder(out, step), step, args.half)
        log.append(entry)
        print(json.dumps(entry), flush=True)

    t0 = time.time()
    step, loss_avg = start, None
    if start == 0:
        checkpoint(0, None)
    while step < start + limit:
        elapsed = time.time() - t0
        if elapsed >= budget:
            break
        progress = max((step - start) / limit, elapsed / budget)
        decay = (0.1 + 0.45 * (1 + math.cos(math.pi * min(progress, 1.0)))
                 if args.schedule == "cosine" else 1.0)
        lr = args.lr * min(1.0, (step - start + 1) / max(args.warmup, 1)) * decay
        for g in opt.param_groups:
            g["lr"] = lr * g["mult"]
        starts = rng.integers(0, len(train_tok) - args.ctx - 1, size=args.batch)
        ids = torch.from_numpy(np.stack([train_tok[s:s + args.ctx] for s in starts]))
        tgt = torch.from_numpy(np.stack([train_tok[s + 1:s + args.ctx + 1] for s in starts]))
        negatives = torch.from_numpy(rng.integers(0, config.vocab_size, size=args.sampled))
        cand, inverse = torch.unique(torch.cat([tgt.reshape(-1), negatives]), return_inverse=True)
        h = tr(input_ids=ids).last_hidden_state  # after ln_f
        logits = h.reshape(-1, args.d) @ tr.wte.weight[cand].T
        loss = torch.nn.functional.cross_entropy(logits, inverse[: tgt.numel()])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        loss_avg = loss.item() if loss_avg is None else 0.95 * loss_avg + 0.05 * loss.item()
        if step in planned:
            checkpoint(step, round(loss_avg, 4))
    if step not in planned and step != start:
        checkpoint(step, round(loss_avg, 4) if loss_avg is not None else None)
    record = {"d": args.d, "heads": args.heads, "layers": args.layers, "ctx": args.ctx,
              "batch": args.batch, "lr": args.lr, "pos_lr_mult": args.pos_lr_mult,
              "warmup": args.warmup, "schedule": args.schedule, "sampled": args.sampled, "seed": args.seed,
              "steps": step, "train_tokens": len(train_tok), "val_tokens": len(val_tok),
              "train_seconds": round(seconds0 + time.time() - t0, 1), "log": log}
    resumes = list(previous.get("resumes", [])) if start else []
    if start:
        resumes.append({"from_step": start, "to_step": step, "optimizer": "fresh AdamW",
                        "warmup": args.warmup, "batch": args.batch, "lr": args.lr,
                        "pos_lr_mult": args.pos_lr_mult, "schedule": args.schedule,
                        "seconds": round(time.time() - t0, 1)})
        record["resumes"] = resumes
    with atomic_open(out / "train_log.json") as f:
        json.dump(record, f, indent=1)
    return record


def main(argv: list[str] | None = None) -> int:
    train(parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
