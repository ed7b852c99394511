"""What the window's position-side plots say: their titles in rich text (the paper's
notation with sub- and superscripts, the figure they reproduce, the convention they show)
and their one-line notes, for the positional bias (B1-B3) and the position-embedding
statistics (B5)."""

from __future__ import annotations

import numpy as np

from detokgui.core.model.conventions import temperature_label

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


def variance_note(variance: np.ndarray) -> str:
    """B5: the variances of the first and the last position against their median."""
    med = float(np.median(variance)) or 1.0
    first, last = float(variance[0]), float(variance[-1])
    return (f"Var(p_0) = {first:.3g} ({first / med:.2g}× the median), "
            f"Var(p_{len(variance) - 1}) = {last:.3g} ({last / med:.2g}× the median)")
