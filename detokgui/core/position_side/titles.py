"""What the window's position-side plots say: their titles in rich text (the paper's
notation with sub- and superscripts, the figure they reproduce, the convention they show),
their one-line notes and hover lines, for the positional bias (B1-B3) and pattern (B4),
the position-embedding statistics (B5) and the key-position slopes (B7)."""

from __future__ import annotations

import html

import numpy as np

from detokgui.core.base.numbers import num
from detokgui.core.model.conventions import temperature_label

#: B4's key weights under each position convention.
KEY_WEIGHTS = {"paper": "E_v[1/σ(e_v + p_j)] (paper convention)",
               "mean-sigma": "1 / mean_v σ(e_v + p_j) (mean-σ convention)"}

#: The position conventions (`conventions.POSITION_CONVENTIONS`) in a few words.
CONVENTION_NAMES = {"paper": "paper convention", "mean-sigma": "mean-σ convention"}
SIGMA_SHORT = {"mean": "σ mean", "max": "σ max", "min": "σ min", "none": "no LayerNorm"}


def sigma_note(sigma: str, convention: str) -> str:
    """The σ and the convention of a B3 plot, in a few words."""
    if sigma == "none":
        return "no LayerNorm"
    return f"{SIGMA_SHORT[sigma]}, {CONVENTION_NAMES[convention]}"


def tp_title(raw: bool, convention: str) -> str:
    """B1: T_p over every key position (Fig 3-A), or raw (Fig 8)."""
    if raw:
        return ("<b>Position self-assertion without LayerNorm</b> b<sup>QK</sup>"
                "p<sub>j</sub><sup>T</sup> (Fig 8)")
    if convention == "paper":
        return ("<b>Position self-assertion</b> T<sub>p</sub>(j) = b<sup>QK</sup>"
                "p<sub>j</sub><sup>T</sup> E<sub>v</sub>[1/σ(e<sub>v</sub>+p<sub>j"
                "</sub>)] (Fig 3-A) — band: 95% of tokens; paper convention")
    return ("<b>Position self-assertion</b> T<sub>p</sub>(j) = b<sup>QK</sup>"
            "p<sub>j</sub><sup>T</sup> / mean σ<sub>j</sub> — band: σ min…max;"
            " mean-σ convention")


def tpp_title(i: int, colors: dict[str, str], convention: str) -> str:
    """B2: T_pp(i, j) for each σ_i of `colors` (σ -> its line's colour; Fig 3-B)."""
    sigmas = ", ".join(f"<span style='color:{c}'>{s}</span>" for s, c in colors.items())
    return (f"<b>Position-position term</b> T<sub>pp</sub>(i = {i}, j) (Fig 3-B) — "
            f"σ<sub>i</sub> {sigmas}; {CONVENTION_NAMES[convention]}")


def total_title(i: int, sigma: str, convention: str) -> str:
    """B3: T_pp + T_p at query position i (Fig 3-C)."""
    return (f"<b>Positional bias</b> T<sub>pp</sub> + T<sub>p</sub> at i = {i} (Fig 3-C) — "
            f"{sigma_note(sigma, convention)}")


def softmax_title(layer, i: int, sigma: str, convention: str) -> str:
    """B3: softmax_{j<=i}((T_pp + T_p) / tau) at query position i (Fig 3-D)."""
    return (f"<b>Attention from position</b> softmax<sub>j≤i</sub>((T<sub>pp</sub> + "
            f"T<sub>p</sub>) / τ), i = {i}, {temperature_label(layer)} (Fig 3-D) — "
            f"{sigma_note(sigma, convention)}")


