"""The training-series figure (issue 20): every per-head metric of `core.compare.head_metrics`
against the training step, one panel per metric, a line per head, for the checkpoints
given to `export figures --series` (`core.compare.series`).

The step axis is logarithmic where it matters and still shows step 0 (the initialisation):
matplotlib's "symlog" scale, linear on [0, 1] and logarithmic above, so steps 0, 1, 10,
100, ... are equally spaced.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from detokgui.core.base.progress import Job
from detokgui.core.compare.head_metrics import CORPUS_METRICS, HEAD_METRICS, METRIC_LABELS
from detokgui.figures import style
from detokgui.figures.registry import Drawn, FigureContext, FigureSkipped, figure
from detokgui.figures.style import TEXT_IN

SERIES_CONVENTION = ("per-head metrics of core.compare.head_metrics per checkpoint (B4 positional "
                     "pattern at n = min(399, L-1), key σ = vocabulary mean; seeded query "
                     "sample); step axis symlog (linear below 1)")
SHORT_LABELS = {
    "prev_token_mass": "previous-token mass",
    "recent4_mass": "mass on the last 4 positions",
    "head_class": "head class",
    "median_self_rank": "median self-rank",
    "mean_bigram_auroc": "mean bigram AUROC",
    "spearman_te_count": "Spearman ρ(T_e, count)",
    "bqk_norm": "|b^QK|",
}
CLASS_TICKS = ("dup", "detok", "context", "other")


def set_step_axis(ax) -> None:
    """Steps on a symlog axis: 0 at the left, 1, 10, 100, ... equally spaced."""
    from matplotlib.ticker import FuncFormatter

    ax.set_xscale("symlog", linthresh=1.0, linscale=0.5)
    ax.set_xlim(left=0)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{round(x):d}"))


def draw_series(result, metrics: Sequence[str] = HEAD_METRICS, *, highlight: int | None = None,
                footer=(), width_in: float = TEXT_IN, ncols: int = 2):
    """A matplotlib Figure: one panel per metric, metric value against step, a line per
    head (colour = head; `highlight` drawn thick, the others thin)."""
    order = result.order()
    steps = np.asarray([result.steps[i] for i in order], dtype=float)
    n = len(metrics)
    nrows, ncols = style.grid_shape(n, ncols)
    fig, axes = style.new_figure(width_in, nrows * 1.45, nrows, ncols, footer=footer)
    for ax, m in zip(axes.flat, metrics):
        values = result.metric(m)[order]
        for h in range(values.shape[1]):
            thick = highlight is None or h == highlight
            ax.plot(steps, values[:, h], color=f"C{h % 10}", marker="o", markersize=1.5,
                    linewidth=1.2 if thick else 0.6, alpha=1.0 if thick else 0.45,
                    label=f"head {h}", zorder=3 if h == highlight else 2)
        set_step_axis(ax)
        ax.set_title(SHORT_LABELS.get(m, m), pad=2)
        if m == "head_class":
            ax.set_yticks(range(len(CLASS_TICKS)), CLASS_TICKS)
        if not np.isfinite(values).any():
            ax.text(0.5, 0.5, "needs a corpus" if m in CORPUS_METRICS else "no values",
                    transform=ax.transAxes, ha="center", va="center", color="0.5")
        ax.grid(True, linewidth=0.3, alpha=0.5)
    for ax in axes[-1]:
        ax.set_xlabel("training step")
    style.hide_unused(axes, n)
    style.top_legend(fig, axes.flat[0], ncols=min(result.n_heads, 8))
    return fig


@figure("study_series_head_metrics", paper="issue 20 (training series)",
        title="Per-head metrics against the training step, a line per head",
        convention=SERIES_CONVENTION, only_with="series")
def series_figure(ctx: FigureContext) -> Job[Drawn]:
    from detokgui.core.compare.series import iter_series

    if not ctx.series:  # (an export lists it only with a series: only_with)
        raise FigureSkipped("needs a training series: give --series CKPT ...")
    result = yield from ctx.memo("series", lambda: iter_series(
        list(ctx.series), list(ctx.series_steps) if ctx.series_steps else None,
        corpus=[str(p) for p in ctx.corpus] or None))
    metrics = [m for m in HEAD_METRICS if ctx.corpus or m not in CORPUS_METRICS]
    with style.style():
        span = f"{len(result.checkpoints)} checkpoints, steps {min(result.steps)}-{max(result.steps)}"
        sample = f"{result.n_queries} sampled query tokens, seed {result.seed}"
        left_out = [] if ctx.corpus else ["corpus metrics left out (no --corpus)"]
        fig = draw_series(result, metrics, footer=[span, sample, *left_out])
    notes = "; ".join(METRIC_LABELS[m] for m in metrics[:2])
    return Drawn(fig, result.table(), notes=f"{span}; {notes}", uses_corpus=bool(ctx.corpus))
