"""What the window's corpus-text plots say in their titles (rich text, the paper's
notation with sub- and superscripts): C2's observed against predicted attention and the
attention sinks (docs/sinks.md)."""

from __future__ import annotations

from detokgui.core.model.conventions import temperature_label


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
