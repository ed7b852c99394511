"""What the window's comparison views show, for a pair of models A and B
(core.compare.pair.Pair) and a pair of heads (h in A, h' in B, usually matched):

- top-k keys of the query token u in both models side by side, each key with its rank in
  the other model: for a key v of A, with u' and v' the tokens of u and v in B,

      rank_B(v) = 1 + #{w in B's vocabulary : T^B_ee(u', w) > T^B_ee(u', v')}

  from one query row of B (V scores for one head; never a V x V matrix); None when B lacks
  u or v. The same the other way round.
- the positional pattern (B4) of u in both, B's at n' = min(n, L_B - 1), aligned by the
  distance back from the query (n - j).
- per-head metric pairs: a metric of A's head next to the same metric of B's head.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from detokgui.core.base.checks import check_heads, check_token
from detokgui.core.base.numbers import num
from detokgui.core.base.progress import Job, Progress
from detokgui.core.base.tables import Table
from detokgui.core.compare.head_metrics import iter_head_metrics
from detokgui.core.compare.pair_texts import MISSING
from detokgui.core.corpus.counts import iter_layer_counts
from detokgui.core.model.conventions import DEFAULT_POSITION_CONVENTION, SigmaChoice, token_sigmas
from detokgui.core.position_side.positional import (
    PositionalPattern,
    iter_classify_heads,
    positional_pattern,
)
from detokgui.core.token_side.affinity import DEFAULT_SIGMA, topk_keys


def warm_pair(pair):
    """The pair with its token maps made (both directions): done in a worker, so that the
    first token mapped on the GUI thread costs nothing."""
    pair.a_to_b, pair.b_to_a  # noqa: B018 - cached properties, computed here
    return pair


def swapped_pair(pair):
    """`pair.swapped()` (B and A) with the token maps the pair has made already handed
    over, not made again."""
    out = pair.swapped()
    made = vars(pair)
    for name, theirs in (("a_to_b", "b_to_a"), ("b_to_a", "a_to_b"),
                         ("same_tokenizer", "same_tokenizer")):
        if theirs in made:
            vars(out)[name] = made[theirs]
    if made.get("_strings") is not None:
        vars(out)["_strings"] = made["_strings"][::-1]
    return out


@torch.no_grad()
def key_scores(layer, query: int, head: int, sigma: SigmaChoice = DEFAULT_SIGMA) -> torch.Tensor:
    """T_ee(query, v) for every key v of one head, [V] (one query row)."""
    u = check_token(layer, query)
    (h,) = check_heads(layer, [head])
    a = layer.Wk[h] @ (layer.E[u] @ layer.Wq[h])  # [d]
    s = layer.E @ a  # [V]
    s_keys = token_sigmas(layer, sigma, "key")
    if s_keys is not None:
        s_query = token_sigmas(layer, sigma, "query")[u]
        s = s / s_keys / s_query
    return s


def ranks_in_row(scores: torch.Tensor, ids) -> list[int | None]:
    """1 + #{w : scores[w] > scores[v]} for each v of `ids` (None stays None)."""
    return [None if v is None else int((scores > scores[v]).sum()) + 1 for v in ids]


@dataclass
class TopKSide:
    """One model's top-k keys of the query and where they rank in the other model."""

    query: int | None  # the query token in this model; None: the model lacks it
    head: int
    keys: list[int]
    scores: list[float]
    keys_in_other: list[int | None]  # each key's id in the other model, None: missing
    rank_in_other: list[int | None]  # its rank there (None: key or query missing there)


@dataclass
class SideBySideTopK:
    k: int
    sigma: SigmaChoice
    a: TopKSide
    b: TopKSide

    def rows(self) -> list[dict]:
        """Row r: A's r-th key and B's r-th key, each with its rank in the other model."""
        out = []
        for r in range(self.k):
            row = {"rank": r + 1}
            for name, side in (("a", self.a), ("b", self.b)):
                have = r < len(side.keys)
                row[f"key_{name}"] = side.keys[r] if have else None
                row[f"score_{name}"] = side.scores[r] if have else None
                row[f"rank_{name}_in_other"] = side.rank_in_other[r] if have else None
                row[f"key_{name}_in_other"] = side.keys_in_other[r] if have else None
            out.append(row)
        return out


