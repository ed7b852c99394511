"""Attention sinks in layer 0 (docs/sinks.md, docs/math/text-side.md#attention-sinks): how
much every head attends to key position 0 (the first token of a text, or the BOS token
prepended to it), and which of the six terms makes position 0 win.

For a text t_0..t_{n-1}, head h and query position i >= 1, with s_{i,j} the sum of the six
terms (`core.model.terms`: T_ee, T_pp, T_pe, T_ep, T_e, T_p) and tau the model's temperature:

    alpha_{i,0}  = softmax_{j<=i}(s_{i,j} / tau)_0          the attention to position 0
    w_{i,j}      = softmax_{1<=j<=i}(s_{i,j} / tau)         the attention among the other
                 = alpha_{i,j} / (1 - alpha_{i,0})           keys, renormalised (j >= 1)
    A^X_i        = T_X[i, 0] - sum_{1<=j<=i} w_{i,j} T_X[i, j]
                                                             term X's logit advantage
    A_i          = sum_X A^X_i = s_{i,0} - sum_j w_{i,j} s_{i,j}

The six A^X_i sum to the logit advantage A_i of position 0 over the attention-weighted
mean of the other keys, so each says how many logits of position 0's lead its term gives.
A_i ties to the attention itself through the entropy H(w_i) of the other keys' weights:

    tau * log(alpha_{i,0} / (1 - alpha_{i,0})) = A_i - tau * H(w_i)

(log sum_j exp(s_j / tau) = sum_j w_j s_j / tau + H(w)), so position 0 is a sink
(alpha_{i,0} > 1/2) exactly when A_i > tau H(w_i). i = 0 has no other key: it is left out.

The weighted means never form the [n, n] terms: with the rank-d' factors of
`terms.term_factors` (qe, qp, ke, kp, te, tp) and W = w as a matrix,
sum_j w_ij T_ee[i, j] = qe_i . (W ke)_i, and likewise for the other pairs, so a block of
query rows costs the scores (one [rows, keys] product per head) and four [rows, keys] x
[keys, d'] products.

"Texts" are the corpus windows of a `TextSource`, or `SampleTexts`: seeded sequences of
tokens drawn from `sample.random_token_sample` (a weights-only view of the same question
without a corpus). `iter_sinks` averages over texts per query position (the texts longer
than i) and per head over every (text, i >= 1); `SinkProfile.sink_term` names the term with
the largest mean advantage: the one that makes the sink.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from detokgui.core.base.checks import as_int, check_count, check_heads
from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import Job, Progress, run
from detokgui.core.model.sample import random_token_sample
from detokgui.core.model.terms import TERM_NAMES, term_factors
from detokgui.core.model.tokens import bos_id
from detokgui.core.text_side.empirical import TextSource

#: Query rows per block of `sink_split`: the scores of a block are [heads, rows, keys].
SINK_BLOCK_ROWS = 128
#: How many distinct tokens `SampleTexts` draws its sequences from (at most the vocabulary).
SAMPLE_POOL = 4096


@dataclass
class SinkSplit:
    """`sink_split` of one text, for the heads `heads` (first axis), query positions
    0..n-1 (last axis): attention [h, n] = alpha_{i,0}; advantage [h, 6, n] = A^X_i in
    TERM_NAMES order (NaN at i = 0, which has no other key); entropy [h, n] = H(w_i) in
    nats (NaN at i = 0)."""

    heads: list[int]
    attention: torch.Tensor
    advantage: torch.Tensor
    entropy: torch.Tensor

    @property
    def total(self) -> torch.Tensor:
        """A_i = the sum of the six advantages, [h, n]."""
        return self.advantage.sum(1)


@torch.no_grad()
def sink_split(layer, token_ids, heads=None) -> SinkSplit:
    """The attention to position 0 and its logit advantage split into the six terms, for
    every query position of one text (see the module docstring for the formulas). Exact:
    the attention is softmax(sum of the six terms / tau), which equals the model's own."""
    ids = layer.check_token_ids(token_ids)
    hs = check_heads(layer, heads)
    n, H = ids.shape[0], len(hs)
    tau = float(layer.temperature)
    f = term_factors(layer, ids, hs)
    dt, dev = f.qe.dtype, f.qe.device
    attention = torch.ones(H, n, dtype=dt, device=dev)
    advantage = torch.full((H, len(TERM_NAMES), n), torch.nan, dtype=dt, device=dev)
    entropy = torch.full((H, n), torch.nan, dtype=dt, device=dev)
    at0 = [f.qe @ f.ke[:, 0, :, None], f.qp @ f.kp[:, 0, :, None],  # T_X[i, 0], [h, n, 1]
           f.qp @ f.ke[:, 0, :, None], f.qe @ f.kp[:, 0, :, None]]
    for a in range(1, n, SINK_BLOCK_ROWS):
        b = min(n, a + SINK_BLOCK_ROWS)
        rows = slice(a, b)
        s = sum(f.block(None, rows, slice(0, b)))  # [h, rows, b]
        s = s / tau
        s.masked_fill_(torch.ones(b - a, b, dtype=torch.bool, device=dev)
                       .triu_(a + 1), -torch.inf)
        attention[:, rows] = torch.softmax(s, -1)[..., 0]
        w = torch.softmax(s[..., 1:], -1)  # [h, rows, b-1], zero above i
        logw = torch.log_softmax(s[..., 1:], -1)
        entropy[:, rows] = -(w * torch.where(w > 0, logw, 0)).sum(-1)
        wke = torch.bmm(w, f.ke[:, 1:b])  # [h, rows, d']
        wkp = torch.bmm(w, f.kp[:, 1:b])
        qe, qp = f.qe[:, rows], f.qp[:, rows]
        means = [(qe * wke).sum(-1), (qp * wkp).sum(-1), (qp * wke).sum(-1),
                 (qe * wkp).sum(-1), torch.bmm(w, f.te[:, 1:b, None])[..., 0],
                 torch.bmm(w, f.tp[:, 1:b, None])[..., 0]]
        firsts = [t[:, rows, 0] for t in at0] + [f.te[:, None, 0], f.tp[:, None, 0]]
        for x, (first, mean) in enumerate(zip(firsts, means)):
            advantage[:, x, rows] = first - mean
    return SinkSplit(heads=hs, attention=attention, advantage=advantage, entropy=entropy)


