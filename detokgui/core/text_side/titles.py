"""What the window's corpus-text plots say in their titles (rich text, the paper's
notation with sub- and superscripts): C2's observed against predicted attention, C3's
six-term contribution and the attention sinks (docs/sinks.md); and in plain text, what
their hover line reads at one position of one head's plot."""

from __future__ import annotations

import numpy as np

from detokgui.core.base.numbers import num
from detokgui.core.model.conventions import temperature_label
from detokgui.core.text_side.empirical import definition_label


def empirical_title(layer, res, colors: dict[str, str], log: bool = False) -> str:
    """C2 (Fig 3-E) at `res.i` (an `empirical.EmpiricalAttention`): the mean attention
    over the windows, the position-only prediction softmax((T_pp + T_p) / τ) and the mean
    positional pattern, each named in its curve's colour (`colors`: "empirical",
    "predicted", "pattern")."""
    c = colors
    return (
        f"<b>Observed vs predicted attention</b> {'(log<sub>10</sub>) ' if log else ''}"
        f"at i = {res.i} (Fig 3-E) — <span style='color:{c['empirical']}'>mean over "
        f"{res.windows} windows</span> · <span style='color:{c['predicted']}'>position-only"
        f" prediction</span> softmax((T<sub>pp</sub> + T<sub>p</sub>) / τ) "
        f"({res.convention} convention, {temperature_label(layer)}, dashed) · "
        f"<span style='color:{c['pattern']}'>mean positional pattern</span> (dotted)")


def kl_title(layer, res, log: bool, legend: str) -> str:
    """C3 (Fig 4) of a `empirical.KLContributions`, over query position i, log10 with
    `log`; names the definition and the six terms in their colours (`legend`)."""
    return (f"<b>Six-term contribution</b> {'log<sub>10</sub> ' if log else ''}"
            f"c<sup>X</sup><sub>i,h</sub> over query position i (Fig 4) — "
            f"{definition_label(layer, res.definition)} — {legend}")


def sinks_title(res, split: bool, legend: str = "") -> str:
    """The attention sinks (a `sinks.SinkProfile`): with `split`, the logit advantage of
    key position 0 over the attention-weighted mean of the other keys, A_i = Σ_X A^X_i
    (`legend`: the six terms' colours); else the attention to position 0 and its uniform
    share 1/(i+1). Both say what position 0 is."""
    zero = ("position 0 = the prepended BOS token" if res.bos
            else "position 0 = each text's first token")
    if split:
        return ("<b>Attention sinks</b>: logit advantage of key position 0 over the "
                "attention-weighted mean of the other keys, A<sub>i</sub> (black) = Σ of the "
                f"six terms' A<sup>X</sup><sub>i</sub> — {legend} — {zero}")
    return ("<b>Attention sinks</b>: attention to key position 0 over query position i, "
            "mean over the texts (blue), and 1/(i+1), its share were every key weighted "
            f"alike (grey, dashed) — {zero}")


def empirical_hover(res, h: int, j: int) -> str:
    """C2 at key position j of head h (an `empirical.EmpiricalAttention`): the three
    curves' values; keys after i are masked."""
    if j > res.i:
        return f"head {h} · j = {j}: masked (keys j ≤ i = {res.i} only)"
    r = res.heads.index(h)
    return (f"head {h} · i = {res.i} · j = {j}: empirical {num(float(res.empirical[r, j]))}"
            f" ({res.windows} windows) · predicted from position "
            f"{num(float(res.predicted[r, j]))} · positional pattern "
            f"{num(float(res.pattern[r, j]))}")


def kl_hover(layer, res, h: int, i: int) -> str:
    """C3 at query position i of head h (a `empirical.KLContributions`): every term's
    contribution and how many texts reach i."""
    if i >= int(np.count_nonzero(res.texts)):
        return f"head {h} · i = {i}: no text is longer than i"
    c = res.contribution[res.heads.index(h), :, i]
    return (f"head {h} · i = {i} ({int(res.texts[i])} texts) · "
            + " · ".join(f"{t} {num(float(v))}" for t, v in zip(res.terms, c))
            + f" · {definition_label(layer, res.definition)}")


def sinks_hover(res, h: int, i: int) -> str:
    """The attention sinks at query position i >= 1 of head h (a `sinks.SinkProfile`):
    the attention to position 0 against its uniform share, the advantage A_i as the sum of
    the six terms', and the term most in favour of position 0."""
    if i < 1 or i >= res.n:
        return f"head {h} · i = {i}: no query position after 0 there"
    r = res.heads.index(h)
    adv = res.advantage[r, :, i]
    best = res.terms[int(np.argmax(adv))]
    return (f"head {h} · i = {i} ({int(res.texts[i])} texts) · α(i→0) "
            f"{num(float(res.attention[r, i]))} (uniform {num(1 / (i + 1))}) · A "
            f"{num(float(adv.sum()))} = "
            + " + ".join(f"{t} {num(float(v))}" for t, v in zip(res.terms, adv))
            + f" · most in favour of 0: {best}")
