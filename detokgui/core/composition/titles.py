"""What the Layer 1 page says of a result (docs/math/composition.md): the titles of its
composition maps and behaviour bars (rich text), and the hover line of one composition
score against the random-matrix baseline."""

from __future__ import annotations

from detokgui.core.base.numbers import num
from detokgui.core.composition.behaviour import Behaviour
from detokgui.core.composition.scores import KINDS, Composition

KIND_TITLES = {"Q": "Q-composition", "K": "K-composition", "V": "V-composition"}


def composition_title(comp: Composition) -> str:
    """The composition maps: the score's formula, the baseline's mean and 95% band (the
    colours start at its mean), how many pairs of each kind are above the band, and layer
    1's attention."""
    above = {k: int(comp.stand_out(k).sum()) for k in KINDS}
    return ("<b>Composition</b> of layer-0 heads (rows) with layer-1 heads (columns), "
            f"‖W<sub>A</sub>W<sub>B</sub>‖ / (‖W<sub>A</sub>‖‖W<sub>B</sub>‖) — random "
            f"matrices of the same shapes: mean {num(comp.baseline_mean)}, 95% band "
            f"{num(comp.baseline_lo)}..{num(comp.baseline_hi)}, the colours start at its "
            "mean; above the band: "
            + ", ".join(f"{k} {above[k]}" for k in KINDS)
            + f" pairs — layer 1: {comp.layer1_attention}")


def behaviour_title(beh: Behaviour, prev_color: str, induction_color: str) -> str:
    """The bars of the layer-0 previous-token and layer-1 induction scores, each named in
    its colour, with the sequences they were measured on and the previous-token head."""
    return (f"<span style='color:{prev_color}'>■ previous-token score, layer 0</span> · "
            f"<span style='color:{induction_color}'>■ induction score, layer 1</span> — "
            f"{beh.label()}; previous-token head: {beh.previous_token_head()}")


def composition_hover(comp: Composition, k: int, h0: int, h1: int) -> str:
    """The score of kind KINDS[k] of layer-0 head h0 with layer-1 head h1, and whether it
    is above, inside or below the baseline's 95% band."""
    v = float(comp.scores[k, h0, h1])
    where = ("above" if v > comp.baseline_hi
             else "below" if v < comp.baseline_lo else "inside")
    return (f"{KIND_TITLES[KINDS[k]]} of layer-0 head {h0} with layer-1 head {h1}: {num(v)} "
            f"({where} the baseline's 95% band {num(comp.baseline_lo)}.."
            f"{num(comp.baseline_hi)}, mean {num(comp.baseline_mean)})")
