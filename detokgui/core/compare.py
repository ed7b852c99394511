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
The matching is the one-to-one assignment maximising the summed similarity
(`scipy.optimize.linear_sum_assignment`; min(H_A, H_B) pairs). No V x V matrix is formed:
the top-k are streamed per head over chunks of the sample.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from detokgui.core.checks import as_int, check_count
from detokgui.core.errors import InputError
from detokgui.core.progress import Job, Progress, rescaled

DEFAULT_K = 10
DEFAULT_QUERIES = 256
POSITIONAL_WEIGHT = 0.5
#: The query position of the pattern comparison (clipped to both models' L - 1), as the
#: head classification's.
COMPARE_POSITION = 399
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
        from detokgui.core.tokens import token_strings

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
        from detokgui.core.checks import check_token

        t = int(self.a_to_b[check_token(self.a, token_a)])
        return None if t < 0 else t

    def token_in_a(self, token_b: int) -> int | None:
        """The id in A of B's token `token_b`; None when A lacks it."""
        from detokgui.core.checks import check_token

        t = int(self.b_to_a[check_token(self.b, token_b)])
        return None if t < 0 else t

    def shared_query_sample(self, n: int = DEFAULT_QUERIES, seed: int = 0) -> SharedTokens:
        """A fixed seeded sample of at most n query tokens both vocabularies have (special
        tokens left out), as ids in A and in B, sorted by A's id. Same pair, n and seed:
        same sample."""
        from detokgui.core.tokens import special_ids

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
    [0, 1], see the module docstring) and the one-to-one assignment maximising it."""

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

    @property
    def shape(self) -> tuple[int, int]:
        return self.similarity.shape

    def match_of_a(self, head_a: int) -> int | None:
        """B's head matched to A's head `head_a` (None: unmatched, when H_A > H_B)."""
        return dict(self.assignment).get(int(head_a))

    def match_of_b(self, head_b: int) -> int | None:
        """A's head matched to B's head `head_b` (None: unmatched, when H_B > H_A)."""
        return {b: a for a, b in self.assignment}.get(int(head_b))

    def assigned(self) -> np.ndarray:
        """(H_A, H_B) int array: 1 for the pairs of the assignment, else 0."""
        out = np.zeros(self.shape, dtype=np.int64)
        for a, b in self.assignment:
            out[a, b] = 1
        return out

    def swapped(self) -> HeadMatching:
        """The same matching seen from B (B's heads first)."""
        return HeadMatching(self.similarity.T.copy(), self.positional.T.copy(),
                            self.affinity.T.copy(), sorted((b, a) for a, b in self.assignment),
                            self.n, SharedTokens(self.queries.b, self.queries.a), self.k,
                            self.positional_weight, self.seed, self.pattern_b, self.pattern_a)


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


def iter_match_heads(pair: Pair, *, n_queries: int = DEFAULT_QUERIES, seed: int = 0,
                     k: int = DEFAULT_K, positional_weight: float = POSITIONAL_WEIGHT
                     ) -> Job[HeadMatching]:
    """Generator job: the `HeadMatching` of A's heads to B's (module docstring).
    Cancellable between yields (one per model step and per head). Kept on layer A per
    layer B (weakly: B is not held) and parameters."""
    import weakref

    n_queries = check_count(n_queries, "number of sampled query tokens")
    seed, k = as_int(seed, "seed"), check_count(k, "k")
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
                                                  positional_weight=positional_weight)
    else:
        yield Progress(1.0, "matched heads")
    return known[key]


