"""The T_ee heatmap between the tokens of one text (`detokgui export heatmap --out x.png|svg`):
one head's T^ee_{i,j,h} (or e_i W^QK_h e_j^T without LayerNorm) with query tokens as rows
and key tokens as columns, drawn as a panel of the paper's Fig 2-B (`style.diverging_heatmap`)
with the tokens as tick labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from detokgui.core.base.atomic import atomic_open
from detokgui.core.model.conventions import COLOUR_SIGN_NOTE
from detokgui.core.model.titles import model_name
from detokgui.core.model.tokens import display_token
from detokgui.figures import style
from detokgui.figures.labels import tee_symbol

#: Printed distance between two token labels (points): every label when they fit.
LABEL_PITCH_PT = 1.35 * style.SMALL_PT
#: Up to this many tokens the figure is one column wide, beyond it the text width.
COLUMN_TOKENS = 30


def title_lines(layer, head: int, sigma, width_in: float) -> list[str]:
    """The model, then the head and the convention (Fig 2-B, or Fig 12 without LayerNorm),
    wrapped to the figure's width."""
    if sigma.convention == "none":
        shown = [f"raw e W^QK e^T, head {head} (without LayerNorm, Fig 12)"]
    else:
        shown = [f"T_ee, head {head} (Fig 2-B)", sigma.label()]
    shown.append(COLOUR_SIGN_NOTE)
    return [*style.wrap_parts([model_name(layer)], width_in, style.FONT_PT),
            *style.wrap_parts(shown, width_in, style.FONT_PT)]


def _every(n: int, room_in: float) -> int:
    """Label every k-th token so that labels are at least LABEL_PITCH_PT apart."""
    fit = max(1, int(room_in * 72 / LABEL_PITCH_PT))
    return -(-n // fit)


def token_heatmap(layer, values: np.ndarray, token_ids, head: int, sigma) -> Figure:
    """`values` [n, n] (query token i, key token j) for the n tokens `token_ids`, of head
    `head` in the convention `sigma` (`core.token_side.affinity.SigmaChoice`)."""
    labels = [display_token(layer.tokenizer, t) for t in token_ids]
    n = len(labels)
    width = style.COLUMN_IN if n <= COLUMN_TOKENS else style.TEXT_IN
    widest = max(style.text_width_in(t, style.SMALL_PT) for t in labels)
    side = width - widest - 0.3  # the panel is square: what the y labels leave of the width
    step = _every(n, side)
    shown = np.arange(0, n, step)
    widest_shown = max(style.text_width_in(labels[k], style.SMALL_PT) for k in shown)
    upright = widest_shown < 0.8 * side * step / n  # x labels upright when each fits its cell
    below = (0.1 if upright else widest) + 0.3  # the x labels and the axis label
    title = title_lines(layer, head, sigma, width)
    above = 0.45 + len(title) * style.FONT_PT * 1.3 / 72  # the colour bar and the title
    with style.style():
        fig, axes = style.new_figure(width, side + below + above)
        ax = axes[0, 0]
        fig.suptitle("\n".join(title), parse_math=False)
        style.diverging_heatmap(fig, ax, values, tee_symbol(head, sigma.convention == "none"))
        ax.set_yticks(shown, [labels[k] for k in shown], parse_math=False)
        ax.set_xticks(shown, [labels[k] for k in shown], parse_math=False,
                      rotation=0 if upright else 90)
        ax.set_ylabel("query ($i$)")
        ax.set_xlabel("key ($j$)")
    return fig


def save_token_heatmap(layer, values: np.ndarray, token_ids, head: int, sigma,
                       out: str | Path) -> None:
    """Write `token_heatmap(...)` to `out` (.png or .svg, by its suffix), atomically."""
    fmt = Path(out).suffix.lower().lstrip(".")
    fig = token_heatmap(layer, values, token_ids, head, sigma)
    with style.style(), atomic_open(out, "wb") as f:
        style.save(fig, f, fmt)
