"""Two models side by side: a `Pair` of layers (A, B) with the token mapping between their
vocabularies, and the matching of A's heads to B's heads from the weights alone
(docs/math/compare.md).

Tokens. When the two vocabularies are the same (the same token string at every id), a
token is the same id in both. Otherwise a token of A is the token of B with the same
string (`tokens.token_string`: ' Korea' in GPT-2's byte-level BPE and in a sentencepiece
vocabulary alike); a token B lacks is missing (None).

Head similarity. For a fixed seeded sample U of query tokens both vocabularies have
(`Pair.shared_query_sample`), and a common query position n = min(399, L_A - 1, L_B - 1):

    pattern_h(j)  = mean_{u in U} softmax_{j<=n}((T_ep + T_pp + T_p) / tau)   (B4, key
                    sigma = vocabulary mean; `positional.mean_pattern`), j = 0..n: the two
                    models' patterns are compared at the same relative distances n - j
    positional[a, b] = sum_j min(pattern_a(j), pattern_b(j))      (shared mass, 1 = same)
    affinity[a, b]   = mean_{u in U} |map(top_k^A_a(u)) & top_k^B_b(u)| / k
                       top_k^X_h(u): the k keys v with the highest T_ee(u, v) over all of X's
                       vocabulary (key sigma = mean over positions, as the top-k view);
                       map: A's ids to B's (missing keys never agree)
    similarity       = w positional + (1 - w) affinity       (w = `positional_weight`, 1/2)

All three are (H_A, H_B) arrays in [0, 1]; a model against itself gives 1 on the diagonal.
The assignment is the one-to-one pairing maximising the summed similarity
(`scipy.optimize.linear_sum_assignment`; min(H_A, H_B) pairs). No V x V matrix is formed:
the top-k are streamed per head over chunks of the sample.

No match. How alike two unrelated heads look depends on the heads themselves: two broad
patterns share most of their mass whatever they do, and keys that many queries rank high
agree by chance. So the null is built from this pair's own numbers: B made unrelated to A
by rotating its patterns over the key positions (s = 0..n) and pairing its top-k keys
with other query tokens (the sample, in a seeded order, shifted by r; at most
`NULL_SHIFTS` + 1 shifts), the same s and r for all of B's heads:

    S_g[a, b] = w sum_j min(pattern_a(j), pattern_b((j + s) mod (n+1)))
                + (1 - w) mean_i |top_a(u_i) & top_b(u_(i+r) mod |U|)| / k      g = (s, r)

which keeps each pattern's values and each head's key popularity and loses only their
correspondence; g = (0, 0) is the observed S. Each pair of heads gets its p-value over
the N shuffles, c[a, b](g) = #{g': S_g'[a, b] >= S_g[a, b]}, and the family-wise control
is the min-p method (Westfall-Young): over all shuffles, least(g) = min_{a,b} c[a, b](g);
an assigned pair is matched when c[a, b](0, 0) < c*, the smallest count with more than
alpha N shuffles at or below it (alpha = `NULL_ALPHA`). In values of S: matched when
similarity > threshold[a, b], the c*-th largest of the S_g[a, b]. With B unrelated to A,
some pair of heads is called a match in at most a share alpha of the shuffles.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from detokgui.core.base.checks import as_int, check_count, check_token
from detokgui.core.base.errors import InputError
from detokgui.core.base.numbers import num
from detokgui.core.base.progress import Job, Progress, rescaled, run
from detokgui.core.compare.head_metrics import HEAD_METRICS, iter_head_metrics
from detokgui.core.model.conventions import sigma_stats_job
from detokgui.core.model.tokens import special_ids, token_strings
from detokgui.core.position_side.positional import mean_pattern
from detokgui.core.token_side.affinity import iter_topk_keys_of

DEFAULT_K = 10
DEFAULT_QUERIES = 256
POSITIONAL_WEIGHT = 0.5
#: The query position of the pattern comparison (clipped to both models' L - 1), as the
#: head classification's.
COMPARE_POSITION = 399
#: The family-wise level of "no match": with two unrelated models, the chance that any
#: pair of heads is called a match.
NULL_ALPHA = 0.05
#: The most shifts (besides 0) of the query sample in the affinity part of the null.
NULL_SHIFTS = 255
#: "no match" in one phrase, as the tables, figures and the window state it.
NO_MATCH_RULE = ("no match: S ≤ θ, where a B made unrelated to A (its patterns rotated over "
                 "the key positions, its top keys given to other query tokens) puts any "
                 "pair of heads above θ at most a share α of the time")
_MATCHINGS_KEY = "compare.matchings"


class SharedTokens(NamedTuple):
    """The same query tokens as ids in A and in B (equal lengths, same order)."""

    a: list[int]
    b: list[int]


class Pair:
    """Two layers A and B (`weights.Layer0`) compared: the token mapping between them.

    `same_tokenizer` is True when the two vocabularies hold the same token strings at the
    same ids (compared by value, not object identity); tokens then map by id. Otherwise
    by string. Layers without a tokenizer map by id when their vocabularies have the same
    size; otherwise tokens cannot be mapped (InputError)."""

    def __init__(self, a, b):
        self.a = a
        self.b = b

    def __repr__(self) -> str:
        return f"Pair({self.a.name!r}, {self.b.name!r})"

    def swapped(self) -> Pair:
        """B and A."""
        return Pair(self.b, self.a)

    # ------------------------------------------------------------------ tokens

    @functools.cached_property
    def _strings(self) -> tuple[list[str], list[str]] | None:

        if self.a.tokenizer is None or self.b.tokenizer is None:
            return None
        return (token_strings(self.a.tokenizer, self.a.n_vocab),
                token_strings(self.b.tokenizer, self.b.n_vocab))

    @functools.cached_property
    def same_tokenizer(self) -> bool:
        """Whether tokens map by id (the same vocabulary; see the class docstring)."""
        strings = self._strings
        if strings is None:
            if self.a.n_vocab != self.b.n_vocab:
                raise InputError(
                    f"{self.a.name} and {self.b.name} have vocabularies of different sizes "
                    f"({self.a.n_vocab}, {self.b.n_vocab}) and "
                    f"{'no tokenizer' if self.a.tokenizer is None and self.b.tokenizer is None else 'one has no tokenizer'}"
                    ", so their tokens cannot be matched.")
            return True
        return self.a.n_vocab == self.b.n_vocab and strings[0] == strings[1]

    def _map(self, src: list[str], dst: list[str]) -> np.ndarray:
        where: dict[str, int] = {}
        for i, s in enumerate(dst):
            if s and s not in where:
                where[s] = i
        return np.array([where.get(s, -1) if s else -1 for s in src], dtype=np.int64)

    @functools.cached_property
    def a_to_b(self) -> np.ndarray:
        """[V_A] int64: the id in B of each token of A, -1 where B lacks it."""
        if self.same_tokenizer:
            return np.arange(self.a.n_vocab, dtype=np.int64)
        return self._map(*self._strings)

    @functools.cached_property
    def b_to_a(self) -> np.ndarray:
        """[V_B] int64: the id in A of each token of B, -1 where A lacks it."""
        if self.same_tokenizer:
            return np.arange(self.b.n_vocab, dtype=np.int64)
        return self._map(self._strings[1], self._strings[0])

    def token_in_b(self, token_a: int) -> int | None:
        """The id in B of A's token `token_a`; None when B lacks it."""

        t = int(self.a_to_b[check_token(self.a, token_a)])
        return None if t < 0 else t

    def token_in_a(self, token_b: int) -> int | None:
        """The id in A of B's token `token_b`; None when A lacks it."""

        t = int(self.b_to_a[check_token(self.b, token_b)])
        return None if t < 0 else t

    def shared_query_sample(self, n: int = DEFAULT_QUERIES, seed: int = 0) -> SharedTokens:
        """A fixed seeded sample of at most n query tokens both vocabularies have (special
        tokens left out), as ids in A and in B, sorted by A's id. Same pair, n and seed:
        same sample."""

        n = check_count(n, "number of sampled query tokens")
        seed = as_int(seed, "seed")
        shared = np.flatnonzero(self.a_to_b >= 0)
        special_a = special_ids(self.a.tokenizer)
        special_b = special_ids(self.b.tokenizer)
        if special_a or special_b:
            keep = [i for i in shared.tolist()
                    if i not in special_a and int(self.a_to_b[i]) not in special_b]
            shared = np.asarray(keep, dtype=np.int64)
        if shared.size == 0:
            raise InputError(f"{self.a.name} and {self.b.name} share no token.")
        g = np.random.default_rng(seed)
        ids = np.sort(g.permutation(shared)[: min(n, shared.size)])
        return SharedTokens(ids.tolist(), self.a_to_b[ids].tolist())