def _iter_match_heads(pair: Pair, *, n_queries: int, seed: int, k: int,
                      positional_weight: float) -> Job[HeadMatching]:
    import torch
    from scipy.optimize import linear_sum_assignment

    from detokgui.core.affinity import iter_topk_keys_of
    from detokgui.core.conventions import sigma_stats_job
    from detokgui.core.positional import mean_pattern

    w = positional_weight
    a, b = pair.a, pair.b
    yield Progress(0.0, "mapping the vocabularies")
    queries = pair.shared_query_sample(n_queries, seed)
    n = min(COMPARE_POSITION, a.n_positions - 1, b.n_positions - 1)
    steps = ((a, queries.a, "A", 0.0), (b, queries.b, "B", 0.5))
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
        tops.append((yield from rescaled(iter_topk_keys_of(layer, ids, k), lo + 0.15, lo + 0.5)))
    positional = pattern_overlap(patterns[0], patterns[1])
    top_a_in_b = np.where(tops[0] >= 0, pair.a_to_b[tops[0]], -1)
    affinity = top_key_agreement(top_a_in_b, tops[1])
    similarity = w * positional + (1.0 - w) * affinity
    rows, cols = linear_sum_assignment(similarity, maximize=True)
    yield Progress(1.0, "matched heads")
    return HeadMatching(similarity, positional, affinity,
                        [(int(r), int(c)) for r, c in zip(rows, cols)], n, queries, k, w, seed,
                        patterns[0], patterns[1])


def match_heads(pair: Pair, **kwargs) -> HeadMatching:
    """`iter_match_heads` run to completion."""
    from detokgui.core.progress import run

    return run(iter_match_heads(pair, **kwargs))


# --------------------------------------------------------------------------- comparison


@dataclass
class Comparison:
    """A matching and the head metrics (`core.head_metrics`) of both models."""

    matching: HeadMatching
    metrics_a: dict
    metrics_b: dict


def iter_compare(pair: Pair, *, counts_a=None, counts_b=None, n_queries: int = DEFAULT_QUERIES,
                 seed: int = 0, k: int = DEFAULT_K,
                 positional_weight: float = POSITIONAL_WEIGHT) -> Job[Comparison]:
    """Generator job: `iter_match_heads` and `head_metrics.iter_head_metrics` of A and of
    B (with their corpus counts, each counted with its own tokenizer; None: no corpus)."""
    from detokgui.core.head_metrics import iter_head_metrics

    m = yield from rescaled(iter_match_heads(pair, n_queries=n_queries, seed=seed, k=k,
                                             positional_weight=positional_weight), 0.0, 0.4)
    ma = yield from rescaled(iter_head_metrics(pair.a, counts=counts_a, n_queries=n_queries,
                                               seed=seed), 0.4, 0.7)
    if pair.a is pair.b and counts_b is counts_a:
        mb = ma
    else:
        mb = yield from rescaled(iter_head_metrics(pair.b, counts=counts_b,
                                                   n_queries=n_queries, seed=seed), 0.7, 1.0)
    return Comparison(m, ma, mb)


def matching_table(matching: HeadMatching):
    """head_a,head_b,similarity,positional,affinity,assigned: one row per pair of heads
    (A's head major)."""
    assigned = matching.assigned()

    def rows():
        Ha, Hb = matching.shape
        for a in range(Ha):
            for b in range(Hb):
                yield (a, b, float(matching.similarity[a, b]), float(matching.positional[a, b]),
                       float(matching.affinity[a, b]), int(assigned[a, b]))

    return ["head_a", "head_b", "similarity", "positional", "affinity", "assigned"], rows()


def metric_pairs(matching: HeadMatching, metrics_a: dict, metrics_b: dict) -> list[tuple]:
    """(head_a, head_b, metric, value_a, value_b, difference = value_b - value_a) for
    every assigned pair and every metric of `head_metrics.HEAD_METRICS` (NaN where a
    metric is NaN: a corpus metric without a corpus)."""
    from detokgui.core.head_metrics import HEAD_METRICS

    out = []
    for a, b in sorted(matching.assignment):
        for m in HEAD_METRICS:
            va, vb = float(metrics_a[m][a]), float(metrics_b[m][b])
            out.append((a, b, m, va, vb, vb - va))
    return out


def metric_pairs_table(comparison: Comparison):
    """head_a,head_b,metric,value_a,value_b,difference (see `metric_pairs`)."""
    return (["head_a", "head_b", "metric", "value_a", "value_b", "difference"],
            iter(metric_pairs(comparison.matching, comparison.metrics_a, comparison.metrics_b)))
