"""What the comparison views say about the pair of heads they show (rich text): the pair,
how it was chosen and how alike its heads are (`core.compare.pair.HeadMatching`), the
query token in both models; or why there is nothing to show yet."""

from __future__ import annotations

from functools import partial
from html import escape

import numpy as np

MISSING = "missing in B"

_esc = partial(escape, quote=False)  # & < > only: the text goes between tags


def pair_label(matching, head_a: int, head_b: int, query_a: str | None = None,
               query_b: str | None = None) -> str:
    """"A head 3 ↔ B head 5 (matched: S 0.912 > θ 0.204) · query ' Korea' (B: ' Korea')":
    a pair chosen by hand (no matching, or not the assignment's pair) says "(chosen; …)",
    and "no match" where its similarity is not above what unrelated heads reach.
    `query_a`: the query token's text (None: no query token), `query_b`: its text in B
    (None: B lacks it)."""
    query = ""
    if query_a is not None:
        b = (f"B: {_esc(query_b)}" if query_b is not None
             else f"<span style='color:#b00'>{MISSING}</span>")
        query = f" · query {_esc(query_a)} ({b})"
    m = matching
    if m is None:
        how = "chosen"
    elif m.match_of_a(head_a) == head_b:
        how = m.verdict(head_a, head_b)
    else:
        alike = m.is_matched(head_a, head_b)  # above θ, though not the assignment's
        text = m.inequality(head_a, head_b) if alike else m.verdict(head_a, head_b)
        how = (f"chosen; <span style='color:{'#555' if alike else '#b00'}'>"
               f"{_esc(text)}</span>")
    return f"<b>A head {head_a} ↔ B head {head_b}</b> ({how}){query}"


def no_match_label(matching, head_a: int) -> str:
    """"A head 0: no match in B (assigned B head 6: S 0.140 ≤ θ 0.195)" for a head of A
    that the matching gives no head of B."""
    assigned = matching.assigned_of_a(head_a)
    why = (f"assigned B head {assigned}: {matching.inequality(head_a, assigned)}"
           if assigned is not None else f"B has {matching.shape[1]} heads")
    return (f"<b>A head {head_a}</b>: <span style='color:#b00'>no match in B</span> "
            f"({_esc(why)})")


def waiting_text(paired: bool, matching, head_a: int, head_b: int | None,
                 n_heads_b: int) -> str:
    """Why a comparison view shows nothing yet while model B is open (plain text): the
    tokens of the two models are being paired (not `paired`), their heads matched, or
    A's head has no match in B."""
    if not paired:
        return "Pairing the two models' tokens… (Model > Match heads of A and B if cancelled)"
    if matching is not None and head_b is None:
        assigned = matching.assigned_of_a(head_a)
        if assigned is not None:
            return (f"A's head {head_a} has no match in B: the assignment pairs it with "
                    f"B's head {assigned}, but {matching.inequality(head_a, assigned)}, "
                    "no more alike than heads of unrelated models. Click a cell of the "
                    "Head matching view to compare it with a head of B anyway.")
        return (f"A's head {head_a} has no match in B ({n_heads_b} heads): click "
                "a cell of the Head matching view to choose a head of B for it.")
    return "Matching the heads of A and B… (Model > Match heads of A and B if cancelled)"


def matching_title(matching) -> str:
    """"Head similarity, 8 heads of A × 8 of B; 8 of 8 assigned pairs matched (S > θ, θ
    0.09–0.79); assignment's mean 1.000": the head matching's heatmap title."""
    sim = np.asarray(matching.similarity, dtype=np.float32)
    ha, hb = sim.shape
    pairs = matching.assignment
    mean = float(np.mean([sim[a, b] for a, b in pairs])) if pairs else 0.0
    t = matching.threshold
    return (f"Head similarity, {ha} heads of A × {hb} of B; {sum(matching.matched)} of "
            f"{len(pairs)} assigned pairs matched (S > θ, θ "
            f"{float(t.min()):.2f}–{float(t.max()):.2f}); assignment's mean {mean:.3f}")