# --------------------------------------------------------------------------- matching


@dataclass
class HeadMatching:
    """The similarity of every head a of A to every head b of B ((H_A, H_B) arrays in
    [0, 1], see the module docstring), the one-to-one assignment maximising it, and the
    null threshold under which an assigned pair has no match.

    `assignment` holds every pair of the assignment; `matched` says which of them are
    above their threshold. `match_of_a` / `match_of_b` give only matched heads (None
    otherwise); `assigned_of_a` / `assigned_of_b` the assignment's partner either way."""

    similarity: np.ndarray
    positional: np.ndarray
    affinity: np.ndarray
    assignment: list[tuple[int, int]]
    n: int  # the query position of the pattern comparison
    queries: SharedTokens
    k: int = DEFAULT_K
    positional_weight: float = POSITIONAL_WEIGHT
    seed: int = 0
    pattern_a: np.ndarray | None = field(default=None, repr=False)  # [H_A, n+1]
    pattern_b: np.ndarray | None = field(default=None, repr=False)  # [H_B, n+1]
    #: (H_A, H_B): S at or below it is what unrelated heads reach (module docstring)
    threshold: np.ndarray | None = field(default=None, repr=False)
    #: (H_A, H_B): the share of the N shuffles with S_g >= S, for this pair alone
    p_value: np.ndarray | None = field(default=None, repr=False)
    #: (H_A, H_B): the family-wise (min-p) p-value: the share of shuffles in which some
    #: pair of heads has a p-value as small; matched where <= alpha
    p_adjusted: np.ndarray | None = field(default=None, repr=False)
    alpha: float = NULL_ALPHA
    #: the null's two parts: positional overlaps [H_A, H_B, rotations] and key agreements
    #: [H_A, H_B, shifts], the observed value first (rotation 0, shift 0)
    null_positional: np.ndarray | None = field(default=None, repr=False)
    null_affinity: np.ndarray | None = field(default=None, repr=False)

    @property
    def shape(self) -> tuple[int, int]:
        return self.similarity.shape

    def is_matched(self, head_a: int, head_b: int) -> bool:
        """Whether S[head_a, head_b] is above its threshold (for any pair of heads, assigned
        or not)."""
        a, b = int(head_a), int(head_b)
        return bool(self.similarity[a, b] > self.threshold[a, b])

    @property
    def matched(self) -> list[bool]:
        """For each pair of `assignment`, in its order: above its threshold."""
        return [self.is_matched(a, b) for a, b in self.assignment]

    @property
    def matched_pairs(self) -> list[tuple[int, int]]:
        """The pairs of the assignment above their threshold."""
        return [p for p, ok in zip(self.assignment, self.matched) if ok]

    def match_of_a(self, head_a: int) -> int | None:
        """B's head matched to A's head `head_a`; None when it has no match: unassigned
        (H_A > H_B) or its assigned head's similarity is at or below the threshold."""
        return dict(self.matched_pairs).get(int(head_a))

    def match_of_b(self, head_b: int) -> int | None:
        """A's head matched to B's head `head_b`; None when it has no match (see
        `match_of_a`)."""
        return {b: a for a, b in self.matched_pairs}.get(int(head_b))

    def assigned_of_a(self, head_a: int) -> int | None:
        """B's head that the assignment pairs with A's head `head_a`, matched or not (None:
        unassigned, when H_A > H_B)."""
        return dict(self.assignment).get(int(head_a))

    def assigned_of_b(self, head_b: int) -> int | None:
        """A's head that the assignment pairs with B's head `head_b`, matched or not."""
        return {b: a for a, b in self.assignment}.get(int(head_b))

    def assigned(self) -> np.ndarray:
        """(H_A, H_B) int array: 1 for the pairs of the assignment, else 0."""
        out = np.zeros(self.shape, dtype=np.int64)
        for a, b in self.assignment:
            out[a, b] = 1
        return out

    def matched_array(self) -> np.ndarray:
        """(H_A, H_B) int array: 1 for the pairs of the assignment above their threshold."""
        out = np.zeros(self.shape, dtype=np.int64)
        for a, b in self.matched_pairs:
            out[a, b] = 1
        return out

    @property
    def shuffles(self) -> int:
        """N, the number of shuffles of B in the null (rotations x shifts, with (0, 0))."""
        return int(self.null_positional.shape[2] * self.null_affinity.shape[2])

    def rule(self) -> str:
        """How the threshold was obtained, in one phrase with its level and range."""
        t = self.threshold
        return (f"{NO_MATCH_RULE} (α = {self.alpha:g}, min-p over {self.shuffles:,} "
                f"shuffles of B); θ here {float(t.min()):.3f}–{float(t.max()):.3f}")

    def inequality(self, head_a: int, head_b: int) -> str:
        """"S 0.981 > θ 0.203" or "S 0.137 ≤ θ 0.168" for a pair of heads."""
        a, b = int(head_a), int(head_b)
        s, t = float(self.similarity[a, b]), float(self.threshold[a, b])
        return f"S {s:.3f} {'>' if s > t else '≤'} θ {t:.3f}"

    def verdict(self, head_a: int, head_b: int) -> str:
        """"matched: S 0.981 > θ 0.203" or "no match: S 0.137 ≤ θ 0.168"."""
        word = "matched" if self.is_matched(head_a, head_b) else "no match"
        return f"{word}: {self.inequality(head_a, head_b)}"

    def describe(self, head_a: int, head_b: int) -> str:
        """A pair of heads as the matching's heatmap names its cell: similarity and its
        two parts, the verdict ("assigned, matched: …") for a pair of the assignment, else
        the inequality, and the pair's p-values."""
        a, b = int(head_a), int(head_b)
        if self.assigned_of_a(a) == b:
            verdict = " · assigned, " + self.verdict(a, b)
        else:
            verdict = " · " + self.inequality(a, b)
        return (f"A head {a} × B head {b}: similarity {num(float(self.similarity[a][b]))} "
                f"(positional {num(float(self.positional[a][b]))}, affinity "
                f"{num(float(self.affinity[a][b]))}){verdict}; p {float(self.p_value[a][b]):.2g}, "
                f"family-wise {float(self.p_adjusted[a][b]):.2g}")

    def with_alpha(self, alpha: float) -> HeadMatching:
        """The same matching with the threshold at another family-wise level."""
        alpha = check_alpha(alpha)
        if alpha == self.alpha:
            return self
        thr, p, adj = null_threshold(self.similarity, self.null_positional,
                                     self.null_affinity, self.positional_weight, alpha)
        return replace(self, threshold=thr, p_value=p, p_adjusted=adj, alpha=alpha)

    def swapped(self) -> HeadMatching:
        """The same matching seen from B (B's heads first). The null is symmetric: rotating
        B's patterns by s is rotating A's by -s, shifting B's queries by r is shifting A's
        by -r: the same shuffles, the same thresholds."""

        def t(x):
            return None if x is None else np.ascontiguousarray(np.swapaxes(x, 0, 1))

        return HeadMatching(t(self.similarity), t(self.positional), t(self.affinity),
                            sorted((b, a) for a, b in self.assignment), self.n,
                            SharedTokens(self.queries.b, self.queries.a), self.k,
                            self.positional_weight, self.seed, self.pattern_b, self.pattern_a,
                            t(self.threshold), t(self.p_value), t(self.p_adjusted), self.alpha,
                            t(self.null_positional), t(self.null_affinity))