# --------------------------------------------------------------------------- texts


@dataclass(frozen=True)
class SampleTexts:
    """`n_texts` sequences of `length` tokens (at most the model's n_positions), drawn
    with a generator seeded by `seed` from the `SAMPLE_POOL` tokens of
    `sample.random_token_sample(layer, SAMPLE_POOL, seed)` (the same seed, the same texts);
    with `prepend_bos` each starts with the model's BOS token (`tokens.bos_id`) and holds
    length - 1 sampled tokens after it."""

    n_texts: int = 16
    length: int = 128
    seed: int = 0
    prepend_bos: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_texts", check_count(self.n_texts, "number of texts"))
        object.__setattr__(self, "length", check_count(self.length, "text length", lo=2))
        object.__setattr__(self, "seed", as_int(self.seed, "seed"))
        object.__setattr__(self, "prepend_bos", bool(self.prepend_bos))

    def windows(self, layer) -> list[list[int]]:
        """The token lists (InputError when BOS is asked for and the model has none)."""
        length = min(self.length, layer.n_positions)
        pool = torch.tensor(random_token_sample(layer, SAMPLE_POOL, self.seed))
        g = torch.Generator().manual_seed(self.seed)
        first = []
        if self.prepend_bos:
            bos = bos_id(layer.tokenizer)
            if bos is None:
                raise InputError("This model's tokenizer has neither a BOS nor an EOS token "
                                 "to prepend.")
            first = [bos]
        k = length - len(first)
        picks = torch.randint(0, pool.numel(), (self.n_texts, k), generator=g)
        return [first + pool[row].tolist() for row in picks]

    def label(self) -> str:
        bos = ", BOS prepended" if self.prepend_bos else ""
        return (f"{self.n_texts} random sequences of {self.length} tokens from a "
                f"{SAMPLE_POOL}-token sample (seed {self.seed}){bos}")

    def iterate(self, layer) -> Iterator[tuple[torch.Tensor, float]]:
        """(token ids, fraction done) per text, as `TextSource.iterate`."""
        wins = self.windows(layer)
        yield from TextSource.tokens(wins).iterate(layer)


def texts_have_bos(texts) -> bool:
    """Whether position 0 of every text is the model's BOS token (prepended)."""
    return bool(getattr(texts, "prepend_bos", False))


# --------------------------------------------------------------------------- over texts


