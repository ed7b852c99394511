"""Token self-assertion and token-embedding statistics against corpus frequency
(docs/math/token-side.md#a6-self-assertion-and-frequency, paper Fig 5, Fig 6 left, Fig 11).

    T_e(v)   = b^QK_h e_v^T / s_v          (key-side sigma: mean over positions, or none)
    T_e(v)   = b^QK_h e_v^T E_j[1/sigma(e_v + p_j)]   ("paper": the authors' Fig 5 / 11 code)
    Var(e_v) = mean_k (e_v,k - mean(e_v))^2 (population variance over the d dimensions)
    |e_v|    = Euclidean norm of the token embedding

Correlations are Spearman's rho: the Pearson correlation of average ranks (ties share
their mean rank).

Tokens the corpus never contains (count 0) have no log count, so they cannot sit on the
paper's log-frequency axis. By default (`zero_counts="exclude"`) they are left out of the
frequency correlations and reported as such; `"include"` keeps them, tied at the lowest
rank. The norm-vs-T_e correlation needs no corpus and uses every token.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from detokgui.core.base.checks import check_choice, check_heads
from detokgui.core.base.errors import InputError
from detokgui.core.base.numbers import num
from detokgui.core.base.progress import Job
from detokgui.core.corpus.counts import iter_layer_counts
from detokgui.core.model.conventions import (
    DEFAULT_T_E,
    SigmaChoice,
    check_t_e,
    inverse_sigma_per_token,
    token_sigmas,
)
from detokgui.core.model.sigma import row_variance

ZERO_COUNTS = ("exclude", "include")
ZERO_COUNT_LABELS = {
    "exclude": "tokens absent from the corpus (count 0) left out",
    "include": "tokens absent from the corpus (count 0) included, tied at the lowest rank",
}


def self_assertion(layer, sigma: SigmaChoice | None = None, heads=None) -> torch.Tensor:
    """T_e(v) = b^QK_h e_v^T / s_v for every token v, [h, V] (s_v = 1 for sigma "none")."""
    sigma = sigma or SigmaChoice()
    hs = check_heads(layer, heads)
    with torch.inference_mode():
        t = layer.bQK[hs] @ layer.E.T  # [h, V]
        s = token_sigmas(layer, sigma, "key")
        return t / s if s is not None else t


def self_assertion_paper(layer, heads=None) -> torch.Tensor:
    """T_e(v) = b^QK_h e_v^T E_j[1/sigma(e_v + p_j)] for every token v, [h, V] (the
    authors' convention of Fig 5 and Fig 11: each position's sigma, then the mean)."""
    hs = check_heads(layer, heads)
    with torch.inference_mode():
        return (layer.bQK[hs] @ layer.E.T) * inverse_sigma_per_token(layer)


def embedding_variance(layer) -> torch.Tensor:
    """Var(e_v) over the d dimensions (population), [V]."""
    with torch.inference_mode():
        return row_variance(layer.E)


def embedding_norm(layer) -> torch.Tensor:
    """|e_v|, [V]."""
    with torch.inference_mode():
        return torch.linalg.vector_norm(layer.E, dim=1)


def average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks along the last axis, ties sharing their average rank (float64)."""
    x = np.asarray(x)
    order = np.argsort(x, axis=-1, kind="stable")
    xs = np.take_along_axis(x, order, axis=-1)
    n = x.shape[-1]
    new = np.ones(xs.shape, dtype=bool)
    new[..., 1:] = xs[..., 1:] != xs[..., :-1]
    # For each sorted position, the first and last index of its tie group.
    idx = np.broadcast_to(np.arange(n), xs.shape)
    first = np.maximum.accumulate(np.where(new, idx, 0), axis=-1)
    end = np.ones(xs.shape, dtype=bool)
    end[..., :-1] = new[..., 1:]
    last = np.flip(np.minimum.accumulate(np.flip(np.where(end, idx, n - 1), -1), axis=-1), -1)
    ranks = np.empty(xs.shape, dtype=np.float64)
    np.put_along_axis(ranks, order, (first + last) / 2.0 + 1.0, axis=-1)
    return ranks