def check_alpha(alpha) -> float:
    """alpha as a float in (0, 1), else InputError."""
    try:
        x = float(alpha)
    except (TypeError, ValueError):
        x = float("nan")
    if not 0.0 < x < 1.0:
        raise InputError(f"The no-match level alpha must be between 0 and 1, not {alpha!r}.")
    return x


def pattern_overlap(pa: np.ndarray, pb: np.ndarray) -> np.ndarray:
    """sum_j min(pa[a, j], pb[b, j]) for every a, b: [H_A, H_B] in [0, 1]."""
    return np.clip(np.minimum(pa[:, None, :], pb[None, :, :]).sum(-1), 0.0, 1.0)


def top_key_agreement(top_a_in_b: np.ndarray, top_b: np.ndarray) -> np.ndarray:
    """mean_u |top_a(u) & top_b(u)| / k for every head pair: [H_A, H_B].

    top_a_in_b [H_A, S, k]: A's top keys as B's ids (-1 = missing in B, never agrees);
    top_b [H_B, S, k]."""
    k = top_b.shape[-1]
    Ha = top_a_in_b.shape[0]
    out = np.empty((Ha, top_b.shape[0]))
    for a in range(Ha):  # [H_B, S, k, k] per head of A
        eq = top_a_in_b[a][None, :, :, None] == top_b[:, :, None, :]
        out[a] = eq.any(-1).sum(-1).mean(-1) / k
    return out


