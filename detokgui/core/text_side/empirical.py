"""Layer 0 on real text (docs/math/text-side.md): the model's own attention next to the six terms,
the empirical attention at a query position averaged over texts, and each term's
contribution measured by KL divergence.

Notation: docs/math/notation.md; for a token sequence t_0..t_{n-1}, head h, query i, key j <= i,
s = T_ee + T_pp + T_pe + T_ep + T_e + T_p (the six terms of `core.model.terms`) and
alpha_{i,j,h} = softmax_{j<=i}(s / tau), tau = `Layer0.temperature` (sqrt(d'), or 1 for
a model that does not scale its scores, e.g. GPT-Neo).

The model's own attention (`forward`) is computed independently of the decomposition,
from the RAW checkpoint tensors the way GPT-2 does it:
    x = E[t] + P[:n];  u = ln_1(x);  [q | k | v] = u W_attn + b_attn  (split into heads)
    alpha = softmax_{j<=i}(q_i k_j^T / tau);  z = alpha v;  a = z W_O + b_O
    r = x + a;  m = ln_2(r) W_fc + b_fc   (the MLP pre-activation)

"Texts" (C2, C3, C5) are the windows of a corpus (`core.corpus.documents.corpus_windows`: one
document cut into consecutive windows of at most n_positions tokens, nothing prepended
unless asked), or token lists given directly; `TextSource` names either.

Long computations over texts are generator jobs (`core.base.progress`): they yield Progress
after every text, so a caller can stop them between texts, and return small dataclasses
of numpy arrays (float64 for averages) ready to draw or to write as CSV.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from detokgui.core.base.checks import as_int, check_choice, check_heads, check_position
from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import Job, Progress, rescaled, run
from detokgui.core.corpus.documents import CorpusReader, corpus_windows
from detokgui.core.corpus.spec import as_corpus
from detokgui.core.model.conventions import (
    DEFAULT_POSITION_CONVENTION,
    check_position_convention,
    inverse_sigma_job,
    position_key_weights,
    sigma_stats_job,
    temperature_label,
)
from detokgui.core.model.terms import TERM_NAMES, position_factors, term_factors
from detokgui.core.position_side.positional import _pattern_batch, positional_bias

# --------------------------------------------------------------------------- texts


@dataclass(frozen=True)
class TextSource:
    """Where texts come from: the windows of the corpus files/folders `paths`, or the
    token lists `windows`; at most `max_texts` of them (all when None). `prepend_bos`
    ("prepend BOS") starts every corpus window with the model's own BOS token
    (`tokens.bos_id`: bos_token_id, else eos_token_id; GPT-2's <|endoftext|>, as the
    authors did; OPT's </s>)."""

    paths: tuple[str, ...] = ()
    windows: tuple[tuple[int, ...], ...] | None = None
    prepend_bos: bool = False
    max_texts: int | None = None

    def __post_init__(self) -> None:
        if self.max_texts is not None:
            m = as_int(self.max_texts, "maximum number of texts")
            if m < 1:
                raise InputError(f"The maximum number of texts must be at least 1, not {m}.")
            object.__setattr__(self, "max_texts", m)
        if self.windows is None and not self.paths:
            raise InputError("No texts: give corpus files or token sequences.")

    @classmethod
    def corpus(cls, paths, *, prepend_bos: bool = False, max_texts: int | None = None
               ) -> TextSource:
        """The windows of the corpus at `paths` (files or folders, see core.corpus.documents;
        a `Corpus` keeps its text column)."""
        return cls(paths=as_corpus(paths), prepend_bos=bool(prepend_bos), max_texts=max_texts)

    @classmethod
    def tokens(cls, windows: Sequence[Sequence[int]], *, max_texts: int | None = None
               ) -> TextSource:
        """Token lists given directly (each at most n_positions tokens)."""
        return cls(windows=tuple(tuple(int(t) for t in w) for w in windows),
                   max_texts=max_texts)

    def label(self) -> str:
        """One line saying which texts were used (for plots and exports)."""
        if self.windows is not None:
            what = f"{len(self.windows)} given token sequences"
        else:
            names = ", ".join(os.path.basename(p.rstrip("/")) or p for p in self.paths)
            what = f"corpus {names}" + (", BOS prepended" if self.prepend_bos else "")
        return what + (f", first {self.max_texts} texts" if self.max_texts else "")

    def iterate(self, layer) -> Iterator[tuple[torch.Tensor, float]]:
        """(token ids on the layer's device, fraction of the source done) per text."""
        if self.windows is not None:
            total = len(self.windows) if self.max_texts is None else min(
                len(self.windows), self.max_texts)
            for k, w in enumerate(self.windows[:total]):
                yield layer.check_token_ids(w), (k + 1) / max(1, total)
            return

        reader = CorpusReader(self.paths)
        windows = corpus_windows(self.paths, layer.tokenizer, layer.n_positions,
                                 prepend_bos=self.prepend_bos, reader=reader)
        for k, w in enumerate(windows, start=1):
            frac = reader.fraction
            if self.max_texts is not None:
                frac = max(frac, k / self.max_texts)
            yield layer.check_token_ids(w), min(1.0, frac)
            if self.max_texts is not None and k >= self.max_texts:
                return


def iter_text_window(layer, texts: TextSource, index) -> Job[list[int]]:
    """Generator job (Progress per text read) returning text number `index` (0-based) of
    `texts` as token ids; InputError when there are not that many texts."""
    from dataclasses import replace

    index = as_int(index, "text number")
    if index < 0:
        raise InputError(f"The text number must be 0 or more, not {index}.")
    if texts.max_texts is not None and index >= texts.max_texts:
        raise InputError(f"Only the first {texts.max_texts} texts are used; choose a number "
                         f"below {texts.max_texts}.")
    found, k = None, 0
    for ids, _frac in replace(texts, max_texts=index + 1).iterate(layer):
        found, k = ids, k + 1
        yield Progress(k / (index + 1), f"reading text {k} of {index + 1}")
    if k <= index:
        raise InputError(f"The corpus holds {k} text{'s' * (k != 1)}; choose a number "
                         f"below {k}.")
    return found.tolist()


def text_window(layer, texts: TextSource, index) -> list[int]:
    """`iter_text_window` run to completion."""
    return run(iter_text_window(layer, texts, index))


def _np(t: torch.Tensor, dtype=None) -> np.ndarray:
    t = t.detach()
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    a = t.cpu().numpy()
    return a.astype(dtype) if dtype is not None else a.copy()


# --------------------------------------------------------------------------- forward pass


@dataclass
class ForwardPass:
    """Layer 0 run on one sequence from the raw checkpoint tensors (see module docstring).

    attention [H, n, n] (zero above the diagonal), attn_out [n, d] (a, with b_O),
    residual [n, d] (r = x + a, the MLP's input before ln_2), mlp_pre [n, d_mlp] or None."""

    attention: torch.Tensor
    attn_out: torch.Tensor
    residual: torch.Tensor
    mlp_pre: torch.Tensor | None


def _heads(layer, t: torch.Tensor) -> torch.Tensor:
    """[n, d] -> [H, n, d']."""
    return t.reshape(t.shape[0], layer.n_heads, layer.d_head).transpose(0, 1)


@torch.no_grad()
def forward(layer, token_ids, *, mlp: bool = True) -> ForwardPass:
    """The model's own layer 0 (embeddings, ln_1, attention, and with `mlp` ln_2 and the
    MLP's first linear map), from the checkpoint's tensors as stored (qkv_weight/bias,
    attn_out_weight/bias, ln_1, ln_2, mlp_in_weight/bias); never from the folded factors."""
    ids = layer.check_token_ids(token_ids)
    n, d = ids.shape[0], layer.d
    x = layer.E[ids] + layer.P[:n]
    u = F.layer_norm(x, (d,), layer.ln1_weight, layer.ln1_bias, layer.eps)
    qkv = torch.addmm(layer.qkv_bias, u, layer.qkv_weight)
    q, k, v = (_heads(layer, qkv[:, a * d:(a + 1) * d]) for a in range(3))
    att = torch.matmul(q, k.transpose(1, 2)) / layer.temperature
    causal = torch.ones(n, n, dtype=torch.bool, device=x.device).triu_(1)
    att = torch.softmax(att.masked_fill_(causal, -torch.inf), dim=-1)
    z = torch.matmul(att, v).transpose(0, 1).reshape(n, d)
    a = torch.addmm(layer.attn_out_bias, z, layer.attn_out_weight)
    r = x + a
    pre = None
    if mlp:
        w = F.layer_norm(r, (d,), layer.ln2_weight, layer.ln2_bias, layer.eps)
        pre = torch.addmm(layer.mlp_in_bias, w, layer.mlp_in_weight)
    return ForwardPass(attention=att, attn_out=a, residual=r, mlp_pre=pre)


@torch.no_grad()
def attention_row(layer, token_ids, i: int) -> torch.Tensor:
    """Row i of the model's own layer-0 attention, [H, i+1] (the forward pass of `forward`
    restricted to the keys j <= i and the one query i)."""
    ids = layer.check_token_ids(token_ids)[: i + 1]
    n, d = ids.shape[0], layer.d
    if n <= i:
        raise InputError(f"The text has {n} tokens; query position {i} needs more than {i}.")
    x = layer.E[ids] + layer.P[:n]
    u = F.layer_norm(x, (d,), layer.ln1_weight, layer.ln1_bias, layer.eps)
    k = torch.addmm(layer.qkv_bias[d:2 * d], u, layer.qkv_weight[:, d:2 * d])
    q = torch.addmv(layer.qkv_bias[:d], layer.qkv_weight[:, :d].T, u[i])
    s = torch.matmul(_heads(layer, k), q.reshape(layer.n_heads, layer.d_head, 1)).squeeze(-1)
    return torch.softmax(s / layer.temperature, dim=-1)


# --------------------------------------------------------------------------- C1


SENTENCE_TERMS = (*TERM_NAMES, "sum", "predicted", "actual")


@dataclass
class SentenceData:
    """C1 for one token sequence, arrays [len(heads), n, n] (query i, key j), float32.

    terms[name] for the six terms and "sum" (NaN above the diagonal, where no score is
    used); predicted = softmax_{j<=i}(sum / tau); actual = the model's own attention
    (`forward`); both zero above the diagonal. max_abs_diff[h] = max_{i,j} |predicted -
    actual|, the built-in exactness check (about 1e-6 in float32)."""

    token_ids: list[int]
    heads: list[int]
    temperature: float
    terms: dict[str, np.ndarray]
    predicted: np.ndarray
    actual: np.ndarray
    max_abs_diff: np.ndarray

    @property
    def max_difference(self) -> float:
        return float(self.max_abs_diff.max())

    def values(self, name: str) -> np.ndarray:
        """One of SENTENCE_TERMS as [len(heads), n, n]."""
        if name == "predicted":
            return self.predicted
        if name == "actual":
            return self.actual
        return self.terms[name]


@torch.no_grad()
def iter_sentence(layer, token_ids, heads=None) -> Job[SentenceData]:
    """Generator job (Progress per head) returning the `SentenceData` of a sequence of at
    most n_positions tokens. Memory: 9 float32 arrays of [len(heads), n, n]; ask for the
    heads you show (one head at n = 1024 is 36 MB)."""
    ids = layer.check_token_ids(token_ids)
    hs = check_heads(layer, heads)
    n = ids.shape[0]
    actual_all = forward(layer, ids, mlp=False).attention
    factors = term_factors(layer, ids, hs)
    upper = torch.ones(n, n, dtype=torch.bool, device=ids.device).triu_(1)
    names = (*TERM_NAMES, "sum")
    terms = {k: np.empty((len(hs), n, n), dtype=np.float32) for k in names}
    predicted = np.empty((len(hs), n, n), dtype=np.float32)
    actual = np.empty((len(hs), n, n), dtype=np.float32)
    diff = np.empty(len(hs))
    for r, h in enumerate(hs):
        t = [x.expand(n, n) for x in factors.block(r)]
        total = sum(t)
        pred = torch.softmax((total / layer.temperature).masked_fill(upper, -torch.inf), -1)
        for k, x in zip(TERM_NAMES, t):
            terms[k][r] = _np(x.masked_fill(upper, torch.nan), np.float32)
        terms["sum"][r] = _np(total.masked_fill(upper, torch.nan), np.float32)
        predicted[r] = _np(pred, np.float32)
        actual[r] = _np(actual_all[h], np.float32)
        diff[r] = float((pred - actual_all[h]).abs().max())
        yield Progress((r + 1) / len(hs), f"six terms, head {h}")
    return SentenceData(
        token_ids=ids.tolist(), heads=hs, temperature=layer.temperature, terms=terms,
        predicted=predicted, actual=actual, max_abs_diff=diff,
    )


def sentence(layer, token_ids, heads=None) -> SentenceData:
    """`iter_sentence` run to completion."""
    return run(iter_sentence(layer, token_ids, heads))


def _no_text_reaches(n_texts: int, i: int) -> InputError:
    which = "The only text is not" if n_texts == 1 else f"None of the {n_texts} texts is"
    return InputError(f"{which} longer than {i} tokens; choose a query position below the "
                      f"length of the longest text.")


# --------------------------------------------------------------------------- C2

#: How the weight-based prediction of C2 takes sigma per position: the position
#: conventions of `core.model.conventions` (docs/math/sigma.md#position-only-views; "paper" =
#: the authors' Fig 3-E code, the default; "mean-sigma" = the vocabulary mean), labelled
#: here by the C2 formula they give.
CONVENTION_LABELS = {
    "paper": "paper convention: score_j = (p_i W^QK p_j^T / mean_v sigma(e_v+p_i) + "
             "b^QK p_j^T) E_v[1/sigma(e_v+p_j)]",
    "mean-sigma": "mean-sigma convention: sigma = vocabulary mean of sigma(e_v+p) at i and j",
}

@torch.no_grad()
def b3_prediction(layer, i, heads=None,
                  convention: str = DEFAULT_POSITION_CONVENTION) -> np.ndarray:
    """The weight-based prediction of the attention at query position i
    (docs/math/text-side.md#c2-empirical-attention),
    softmax_{j<=i}((T_pp + T_p) / tau), as [len(heads), i+1], with sigma per
    `convention` (see CONVENTION_LABELS). Needs the sigma table."""

    i = check_position(layer, i)
    hs = check_heads(layer, heads)
    if check_position_convention(convention) == "mean-sigma":
        return positional_bias(layer, i, "mean", hs, "mean-sigma").softmax.astype(np.float64)
    f = position_factors(layer)
    s_i = layer.sigma_stats().pos_mean[i]
    t_pp = torch.matmul(f.Kp[hs, : i + 1], f.Qp[hs, i].unsqueeze(-1)).squeeze(-1)
    total = (t_pp / s_i + f.Tp_raw[hs, : i + 1]) * position_key_weights(layer, "paper", i + 1)
    return _np(torch.softmax(total.double() / layer.temperature, dim=-1))


@dataclass
class EmpiricalAttention:
    """C2 at query position i, arrays [len(heads), i+1] over keys j = 0..i.

    empirical = mean over the `windows` texts longer than i of the model's attention
    alpha_{i,j,h}; predicted = `b3_prediction` (sigma per `convention`); pattern = mean
    over the same texts of the B4 positional pattern of the text's own token at i
    (softmax_{j<=i}((T_ep + T_pp + T_p)/tau), key sigma = vocabulary mean); temperature =
    the tau both divide by (`Layer0.temperature`)."""

    i: int
    heads: list[int]
    windows: int
    texts: int
    convention: str
    source: str
    empirical: np.ndarray
    predicted: np.ndarray
    pattern: np.ndarray
    temperature: float

    @property
    def j(self) -> np.ndarray:
        return np.arange(self.i + 1)


def _mean_pattern(layer, tokens: list[int], i: int, hs: list[int]) -> np.ndarray:
    """Mean over `tokens` (with repeats) of the B4 pattern at position i, [h, i+1]."""

    ids, counts = torch.unique(torch.tensor(tokens, dtype=torch.long), return_counts=True)
    acc = torch.zeros(len(hs), i + 1, dtype=torch.float64, device=layer.device)
    w_all = counts.to(device=layer.device, dtype=torch.float64)
    step = max(1, (8 << 20) // max(1, len(hs) * (i + 1)))
    for a in range(0, ids.numel(), step):
        pat = _pattern_batch(layer, ids[a:a + step].to(layer.device), i, hs)  # [h, c, i+1]
        acc += torch.einsum("hcj,c->hj", pat.double(), w_all[a:a + step])
    return _np(acc / counts.sum().item())


@torch.no_grad()
def iter_empirical_attention(layer, texts: TextSource, i, heads=None,
                             convention: str = DEFAULT_POSITION_CONVENTION
                             ) -> Job[EmpiricalAttention]:
    """Generator job returning the `EmpiricalAttention` at query position i over `texts`.
    Raises InputError when no text is longer than i tokens."""
    i = check_position(layer, i)
    hs = check_heads(layer, heads)
    check_position_convention(convention)
    tables = inverse_sigma_job if convention == "paper" else sigma_stats_job
    yield from rescaled(tables(layer), 0.0, 0.05)
    acc = torch.zeros(len(hs), i + 1, dtype=torch.float64, device=layer.device)
    tokens: list[int] = []
    n_texts = 0
    for ids, frac in texts.iterate(layer):
        n_texts += 1
        if ids.shape[0] > i:
            acc += attention_row(layer, ids, i)[hs].double()
            tokens.append(int(ids[i]))
        yield Progress(0.05 + 0.9 * frac, f"attention at {i}: {len(tokens)} of {n_texts} texts")
    if not tokens:
        raise _no_text_reaches(n_texts, i)
    pattern = _mean_pattern(layer, tokens, i, hs)
    yield Progress(1.0, "prediction")
    return EmpiricalAttention(
        i=i, heads=hs, windows=len(tokens), texts=n_texts, convention=convention,
        source=texts.label(), empirical=_np(acc / len(tokens)),
        predicted=b3_prediction(layer, i, hs, convention), pattern=pattern,
        temperature=float(layer.temperature),
    )


def empirical_attention(layer, texts: TextSource, i, heads=None,
                        convention: str = DEFAULT_POSITION_CONVENTION) -> EmpiricalAttention:
    """`iter_empirical_attention` run to completion."""
    return run(iter_empirical_attention(layer, texts, i, heads, convention))


@dataclass
class AttentionRows:
    """The model's attention at query position i in each text longer than i:
    rows[w, r, j] = alpha_{i,j,heads[r]} of text w, [windows, len(heads), i+1] float64
    (the per-text values behind `EmpiricalAttention.empirical`, which is their mean)."""

    i: int
    heads: list[int]
    rows: np.ndarray
    texts: int
    source: str

    @property
    def windows(self) -> int:
        return int(self.rows.shape[0])

    def mean(self) -> np.ndarray:
        return self.rows.mean(axis=0)

    def percentiles(self, interval: float = 95.0) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) [len(heads), i+1]: the (100-interval)/2 and (100+interval)/2
        percentiles over the texts (numpy's linear interpolation)."""
        q = (100.0 - interval) / 2
        lo, hi = np.percentile(self.rows, [q, 100.0 - q], axis=0)
        return lo, hi


@torch.no_grad()
def iter_attention_rows(layer, texts: TextSource, i, heads=None) -> Job[AttentionRows]:
    """Generator job (Progress per text) returning the `AttentionRows` at query position
    i over `texts`; InputError when no text is longer than i tokens."""
    i = check_position(layer, i)
    hs = check_heads(layer, heads)
    rows: list[np.ndarray] = []
    n_texts = 0
    for ids, frac in texts.iterate(layer):
        n_texts += 1
        if ids.shape[0] > i:
            rows.append(_np(attention_row(layer, ids, i)[hs].double()))
        yield Progress(frac, f"attention at {i}: {len(rows)} of {n_texts} texts")
    if not rows:
        raise _no_text_reaches(n_texts, i)
    return AttentionRows(i=i, heads=hs, rows=np.stack(rows), texts=n_texts,
                         source=texts.label())


# --------------------------------------------------------------------------- C3

DEFINITIONS = ("paper", "code")
DEFINITION_LABELS = {
    "paper": "paper eq 18-21: c = KL(P || Q) = sum_{j<=i} P_j log(P_j/Q_j), "
             "P = softmax((s - T_X)/tau), Q = softmax(s/tau), tau = the model's temperature "
             "(sqrt(d'); 1 for GPT-Neo)",
    "code": "authors' code: c = (1/(i+1)) sum_{j<=i} Q_j log(Q_j/P_j), "
            "P = softmax(s - T_X), Q = softmax(s): raw scores, tau = 1 for every model",
}
#: The definitions in a few words (plot titles, combo boxes); `definition_label` adds the
#: temperature the loaded model uses.
DEFINITION_SHORT = {"paper": "paper eq 18-21: KL(P ‖ Q) of softmax(· / τ)",
                    "code": "authors' code: mean over j of KL(Q ‖ P), raw scores (τ = 1 for "
                            "every model)"}


def check_definition(definition: str) -> str:
    return check_choice("KL definition", definition, DEFINITIONS)


def definition_temperature(layer, definition: str) -> float:
    """The tau a KL definition divides the scores by: the model's temperature for
    "paper", 1 for "code" (the authors' script never scales)."""
    return layer.temperature if check_definition(definition) == "paper" else 1.0


def definition_label(layer, definition: str) -> str:
    """`DEFINITION_SHORT`, with the loaded model's tau for "paper"
    ("paper eq 18-21: KL(P ‖ Q) of softmax(· / τ), τ = √d′ = 8")."""
    short = DEFINITION_SHORT[check_definition(definition)]
    return f"{short}, {temperature_label(layer)}" if definition == "paper" else short


#: Query rows per block in `kl_contributions`: a block of rows i in [a, b) needs only the
#: keys j < b, so the causal half of the [n, n] work is skipped.
KL_BLOCK_ROWS = 128


@torch.no_grad()
def kl_contributions(layer, token_ids, definition: str = "paper", heads=None) -> torch.Tensor:
    """c^X_{i,h} for one text, [len(heads), 6, n] (terms in TERM_NAMES order), with s the
    sum of the six terms, T_X one of them and softmaxes over j <= i:

      "paper" (eq 18-21): P = softmax((s - T_X)/tau), Q = softmax(s/tau), tau = the
          model's temperature (`Layer0.temperature`: sqrt(d'), 1 for GPT-Neo),
          c = KL(P || Q) = sum_j P_j (log P_j - log Q_j)
            = -(1/tau) sum_j P_j T_X[j] - lse((s - T_X)/tau) + lse(s/tau)
      "code" (the authors' script): P = softmax(s - T_X), Q = softmax(s),
          c = (1/(i+1)) KL(Q || P) = (1/(i+1)) (sum_j Q_j T_X[j] - lse(s) + lse(s - T_X))

    (lse = log-sum-exp over j <= i); both are >= 0, so rounding below zero (|c| ~ 1e-7 in
    float32) is clamped to 0. Vectorised over heads: per block of KL_BLOCK_ROWS query rows
    the terms come from the rank-d' factors (`terms.term_factors`) for the keys j below the
    block's end only ([h, rows, keys], a few MB), one exponential pass per term into a
    reused buffer; no Python loop over heads, i or j. Exponents below log(finfo.tiny) + 2 (-85.3 in float32) are raised to it
    before exp: probabilities under 1e-37 (and the masked j > i) become 1e-37 instead of 0
    or a subnormal, invisible at float32 precision, and exp runs several times faster
    (CPUs produce subnormal results slowly)."""
    check_definition(definition)
    ids = layer.check_token_ids(token_ids)
    hs = check_heads(layer, heads)
    n = ids.shape[0]
    tau = definition_temperature(layer, definition)
    dev, dt = ids.device, layer.dtype
    lo = math.log(torch.finfo(dt).tiny) + 2.0  # exp(lo) stays clear of subnormals
    f = term_factors(layer, ids, hs)
    if tau != 1.0:  # every term / tau: scale the query-side factors and the key-only terms
        f.qe, f.qp, f.te, f.tp = f.qe / tau, f.qp / tau, f.te / tau, f.tp / tau
    H = len(hs)
    out = torch.empty(H, len(TERM_NAMES), n, dtype=dt, device=dev)
    rows_max = min(n, KL_BLOCK_ROWS)
    scratch = torch.empty(H * rows_max * n, dtype=dt, device=dev)
    for a in range(0, n, KL_BLOCK_ROWS):
        b = min(n, a + KL_BLOCK_ROWS)
        mask = torch.zeros(b - a, b, dtype=dt, device=dev)
        mask[:, a:].copy_(torch.full((b - a, b - a), -torch.inf, dtype=dt, device=dev).triu_(1))
        keys = torch.arange(a + 1, b + 1, dtype=dt, device=dev)
        buf = scratch[: H * (b - a) * b].view(H, b - a, b)
        terms = f.block(None, slice(a, b), slice(0, b))  # [h, rows, b] or [h, 1, b], / tau
        s = torch.add(terms[0], terms[1])
        for t in terms[2:]:
            s.add_(t)
        s.add_(mask)
        m_q = s.amax(dim=-1, keepdim=True)
        q = torch.sub(s, m_q).clamp_(min=lo).exp_()
        z_q = q.sum(-1)
        lse_q = m_q[..., 0] + torch.log(z_q)
        if definition == "code":
            q.div_(z_q[..., None])
        for x, tx in enumerate(terms):
            torch.sub(s, tx, out=buf)  # s - T_X, -inf above i
            m_p = buf.amax(dim=-1, keepdim=True)
            buf.sub_(m_p).clamp_(min=lo).exp_()
            z_p = buf.sum(-1)
            lse_p = m_p[..., 0] + torch.log(z_p)
            if definition == "paper":
                pt = buf.mul_(tx).sum(-1) / z_p  # sum_j P_j T_X[j] / tau
                out[:, x, a:b] = lse_q - lse_p - pt
            else:
                qt = torch.mul(q, tx, out=buf).sum(-1)  # sum_j Q_j T_X[j]
                out[:, x, a:b] = (qt - lse_q + lse_p) / keys
    return out.clamp_min_(0.0)


@dataclass
class KLContributions:
    """C3: c^X_{i,h} averaged over texts, contribution [len(heads), 6, L] (terms in
    TERM_NAMES order; NaN where no text is longer than i); texts[i] = how many texts
    have more than i tokens; `definition` says which KL (DEFINITION_LABELS) and
    `temperature` the tau its softmaxes divide by (`definition_temperature`).
    stderr: the standard error of each mean over the texts, sqrt(var / texts[i]) with
    the unbiased variance (NaN where fewer than two texts reach i)."""

    definition: str
    heads: list[int]
    terms: tuple[str, ...]
    contribution: np.ndarray
    texts: np.ndarray
    n_texts: int
    source: str
    temperature: float
    stderr: np.ndarray | None = None

    @property
    def label(self) -> str:
        return DEFINITION_LABELS[self.definition]

    def line(self, head: int, term: str) -> np.ndarray:
        """One line of the plot: the contribution of `term` over i for one head."""
        return self.contribution[self.heads.index(int(head)), self.terms.index(term)]


@torch.no_grad()
def iter_kl(layer, texts: TextSource, definition: str = "paper", heads=None
            ) -> Job[KLContributions]:
    """Generator job returning `KLContributions` over `texts` (Progress per text)."""
    check_definition(definition)
    hs = check_heads(layer, heads)
    L = layer.n_positions
    acc = torch.zeros(len(hs), len(TERM_NAMES), L, dtype=torch.float64, device=layer.device)
    sq = torch.zeros_like(acc)
    counts = torch.zeros(L, dtype=torch.long, device=layer.device)
    n_texts = 0
    for ids, frac in texts.iterate(layer):
        n = ids.shape[0]
        c = kl_contributions(layer, ids, definition, hs).double()
        acc[..., :n] += c
        sq[..., :n] += c * c
        counts[:n] += 1
        n_texts += 1
        yield Progress(frac, f"KL contributions: {n_texts} texts")
    if n_texts == 0:
        raise InputError("The corpus holds no text.")
    k = counts.clamp_min(1).double()
    mean = acc / k
    mean[..., counts == 0] = torch.nan
    var = ((sq - k * mean * mean) / (k - 1).clamp_min(1)).clamp_min(0)
    se = (var / k).sqrt()
    se[..., counts < 2] = torch.nan
    return KLContributions(
        definition=definition, heads=hs, terms=TERM_NAMES, contribution=_np(mean),
        texts=_np(counts), n_texts=n_texts, source=texts.label(),
        temperature=float(definition_temperature(layer, definition)), stderr=_np(se),
    )


def kl(layer, texts: TextSource, definition: str = "paper", heads=None) -> KLContributions:
    """`iter_kl` run to completion."""
    return run(iter_kl(layer, texts, definition, heads))