@dataclass
class SinkProfile:
    """Attention sinks averaged over texts, for the heads `heads` (first axis).

    Per query position i (last axis, 0..n-1 for the longest text; texts[i] = how many texts
    are longer than i, the texts each mean is over): attention [h, n] = mean alpha_{i,0}
    (1 at i = 0); advantage [h, 6, n] = mean A^X_i (TERM_NAMES order) and entropy [h, n] =
    mean H(w_i), both NaN at i = 0. Per head, over every (text, i >= 1): head_attention [h], head_advantage [h, 6];
    `uniform` = the mean of 1/(i+1) over the same pairs, what head_attention would be if
    every key had the same weight (the baseline a sink stands out from). `bos`: position 0
    is the prepended BOS token; `source` says which texts."""

    heads: list[int]
    terms: tuple[str, ...]
    attention: np.ndarray
    advantage: np.ndarray
    entropy: np.ndarray
    texts: np.ndarray
    n_texts: int
    head_attention: np.ndarray
    head_advantage: np.ndarray
    uniform: float
    bos: bool
    source: str
    temperature: float

    @property
    def n(self) -> int:
        return int(self.attention.shape[-1])

    @property
    def total(self) -> np.ndarray:
        """Mean A_i per head and position, [h, n]."""
        return self.advantage.sum(1)

    def sink_term(self, head: int) -> str:
        """The term with the largest mean advantage of `head` over every (text, i): the one
        that makes position 0 win (when the total is positive)."""
        r = self.heads.index(int(head))
        return self.terms[int(np.argmax(self.head_advantage[r]))]

    def position_terms(self) -> np.ndarray:
        """The sink term per head and query position, [h, n] of indices into `terms`
        (-1 where no text reaches i, and at i = 0)."""
        adv = self.advantage
        out = np.full(adv[:, 0].shape, -1, dtype=np.int64)
        ok = ~np.isnan(adv).any(1)
        out[ok] = np.argmax(np.where(np.isnan(adv), -np.inf, adv), 1)[ok]
        return out


@torch.no_grad()
def iter_sinks(layer, texts, heads=None) -> Job[SinkProfile]:
    """Generator job (Progress per text) returning the `SinkProfile` of `texts` (a
    `TextSource` or `SampleTexts`); InputError when no text has two tokens or more."""
    hs = check_heads(layer, heads)
    L = layer.n_positions
    T = len(TERM_NAMES)
    att = torch.zeros(len(hs), L, dtype=torch.float64)
    adv = torch.zeros(len(hs), T, L, dtype=torch.float64)
    ent = torch.zeros(len(hs), L, dtype=torch.float64)
    counts = torch.zeros(L, dtype=torch.long)
    n_texts = 0
    for ids, frac in texts.iterate(layer):
        n_texts += 1
        n = ids.shape[0]
        if n >= 2:
            sp = sink_split(layer, ids, hs)
            att[:, :n] += sp.attention.double().cpu()
            adv[..., 1:n] += sp.advantage[..., 1:].double().cpu()
            ent[:, 1:n] += sp.entropy[:, 1:].double().cpu()
            counts[:n] += 1
        yield Progress(frac, f"attention sinks: {n_texts} texts")
    if int(counts[1]) == 0:
        what = "holds no text" if n_texts == 0 else "has no text of two tokens or more"
        raise InputError(f"The corpus {what}; a sink needs a query after position 0.")
    n = int((counts > 0).sum())
    k = counts[:n].double()
    reached = k.clamp_min(1)
    attention = (att[:, :n] / reached).numpy()
    advantage = (adv[..., :n] / reached).numpy()
    entropy = (ent[:, :n] / reached).numpy()
    advantage[..., 0] = np.nan
    entropy[:, 0] = np.nan
    pairs = float(k[1:].sum())  # (text, i >= 1) pairs
    return SinkProfile(
        heads=hs, terms=TERM_NAMES, attention=attention, advantage=advantage,
        entropy=entropy, texts=counts[:n].numpy(), n_texts=n_texts,
        head_attention=(att[:, 1:n].sum(-1) / pairs).numpy(),
        head_advantage=(adv[..., 1:n].sum(-1) / pairs).numpy(),
        uniform=float((k[1:] / torch.arange(2, n + 1)).sum() / pairs),
        bos=texts_have_bos(texts), source=texts.label(),
        temperature=float(layer.temperature))


def sinks(layer, texts, heads=None) -> SinkProfile:
    """`iter_sinks` run to completion."""
    return run(iter_sinks(layer, texts, heads))