def other_rank(row: dict, side: str, missing: str) -> str | int:
    """The cell "its rank in the other model" of a `SideBySideTopK.rows()` row for side
    "a" or "b": the rank; `missing` when the other model lacks the key; "–" when it lacks
    the query (no ranking there); "" on an empty row."""
    if row[f"key_{side}"] is None:
        return ""
    if row[f"key_{side}_in_other"] is None:
        return missing
    rank = row[f"rank_{side}_in_other"]
    return "–" if rank is None else rank


def _side(layer, other, query, head, other_query, other_head, k, sigma, to_other
          ) -> TopKSide:
    if query is None:
        return TopKSide(None, head, [], [], [], [])
    top = topk_keys(layer, query, k, sigma, heads=[head])
    keys = top.ids[0].tolist()
    mapped = [to_other(v) for v in keys]
    if other_query is None:
        ranks = [None] * len(keys)
    else:
        ranks = ranks_in_row(key_scores(other, other_query, other_head, sigma), mapped)
    return TopKSide(query, head, keys, top.scores[0].tolist(), mapped, ranks)


def side_by_side_topk(pair, query_a: int, head_a: int, head_b: int, k: int = 10,
                      sigma: SigmaChoice = DEFAULT_SIGMA) -> SideBySideTopK:
    """Top-k keys of `query_a` (an id of A) for A's head `head_a` and, with the query's id
    in B, B's head `head_b`; every key ranked in the other model (module docstring)."""
    a, b = pair.a, pair.b
    query_b = pair.token_in_b(int(query_a))
    side_a = _side(a, b, int(query_a), head_a, query_b, head_b, k, sigma, pair.token_in_b)
    side_b = _side(b, a, query_b, head_b, int(query_a), head_a, k, sigma, pair.token_in_a)
    return SideBySideTopK(k, sigma, side_a, side_b)


@dataclass
class MatchedTopK:
    """Top-k keys of the query in A and (its token in B) in B for every pair of heads of
    an assignment: ids_a[p], ids_b[p] are the keys of pair p = (head_a, head_b); ids_b is
    None when B lacks the query."""

    query_a: int
    query_b: int | None
    pairs: list[tuple[int, int]]
    ids_a: list[list[int]]
    ids_b: list[list[int]] | None


def matched_topk(pair, query_a: int, assignment, k: int = 10,
                 sigma: SigmaChoice = DEFAULT_SIGMA) -> MatchedTopK:
    """`MatchedTopK` for the pairs of `assignment` (A's head order), one [V, d] @ [d, H]
    product per model."""
    pairs = sorted((int(a), int(b)) for a, b in assignment)
    top_a = topk_keys(pair.a, int(query_a), k, sigma)
    ids_a = [top_a.ids[top_a.heads.index(a)].tolist() for a, _ in pairs]
    query_b = pair.token_in_b(int(query_a))
    ids_b = None
    if query_b is not None:
        top_b = topk_keys(pair.b, query_b, k, sigma)
        ids_b = [top_b.ids[top_b.heads.index(b)].tolist() for _, b in pairs]
    return MatchedTopK(int(query_a), query_b, pairs, ids_a, ids_b)


