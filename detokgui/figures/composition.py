"""Layer 0 -> layer 1 drawn (docs/math/composition.md): the Q-, K- and V-composition of
every (layer-0 head, layer-1 head) pair as three heatmaps on one colour scale, the pairs
above the random-matrix baseline's 97.5th percentile outlined; and the measured
previous-token (layer 0) and induction (layer 1) scores as bars. `api.plots` draws
`dg.composition` and `dg.behaviour` frames with these functions, and the window's Layer 1
page exports its SVG and PDF through them."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from detokgui.core.composition.titles import KIND_TITLES
from detokgui.figures import style
from detokgui.figures.style import TEXT_IN

STAND_OUT_COLOR = "red"
STAND_OUT_NOTE = "red squares: above the baseline's 97.5th percentile"
CMAP = "viridis"


def draw_composition(fig: Figure, axes, scores: dict[str, np.ndarray],
                     baseline_hi: float) -> None:
    """One heatmap per kind (`scores[kind]`: [layer-0 heads, layer-1 heads]) on the axes
    `axes`, one shared colour scale 0..max with a colour bar, a red square on each cell
    above `baseline_hi`."""
    top = max(float(np.nanmax(v)) for v in scores.values()) or 1.0
    image = None
    for ax, (kind, values) in zip(axes, scores.items()):
        image = ax.imshow(values, vmin=0.0, vmax=top, cmap=CMAP, interpolation="nearest",
                          aspect="equal")
        for h0, h1 in zip(*np.nonzero(values > baseline_hi)):
            ax.add_patch(Rectangle((h1 - 0.42, h0 - 0.42), 0.84, 0.84, fill=False,
                                   edgecolor=STAND_OUT_COLOR, linewidth=0.7))
        H0, H1 = values.shape
        step = max(1, max(H0, H1) // 12)
        ax.set_xticks(range(0, H1, step))
        ax.set_yticks(range(0, H0, step))
        ax.tick_params(labelsize=style.FOOTER_PT + 0.5, length=1.5, pad=1)
        ax.set_xlabel("layer-1 head")
        ax.set_title(KIND_TITLES.get(kind, kind), pad=2, fontsize=style.SMALL_PT)
    axes[0].set_ylabel("layer-0 head")
    cb = fig.colorbar(image, ax=list(axes), location="right", fraction=0.05, pad=0.02)
    cb.ax.tick_params(labelsize=style.FOOTER_PT + 0.5)
    cb.outline.set_linewidth(0.3)
    cb.ax.axhline(baseline_hi, color=STAND_OUT_COLOR, linewidth=0.7)
    cb.set_label("composition score")


def composition_figure(scores: dict[str, np.ndarray], baseline_hi: float,
                       footer=()) -> Figure:
    """The three composition heatmaps side by side, the text width wide (`draw_composition`),
    with `footer` (the model, the baseline) below."""
    with style.style():
        fig, axes = style.new_figure(TEXT_IN, 0.36 * TEXT_IN, 1, len(scores),
                                     footer=(*footer, STAND_OUT_NOTE))
        draw_composition(fig, list(axes[0]), scores, baseline_hi)
    return fig


def draw_behaviour(ax, values: np.ndarray, title: str, color: str = "C0") -> None:
    """One bar per head of `values` (0..1) on `ax`, the best head's bar labelled."""
    heads = np.arange(len(values))
    ax.bar(heads, values, color=color, width=0.75)
    best = int(np.argmax(values))
    ax.annotate(f"{values[best]:.2f}", (best, values[best]), ha="center", va="bottom",
                fontsize=style.FOOTER_PT + 0.5, xytext=(0, 1), textcoords="offset points")
    ax.set_ylim(0, max(1.0, float(values.max()) * 1.1))
    step = max(1, len(values) // 12)
    ax.set_xticks(heads[::step])
    ax.tick_params(labelsize=style.FOOTER_PT + 0.5, length=1.5, pad=1)
    ax.set_xlabel("head")
    ax.set_title(title, pad=2, fontsize=style.SMALL_PT)


def behaviour_figure(previous_token: np.ndarray, induction: np.ndarray,
                     footer=()) -> Figure:
    """The previous-token scores of layer 0's heads and the induction scores of layer 1's
    side by side (`draw_behaviour`), with `footer` below."""
    with style.style():
        fig, axes = style.new_figure(TEXT_IN, 0.25 * TEXT_IN, 1, 2, footer=footer)
        draw_behaviour(axes[0, 0], previous_token, "layer 0: previous-token score", "C0")
        draw_behaviour(axes[0, 1], induction, "layer 1: induction score", "C1")
    return fig


# The frames of `dg.composition` and `dg.behaviour` (their rows and attrs) drawn: here, not
# in `api`, so that `api.plots` reaches them without importing `api.composition`.


ROWS_NOTE = "rows: layer-0 heads; columns: layer-1 heads"


def _frame_footer(df, *parts) -> list[str]:
    a = df.attrs
    return [str(a.get("model", "")), *parts,
            *(str(a[k]) for k in ("label", "layer1_attention") if a.get(k))]


def composition_frame_figure(df, footer=None) -> Figure:
    """`composition_figure` of a composition table (layer0_head,layer1_head,kind,score,
    baseline_mean,baseline_hi): one map per kind it holds, cells without a row blank;
    `footer` by default the model, the baseline and layer 1's attention of its attrs."""
    scores = {}
    for kind in ("Q", "K", "V"):
        rows = df[df["kind"] == kind]
        if rows.empty:
            continue
        h0, h1 = rows["layer0_head"].to_numpy(int), rows["layer1_head"].to_numpy(int)
        values = np.full((h0.max() + 1, h1.max() + 1), np.nan)
        values[h0, h1] = rows["score"].to_numpy(float)
        scores[kind] = values
    if footer is None:
        footer = _frame_footer(df, ROWS_NOTE)
    return composition_figure(scores, float(df["baseline_hi"].iloc[0]), footer=footer)


def behaviour_frame_figure(df, footer=None) -> Figure:
    """`behaviour_figure` of a behaviour table (layer,head,measure,score); `footer` as
    `composition_frame_figure`'s."""
    def scores(layer: int, measure: str) -> np.ndarray:
        rows = df[(df["layer"] == layer) & (df["measure"] == measure)].sort_values("head")
        return rows["score"].to_numpy(float)

    return behaviour_figure(scores(0, "previous_token"), scores(1, "induction"),
                            footer=_frame_footer(df) if footer is None else footer)
