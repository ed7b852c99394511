"""Comparing numbers that two code paths computed (tests' helpers; no Qt).

float32 carries 24 bits (unit roundoff u = 6e-8). A length-d dot product summed in
another order (another BLAS kernel, a batched [V, d] @ [d, 3H] product against three
[V, d] @ [d, H] ones, another thread count) may differ by up to d u times the sum of its
|terms|: 4.6e-5 for GPT-2's d = 768, and the terms cancel, so the bound holds relative to
the scale of the values, not to each value. Two paths therefore agree to FLOAT32_RTOL of
the largest |value| they computed; ids, ranks and labels agree exactly, except that items
whose scores tie within that tolerance may come in either order."""

from __future__ import annotations

import math
from collections.abc import Sequence

FLOAT32_RTOL = 1e-4


def column_tolerance(rows: Sequence[dict], column: str, rtol: float = FLOAT32_RTOL,
                     atol: float = 0.0) -> float:
    """atol + rtol * (the largest finite |value| of a float column of CSV rows)."""
    scale = max((abs(v) for v in (float(r[column]) for r in rows) if math.isfinite(v)),
                default=0.0)
    return atol + rtol * scale


def _same(got: dict, want: dict, floats: dict[str, float], skip=()) -> bool:
    """Equal rows: float columns within their tolerance (inf/nan must match), the rest
    exactly; columns in `skip` are not compared."""
    if got.keys() != want.keys():
        return False
    for col in got.keys() - set(skip):
        if col in floats:
            a, b = float(got[col]), float(want[col])
            if not (a == b or abs(a - b) <= floats[col] or (math.isnan(a) and math.isnan(b))):
                return False
        elif got[col] != want[col]:
            return False
    return True


def _tie_blocks(want: Sequence[dict], score: str, rank: str, tol: float):
    """Runs [a, b) of consecutive rows of one ranked list (rank + 1 each row) whose
    neighbouring scores are within `tol`; also whether the run ends its list."""
    a = 0
    for i in range(1, len(want) + 1):
        same_list = i < len(want) and int(want[i][rank]) == int(want[i - 1][rank]) + 1
        if same_list and abs(float(want[i][score]) - float(want[i - 1][score])) <= tol:
            continue
        yield a, i, not same_list
        a = i


def assert_rows_close(got: Sequence[dict], want: Sequence[dict], floats: Sequence[str] = (),
                      *, ranked: tuple[str, str, Sequence[str]] | None = None,
                      rtol: float = FLOAT32_RTOL, atol: float = 0.0) -> None:
    """Assert two CSV tables (lists of dicts, as csv.DictReader reads them) from two code
    paths hold the same rows: the `floats` columns within atol + rtol * the column's
    largest |value| in `want`, every other column exactly.

    ranked = (score column, rank column, item columns) for tables of ranked lists (rank
    1, 2, ... per list, scores descending): items whose scores tie within twice that
    tolerance (each side may be off by it) may swap places, and the last item of a list
    may be another one whose score ties with it (it was next in line); the rank column
    and everything else stay exact."""
    assert len(got) == len(want), f"{len(got)} rows, expected {len(want)}"
    tol = {c: column_tolerance(want, c, rtol, atol) for c in floats}
    if ranked is None:
        for i, (g, w) in enumerate(zip(got, want)):
            assert _same(g, w, tol), f"row {i}: {g} != {w}"
        return
    score, rank, items = ranked
    assert score in tol, f"the score column {score!r} must be one of the float columns"
    for a, b, ends_list in _tie_blocks(want, score, rank, 2 * tol[score]):
        left = list(want[a:b])
        for i in range(a, b):
            g = got[i]
            assert g[rank] == want[i][rank], f"row {i}: rank {g[rank]} != {want[i][rank]}"
            match = next((w for w in left if _same(g, w, tol, skip=(rank,))), None)
            if match is not None:
                left.remove(match)
                continue
            # a tie with the first item left out of the list: same list, close score
            lowest = want[b - 1]
            assert ends_list and _same(g, lowest, {**tol, score: 2 * tol[score]},
                                       skip=(rank, *items)), (
                f"row {i}: {g} is none of the rows tied at ranks {want[a][rank]}.."
                f"{lowest[rank]}: {left}")


def roundings(value: float, spec: str, rtol: float = FLOAT32_RTOL) -> set[str]:
    """The texts `spec` (e.g. "{:.3g}") makes of the numbers within rtol of `value`: what
    a view shows of a value that another code path computed (rtol far below the shown
    precision, so there are at most two)."""
    d = rtol * abs(value)
    return {spec.format(value - d), spec.format(value + d)}