@dataclass
class PatternPair:
    """B4 patterns of the query in A (at n) and in B (at n_b <= n; None when B lacks the
    query); `offset_b` = n - n_b places B's key j at A's position j + offset_b."""

    a: PositionalPattern
    b: PositionalPattern | None
    offset_b: int

    def curves(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """"A" and, when B has the query, "B" -> (A's key positions, weights)."""
        out = {"A": (np.arange(self.a.n + 1), self.a.pattern[0])}
        if self.b is not None:
            out["B"] = (np.arange(self.b.n + 1) + self.offset_b, self.b.pattern[0])
        return out

    def table(self) -> Table:
        """model,key_position,weight of both curves."""
        return (["model", "key_position", "weight"],
                [(name, int(x), float(w)) for name, (xs, ws) in self.curves().items()
                 for x, w in zip(xs, ws)])

    def total_variation(self) -> float:
        """½ Σ_j |a_{j + offset_b} − b_j| over B's keys j = 0..n_b (B present)."""
        return 0.5 * float(np.abs(self.a.pattern[0][self.offset_b:] - self.b.pattern[0]).sum())

    def summary(self, query_text: str) -> str:
        """One line on the pair: the total variation between the curves (and whether B's
        context is shorter), or that B lacks the query (`query_text`: its text)."""
        if self.b is None:
            return f"The query {query_text} is {MISSING}: only A's pattern is drawn."
        where = (f"; B's context is shorter: its pattern at n = {self.b.n}, aligned to n"
                 if self.offset_b else "")
        return f"Total variation between the curves {num(self.total_variation())}{where}"

    def describe(self, j: int) -> str:
        """A's key position j <= n: its weight in A and, where B's curve reaches it, in B."""
        parts = [f"key j = {j} ({self.a.n - j} back)   A: {num(self.a.pattern[0][j])}"]
        if self.b is not None and 0 <= j - self.offset_b <= self.b.n:
            parts.append(f"B: {num(self.b.pattern[0][j - self.offset_b])}")
        return "   ".join(parts)


def pattern_pair(pair, query_a: int, n: int, head_a: int, head_b: int,
                 convention: str = DEFAULT_POSITION_CONVENTION) -> PatternPair:
    a = positional_pattern(pair.a, query_a, n, heads=[head_a], convention=convention)
    query_b = pair.token_in_b(int(query_a))
    n_b = min(int(n), pair.b.n_positions - 1)
    b = None if query_b is None else positional_pattern(pair.b, query_b, n_b, heads=[head_b],
                                                         convention=convention)
    return PatternPair(a, b, int(n) - n_b)


def metric_pair_rows(metrics_a: dict, metrics_b: dict, head_a: int, head_b: int,
                     names=None) -> list[dict]:
    """One row per metric: the value of A's head, of B's head, and B - A (NaN when either
    is not a number)."""
    rows = []
    for name in names or list(metrics_a):
        va = float(np.asarray(metrics_a[name])[head_a])
        vb = float(np.asarray(metrics_b[name])[head_b])
        rows.append({"metric": name, "head_a": head_a, "head_b": head_b, "value_a": va,
                     "value_b": vb, "difference": vb - va})
    return rows


def _part(job, lo: float, hi: float, what: str):
    """Run a generator job, its progress mapped into lo..hi and its message prefixed."""
    gen = job
    try:
        while True:
            p = next(gen)
            if isinstance(p, Progress):
                yield Progress(lo + (hi - lo) * p.fraction, f"{what}: {p.message}")
    except StopIteration as stop:
        return stop.value


def iter_both(pair, make_job, what: str) -> Job[tuple]:
    """Generator job: (result for A, result for B) of `make_job(layer)` (a generator job),
    A's then B's, progress 0..0.5 then 0.5..1."""
    ra = yield from _part(make_job(pair.a), 0.0, 0.5, f"{what} of A")
    rb = yield from _part(make_job(pair.b), 0.5, 1.0, f"{what} of B")
    return ra, rb


def iter_classify_both(pair, n: int) -> Job[tuple]:
    """Head classifications (B4) of A at n and of B at min(n, L_B - 1)."""
    def job(layer):
        return iter_classify_heads(layer, min(int(n), layer.n_positions - 1))
    return (yield from iter_both(pair, job, "head classes"))


def iter_head_metrics_both(pair, corpus=()) -> Job[tuple]:
    """Per-head metrics (core.compare.head_metrics) of A and of B; with `corpus` paths, each
    model's tokens counted in it for the corpus metrics (NaN without)."""

    def job(layer):
        counts = (yield from iter_layer_counts(layer, tuple(corpus))) if corpus else None
        return (yield from iter_head_metrics(layer, counts=counts))
    return (yield from iter_both(pair, job, "head statistics"))