def rotated_overlap(pa: np.ndarray, pb: np.ndarray) -> np.ndarray:
    """The positional part of the null: sum_j min(pa[a, j], pb[b, (j + s) mod (n+1)]) for
    every a, b and every rotation s = 0..n of B's pattern over the key positions,
    [H_A, H_B, n+1] in [0, 1] (s = 0: `pattern_overlap`)."""
    n1 = pa.shape[1]
    rolled = pb[:, (np.arange(n1)[None, :] + np.arange(n1)[:, None]) % n1]  # [H_B, s, j]
    out = np.empty((pa.shape[0], pb.shape[0], n1))
    for a in range(pa.shape[0]):
        out[a] = np.minimum(pa[a], rolled).sum(-1)
    return np.clip(out, 0.0, 1.0)


def query_shifts(size: int, most: int = NULL_SHIFTS) -> np.ndarray:
    """The shifts r of a sample of `size` query tokens in the affinity part of the null:
    0 (the observed pairing), then 1..size-1, or `most` of them evenly spread."""
    if size - 1 <= most:
        return np.arange(size, dtype=np.int64)
    return np.concatenate([[0], np.unique(np.linspace(1, size - 1, most).round()
                                          .astype(np.int64))])


def shifted_agreement(top_a_in_b: np.ndarray, top_b: np.ndarray, shifts) -> np.ndarray:
    """mean_i |top_a(u_i) & top_b(u_(i+r) mod S)| / k for every head pair and every shift
    r of `shifts`: A's top keys for one query against B's for another, [H_A, H_B, R].
    r = 0 is `top_key_agreement`. top_a_in_b [H_A, S, k] (B's ids, -1 = missing in B),
    top_b [H_B, S, k].

    Only keys in both models' lists can agree: each head's (query row, key) entries
    become columns of a sparse indicator, B's rows moved back by r, and one sparse
    product per batch of shifts counts the agreements of every pair of heads."""
    from scipy import sparse

    Ha, S, k = top_a_in_b.shape
    Hb = top_b.shape[0]
    shifts = np.asarray(shifts, dtype=np.int64)
    out = np.zeros((Ha, Hb, shifts.size))
    common = np.intersect1d(top_a_in_b[top_a_in_b >= 0], top_b)
    if common.size == 0:
        return out
    K = common.size

    def entries(top):  # (head, row, key index) of the keys in `common`
        at = np.minimum(np.searchsorted(common, top), K - 1)
        ok = common[at] == top
        head, row, _ = np.nonzero(ok)
        return head, row, at[ok]

    ha, ia, ka = entries(top_a_in_b)
    Xt = sparse.csr_matrix((np.ones(ha.size), (ia * K + ka, ha)), shape=(S * K, Ha))
    Xt.data[:] = 1.0  # two of A's ids named the same in B count once, as in top_key_agreement
    hb, ib, kb = entries(top_b)  # head-major
    per_head = np.bincount(hb, minlength=Hb)
    step = max(1, (1 << 22) // max(1, hb.size))
    for lo in range(0, shifts.size, step):
        rs = shifts[lo : lo + step]
        cols = ((ib[None, :] - rs[:, None]) % S) * K + kb[None, :]  # [R, entries]
        # rows (b, r), b-major: each row is head b's entries at shift r, built in order
        indices = np.concatenate([c.ravel() for c in np.split(cols, np.cumsum(per_head)[:-1],
                                                               axis=1)])
        indptr = np.concatenate([[0], np.cumsum(np.repeat(per_head, rs.size))])
        Y = sparse.csr_matrix((np.ones(indices.size), indices, indptr),
                              shape=(Hb * rs.size, S * K))
        agree = (Y @ Xt).toarray().reshape(Hb, rs.size, Ha)  # [b, r, a]
        out[:, :, lo : lo + rs.size] = agree.transpose(2, 0, 1)
    return out / (S * k)


def null_threshold(similarity: np.ndarray, null_positional: np.ndarray,
                   null_affinity: np.ndarray, positional_weight: float, alpha: float
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(threshold, p_value, p_adjusted), each (H_A, H_B), from the shuffles g = (s, r) of
    B: S_g = w null_positional[..., s] + (1 - w) null_affinity[..., r], (0, 0) the
    observed similarity (module docstring). For each pair of heads, c(g) = #{g': S_g' >=
    S_g}; least(g) = min over the pairs of c(g); c* = the smallest least(g) with more than
    alpha N shuffles at or below it. threshold = the (N - c* + 1)-th smallest S_g, so that
    similarity > threshold exactly when c(0, 0) < c*; p_value = c(0, 0) / N; p_adjusted =
    #{g: least(g) <= c(0, 0)} / N, <= alpha exactly where similarity > threshold."""
    Ha, Hb = similarity.shape
    w = float(positional_weight)
    N = null_positional.shape[2] * null_affinity.shape[2]
    keep = min(N, math.floor(alpha * N) + 1)  # the largest values a threshold can be
    least = np.full(N, N, dtype=np.int64)
    counts = np.empty((Ha, Hb), dtype=np.int64)
    tops = np.empty((Ha, Hb, keep))

    def values(a, b):
        return (w * null_positional[a, b][:, None]
                + (1.0 - w) * null_affinity[a, b][None, :]).ravel()

    for a in range(Ha):
        for b in range(Hb):
            v = values(a, b)
            ordered = np.sort(v)
            at_or_above = N - np.searchsorted(ordered, v, side="left")
            np.minimum(least, at_or_above, out=least)
            counts[a, b] = at_or_above[0]
            tops[a, b] = ordered[N - keep :]
    least.sort()
    c_star = int(least[math.floor(alpha * N)])
    threshold = np.empty((Ha, Hb))
    for a in range(Ha):
        for b in range(Hb):
            # the c*-th largest value: above it, at most c* - 1 shuffles are at or above S
            threshold[a, b] = (tops[a, b, keep - c_star] if c_star <= keep
                               else np.partition(values(a, b), N - c_star)[N - c_star])
    p_adjusted = np.searchsorted(least, counts, side="right") / N
    return threshold, counts / N, p_adjusted


def iter_match_heads(pair: Pair, *, n_queries: int = DEFAULT_QUERIES, seed: int = 0,
                     k: int = DEFAULT_K, positional_weight: float = POSITIONAL_WEIGHT,
                     alpha: float = NULL_ALPHA) -> Job[HeadMatching]:
    """Generator job: the `HeadMatching` of A's heads to B's (module docstring), "no
    match" at the family-wise level `alpha`. Cancellable between yields (one per model
    step and per head). Kept on layer A per layer B (weakly: B is not held) and
    parameters."""
    import weakref

    n_queries = check_count(n_queries, "number of sampled query tokens")
    seed, k = as_int(seed, "seed"), check_count(k, "k")
    alpha = check_alpha(alpha)
    try:
        w = float(positional_weight)
    except (TypeError, ValueError):
        w = float("nan")
    if not 0.0 <= w <= 1.0:
        raise InputError(f"The positional weight must be in 0..1, not {positional_weight!r}.")
    key = (n_queries, seed, k, w)
    per_b = pair.a.cached(_MATCHINGS_KEY, weakref.WeakKeyDictionary)
    known = per_b.setdefault(pair.b, {})
    if key not in known:
        known[key] = yield from _iter_match_heads(pair, n_queries=n_queries, seed=seed, k=k,
                                                  positional_weight=w)
    else:
        yield Progress(1.0, "matched heads")
    return known[key].with_alpha(alpha)


def _iter_match_heads(pair: Pair, *, n_queries: int, seed: int, k: int,
                      positional_weight: float) -> Job[HeadMatching]:
    import torch
    from scipy.optimize import linear_sum_assignment


    w = positional_weight
    a, b = pair.a, pair.b
    yield Progress(0.0, "mapping the vocabularies")
    queries = pair.shared_query_sample(n_queries, seed)
    n = min(COMPARE_POSITION, a.n_positions - 1, b.n_positions - 1)
    steps = ((a, queries.a, "A", 0.0), (b, queries.b, "B", 0.47))
    patterns, tops = [], []
    same = a is b
    for layer, ids, label, lo in steps:
        if same and patterns:  # a model against itself: computed once
            patterns.append(patterns[0])
            tops.append(tops[0])
            continue
        yield from rescaled(sigma_stats_job(layer), lo, lo + 0.1)
        with torch.inference_mode():
            patterns.append(mean_pattern(layer, ids, n))
        yield Progress(lo + 0.15, f"positional patterns of {label}")
        tops.append((yield from rescaled(iter_topk_keys_of(layer, ids, k), lo + 0.15, lo + 0.47)))
    positional = pattern_overlap(patterns[0], patterns[1])
    top_a_in_b = np.where(tops[0] >= 0, pair.a_to_b[tops[0]], -1)
    affinity = top_key_agreement(top_a_in_b, tops[1])
    similarity = w * positional + (1.0 - w) * affinity
    rows, cols = linear_sum_assignment(similarity, maximize=True)
    yield Progress(0.92, "the null: B's heads made unrelated")
    null_pos = rotated_overlap(patterns[0], patterns[1])
    # one seeded order of the sample for both models: the shifts pair unrelated tokens
    order = np.random.default_rng(seed).permutation(top_a_in_b.shape[1])
    null_aff = shifted_agreement(top_a_in_b[:, order], tops[1][:, order],
                                 query_shifts(order.size))
    null_pos[:, :, 0], null_aff[:, :, 0] = positional, affinity  # (0, 0): S itself, exactly
    threshold, p_value, p_adjusted = null_threshold(similarity, null_pos, null_aff, w,
                                                    NULL_ALPHA)
    yield Progress(1.0, "matched heads")
    return HeadMatching(similarity, positional, affinity,
                        [(int(r), int(c)) for r, c in zip(rows, cols)], n, queries, k, w, seed,
                        patterns[0], patterns[1], threshold, p_value, p_adjusted, NULL_ALPHA,
                        null_pos, null_aff)


def match_heads(pair: Pair, **kwargs) -> HeadMatching:
    """`iter_match_heads` run to completion."""

    return run(iter_match_heads(pair, **kwargs))


# --------------------------------------------------------------------------- comparison


@dataclass
class Comparison:
    """A matching and the head metrics (`core.compare.head_metrics`) of both models."""

    matching: HeadMatching
    metrics_a: dict
    metrics_b: dict


def iter_compare(pair: Pair, *, counts_a=None, counts_b=None, n_queries: int = DEFAULT_QUERIES,
                 seed: int = 0, k: int = DEFAULT_K, positional_weight: float = POSITIONAL_WEIGHT,
                 alpha: float = NULL_ALPHA) -> Job[Comparison]:
    """Generator job: `iter_match_heads` and `head_metrics.iter_head_metrics` of A and of
    B (with their corpus counts, each counted with its own tokenizer; None: no corpus)."""

    m = yield from rescaled(iter_match_heads(pair, n_queries=n_queries, seed=seed, k=k,
                                             positional_weight=positional_weight, alpha=alpha),
                            0.0, 0.4)
    ma = yield from rescaled(iter_head_metrics(pair.a, counts=counts_a, n_queries=n_queries,
                                               seed=seed), 0.4, 0.7)
    if pair.a is pair.b and counts_b is counts_a:
        mb = ma
    else:
        mb = yield from rescaled(iter_head_metrics(pair.b, counts=counts_b,
                                                   n_queries=n_queries, seed=seed), 0.7, 1.0)
    return Comparison(m, ma, mb)


MATCHING_COLUMNS = ["head_a", "head_b", "similarity", "positional", "affinity", "assigned",
                    "threshold", "p_value", "p_adjusted", "matched"]
METRIC_PAIR_COLUMNS = ["head_a", "head_b", "metric", "value_a", "value_b", "difference",
                       "matched"]


def matching_table(matching: HeadMatching):
    """head_a,head_b,similarity,positional,affinity,assigned,threshold,p_value,p_adjusted,
    matched: one row per pair of heads (A's head major); assigned 1 for the pairs of the
    assignment, matched 1 for those of them above their threshold (at or below: no
    match)."""
    assigned = matching.assigned()
    matched = matching.matched_array()

    def rows():
        Ha, Hb = matching.shape
        for a in range(Ha):
            for b in range(Hb):
                yield (a, b, float(matching.similarity[a, b]), float(matching.positional[a, b]),
                       float(matching.affinity[a, b]), int(assigned[a, b]),
                       float(matching.threshold[a, b]), float(matching.p_value[a, b]),
                       float(matching.p_adjusted[a, b]), int(matched[a, b]))

    return list(MATCHING_COLUMNS), rows()


def metric_pairs(matching: HeadMatching, metrics_a: dict, metrics_b: dict) -> list[tuple]:
    """(head_a, head_b, metric, value_a, value_b, difference = value_b - value_a, matched)
    for every assigned pair and every metric of `head_metrics.HEAD_METRICS` (NaN where a
    metric is NaN: a corpus metric without a corpus); matched 0 for a pair with no match
    (its values are those of two heads no more alike than unrelated ones)."""

    out = []
    for (a, b), ok in sorted(zip(matching.assignment, matching.matched)):
        for m in HEAD_METRICS:
            va, vb = float(metrics_a[m][a]), float(metrics_b[m][b])
            out.append((a, b, m, va, vb, vb - va, int(ok)))
    return out


def metric_pairs_table(comparison: Comparison):
    """head_a,head_b,metric,value_a,value_b,difference,matched (see `metric_pairs`)."""
    return (list(METRIC_PAIR_COLUMNS),
            iter(metric_pairs(comparison.matching, comparison.metrics_a, comparison.metrics_b)))
