"""The head classification (B4, `positional.HeadClassification`) as the window's table
says it: per column of `HeadClassification.rows()` its header, tooltip and number format,
each cell's tooltip, and the rules, first match wins, as one line of rich text."""

from __future__ import annotations

from detokgui.core.position_side import positional as m

#: (key in HeadClassification.rows(), header, tooltip, number format)
CLASS_COLUMNS = (
    ("head", "head", "Head index (0-based). Click a row to select the head.", "d"),
    ("label", "class", (
        "Class from the first rule that holds (hover for the reason):\n"
        f"duplicate-token: self in top {m.DUPLICATE_SELF_TOP_K} for ≥ "
        f"{m.DUPLICATE_MIN_SELF_FRACTION:.0%} of tokens;\n"
        f"detokenization: weight on the last {m.RECENT_WINDOW} positions ≥ "
        f"{m.DETOK_MIN_RECENT_WEIGHT};\n"
        f"contextual: effective span ≥ {m.CONTEXTUAL_MIN_SPAN_FRACTION:.0%} of n+1;\n"
        "other: none of these."), ""),
    ("span", "span", ("Effective attention span exp(entropy) of the pattern, in key "
                      "positions\n(mean over the sampled query tokens)"), ".4g"),
    ("span_fraction", "span / (n+1)", "Effective span as a fraction of the n+1 keys", ".3f"),
    ("mean_distance", "mean distance", ("Σ_j a_j (n − j): how far back the pattern looks,\n"
                                        "in positions"), ".4g"),
    ("recent_weight", f"last {m.RECENT_WINDOW}",
     f"Pattern weight on the last {m.RECENT_WINDOW} key positions (query included)", ".3f"),
    ("self_rank_median", "self-rank", ("Median rank of each sampled token u among all keys by\n"
                                       "T_ee(u, ·), from the token side (1 = attends most to "
                                       "itself)"), ".6g"),
    ("self_top_fraction", f"self in top {m.DUPLICATE_SELF_TOP_K}",
     (f"Fraction of sampled tokens that rank themselves in their top "
      f"{m.DUPLICATE_SELF_TOP_K} keys"), ".3f"),
    ("bias_slope", "bias slope", ("Least-squares slope of T_p(j) over j = 0..n per position\n"
                                  "(σ = vocabulary mean): > 0 favours recent keys"), ".4g"),
)


def row_tip(row: dict) -> str:
    """A cell's tooltip: "head 3: contextual — <the reason>"."""
    return f"head {row['head']}: {row['label']} — {row['reason']}"


def rules_line(res: m.HeadClassification | None) -> str:
    """The table's title line: where and on how many query tokens the heads were measured,
    and the rules, first match wins (just the title without a classification)."""
    if res is None:
        return "<b>Head classification</b>"
    return (
        f"<b>Head classification</b> at n = {res.n}, mean over {len(res.tokens)} sampled "
        f"query tokens. Rules, first match wins: <i>duplicate-token</i> self in top "
        f"{m.DUPLICATE_SELF_TOP_K} ≥ {m.DUPLICATE_MIN_SELF_FRACTION:.0%}; "
        f"<i>detokenization</i> last-{m.RECENT_WINDOW} weight ≥ {m.DETOK_MIN_RECENT_WEIGHT}; "
        f"<i>contextual</i> span ≥ {m.CONTEXTUAL_MIN_SPAN_FRACTION:.0%} of n+1; else "
        "<i>other</i>.")