def spearman(x, y) -> np.ndarray:
    """Spearman's rho between x and y along the last axis (broadcast): the Pearson
    correlation of their average ranks. NaN when either is constant."""
    rx, ry = average_ranks(x), average_ranks(y)
    rx = rx - rx.mean(axis=-1, keepdims=True)
    ry = ry - ry.mean(axis=-1, keepdims=True)
    num = (rx * ry).sum(axis=-1)
    den = np.sqrt((rx * rx).sum(axis=-1) * (ry * ry).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


@dataclass
class FrequencyStats:
    """A6 data: per-token arrays [V] (per head [h, V]) and Spearman correlations over the
    tokens in `used`."""

    heads: list[int]
    sigma: SigmaChoice
    zero_counts: str
    counts: np.ndarray  # [V] corpus count of each token
    used: np.ndarray  # [V] bool: tokens in the frequency correlations
    t_e: np.ndarray  # [h, V]
    variance: np.ndarray  # [V] Var(e_v)
    norm: np.ndarray  # [V] |e_v|
    rho_t_e: np.ndarray  # [h] rho(count, T_e) over `used`
    rho_variance: float  # rho(count, Var(e)) over `used`
    rho_norm_t_e: np.ndarray  # [h] rho(|e|, T_e) over all tokens
    t_e_convention: str = DEFAULT_T_E  # "sigma": / s_v per `sigma`; "paper": E_j[1/sigma]

    @property
    def n_used(self) -> int:
        return int(self.used.sum())

    def points(self, kind: str, head: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(token ids, x, y) of one head's scatter: "norm" is (T_e(v), |e_v|) of every
        token; "t_e" and "variance" are (log10 count(v), T_e(v) or Var(e_v)) of the tokens
        the corpus contains (a count of 0 has no logarithm)."""
        r = self.heads.index(head)
        if kind == "norm":
            return np.arange(self.norm.shape[0]), self.t_e[r], self.norm
        ids = np.flatnonzero(self.counts > 0)
        y = self.variance[ids] if kind == "variance" else self.t_e[r, ids]
        return ids, np.log10(self.counts[ids].astype(np.float64)), y

    def scatter_text(self, kind: str, head: int) -> tuple[str, str, str]:
        """(x label, y label, title) of one head's scatter (`points`), the title with its
        Spearman rho and how many tokens it is over."""
        r = self.heads.index(head)
        te = f"T_e(v) = b^QK e_v / s_v, head {head} ({self.sigma.label()})"
        if kind == "norm":
            return (te, "token-embedding norm |e_v|",
                    (f"Token-embedding norm against T_e, head {head} — Spearman ρ = "
                     f"{num(float(self.rho_norm_t_e[r]))} over all {num(self.norm.shape[0])} "
                     "tokens"))
        zero = ("" if self.zero_counts == "exclude" else
                "; ρ includes the count-0 tokens (not drawn)")
        count = "corpus count (log scale)"
        if kind == "variance":
            return (count, "token-embedding variance Var(e_v)",
                    (f"Token-embedding variance against corpus count — Spearman ρ = "
                     f"{num(float(self.rho_variance))} over {num(self.n_used)} tokens{zero}"))
        return (count, te,
                (f"Token self-assertion T_e against corpus count, head {head} — Spearman ρ = "
                 f"{num(float(self.rho_t_e[r]))} over {num(self.n_used)} tokens{zero}"))

    def describe(self, v: int, head: int, name: str) -> str:
        """The hover text of token v (`name`: its display form) in one head's scatter."""
        r = self.heads.index(head)
        return (f"{name!r} (id {v}) · count {num(int(self.counts[v]))} · "
                f"T_e {num(float(self.t_e[r, v]))} · Var(e) {num(float(self.variance[v]))} · "
                f"|e| {num(float(self.norm[v]))}")


def frequency_stats(layer, counts, sigma: SigmaChoice | None = None, heads=None,
                    zero_counts: str = "exclude", t_e: str = DEFAULT_T_E) -> FrequencyStats:
    """T_e per head, Var(e) and |e| against the corpus counts (a CorpusCounts) of the
    model's tokens, with the Spearman correlations (see the module docstring). `t_e`:
    "sigma" divides by s_v per `sigma`; "paper" uses E_j[1/sigma(e_v + p_j)] (the
    authors' Fig 5 / 11; `sigma` is then ignored)."""
    sigma = sigma or SigmaChoice()
    check_choice("zero_counts", zero_counts, ZERO_COUNTS)
    if counts.n_vocab != layer.n_vocab:
        raise InputError(f"The corpus counts cover {counts.n_vocab} token ids but the model has "
                         f"{layer.n_vocab}; count the corpus with this model's tokenizer.")
    check_t_e(t_e)
    hs = check_heads(layer, heads)
    c = np.asarray(counts.unigrams)
    used = c > 0 if zero_counts == "exclude" else np.ones(c.shape, dtype=bool)
    if used.sum() < 2:
        raise InputError("Fewer than two tokens occur in the corpus: no correlation.")
    te_convention = t_e
    t_e = (self_assertion_paper(layer, hs) if t_e == "paper"
           else self_assertion(layer, sigma, hs)).double().cpu().numpy()
    var = embedding_variance(layer).double().cpu().numpy()
    norm = embedding_norm(layer).double().cpu().numpy()
    cu = c[used]
    return FrequencyStats(
        heads=hs, sigma=sigma, zero_counts=zero_counts, counts=c, used=used, t_e=t_e,
        variance=var, norm=norm,
        rho_t_e=spearman(np.broadcast_to(cu, (len(hs), cu.shape[0])), t_e[:, used]),
        rho_variance=float(spearman(cu, var[used])),
        rho_norm_t_e=spearman(np.broadcast_to(norm, t_e.shape), t_e),
        t_e_convention=te_convention,
    )


def iter_corpus_frequency(layer, corpus, sigma: SigmaChoice | None = None,
                          zero_counts: str = "exclude") -> Job[FrequencyStats]:
    """`frequency_stats` of every head with the counts of the corpus at `corpus`
    (`iter_layer_counts`: counted with the model's tokenizer, with progress)."""
    counts = yield from iter_layer_counts(layer, corpus)
    return frequency_stats(layer, counts, sigma, zero_counts=zero_counts)