def bias_hover(res, key: str, head: int, j: int, raw: bool = False) -> str:
    """B1-B3: the values at key j of one head's curves in the plot `key` ("tp", "tpp",
    "total" or "softmax") of a `positional.BiasFigures`; `raw`: T_p without LayerNorm.
    Keys past the query position are masked (T_p itself does not depend on i)."""
    r, i = res.heads.index(head), res.i
    if key == "tp":
        bd = res.band
        text = (f"raw b^QK p_j = {num(bd.raw[r, j])}" if raw else
                f"T_p = {num(bd.mean[r, j])}, band {num(bd.lower[r, j])} … "
                f"{num(bd.upper[r, j])} ({CONVENTION_NAMES[bd.convention]})")
        if j > i:
            text += " · masked for this query (j > i)"
    elif j > i:
        text = "masked: a query at i attends to keys j ≤ i only"
    elif key == "tpp":
        text = "T_pp " + ", ".join(f"σ_i {s} {num(line.t_pp[r, j])}"
                                   for s, line in res.lines.items())
    else:
        values = res.b3.total if key == "total" else res.b3.softmax
        name = "T_pp + T_p" if key == "total" else "softmax"
        text = f"{name} = {num(values[r, j])} ({sigma_note(res.b3_sigma, res.convention)})"
    return f"head {head} · i = {i} · j = {j}: {text}"


def pattern_note(layer, res, token: str) -> str:
    """B4: the query token x (its text `token`) of a `positional.PositionalPattern` at
    its position n, its σ, the key weights and the softmax temperature."""
    return (f"x = {token} at n = {res.n}: σ(e_x + p_n) = {num(res.query_sigma)}; key weights "
            f"{KEY_WEIGHTS[res.convention]}; softmax / τ, {temperature_label(layer)}")


def pattern_hover(res, j: int, heads) -> str:
    """B4: the weights of key j (at most 12 of `heads`) in a `positional.PositionalPattern`."""
    vals = "  ".join(f"head {h}: {num(res.pattern[res.heads.index(h), j])}" for h in heads[:12])
    return f"key j = {j} ({res.n - j} back)   {vals}   — click to set n = {j}"


def variance_title(d: int) -> str:
    """B5: Var_k P[j, k] over positions j (Fig 6 right)."""
    return (f"<b>Variance of each position embedding</b> p<sub>j</sub> over its {d} "
            "dimensions (Fig 6 right)")


def last_positions_title(positions, colors) -> str:
    """B5: raw T_pp for the query positions `positions`, each named in its line's colour
    and the last in bold (Fig 7)."""
    last = len(positions) - 1
    names = " ".join(f"<span style='color:{c}'>{'<b>' if k == last else ''}"
                     f"i = {i}{'</b>' if k == last else ''}</span>"
                     for k, (c, i) in enumerate(zip(colors, positions)))
    return ("<b>Position-position term without LayerNorm</b> p<sub>i</sub>"
            f"W<sup>QK</sup>p<sub>j</sub><sup>T</sup>, j ≤ i (Fig 7), for {names}")


def last_positions_hover(last, head: int, j: int) -> str:
    """B5: one head's raw T_pp at key j for each query position i >= j of a
    `positional.LastPositionsPP`."""
    r = last.heads.index(head)
    vals = ", ".join(f"i = {i}: {last.values[r, k, j]:.4g}" for k, i in enumerate(last.positions)
                     if j <= i)
    return f"head {head} · j = {j}: raw T_pp {vals}"


def variance_note(variance: np.ndarray) -> str:
    """B5: the variances of the first and the last position against their median."""
    med = float(np.median(variance)) or 1.0
    first, last = float(variance[0]), float(variance[-1])
    return (f"Var(p_0) = {first:.3g} ({first / med:.2g}× the median), "
            f"Var(p_{len(variance) - 1}) = {last:.3g} ({last / med:.2g}× the median)")


def slopes_title(head: int, n_tokens: int, token: str, slope: float | None = None) -> str:
    """B7: the histogram of one head's slopes over n_tokens query tokens u; with `slope`,
    the query token's (named in the red of its marker)."""
    title = (f"Slopes over j of raw e<sub>u</sub>W<sup>QK</sup>p<sub>j</sub><sup>T</sup>,"
             f" head {head}, {n_tokens:,} tokens u")
    if slope is None:
        return title
    return (f"{title} — <span style='color:#d62728'>red: {html.escape(token)} "
            f"{num(slope)}</span>")


def curve_title(token: str, head: int, slope: float) -> str:
    """B7: one query token's raw term over key positions and its fitted line."""
    return (f"Raw e<sub>u</sub>W<sup>QK</sup>p<sub>j</sub><sup>T</sup> for u = "
            f"{html.escape(token)}, head {head}: slope {num(slope)} per position (dashed: fit)")
