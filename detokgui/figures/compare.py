"""The comparison of two models (`core.compare.pair`), drawn: the head similarity matrix with the
one-to-one assignment marked, and the matched heads' metrics side by side
(`core.compare.head_metrics`). Exported by `export figures --compare B` only (the figure is part
of the set only when a model B is given: `registry.figure(..., only_with="compare")`);
`api.plots` draws `dg.compare` / `dg.compare_metrics` frames with the same functions.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from detokgui.core.model.titles import model_name
from detokgui.figures import style
from detokgui.figures.labels import footer
from detokgui.figures.registry import Drawn, FigureContext, FigureSkipped, figure
from detokgui.figures.style import TEXT_IN

COMPARE_CONVENTION = (
    "similarity = ½ positional + ½ affinity; positional: shared mass of the two heads' B4 "
    "patterns (key σ = vocabulary mean) at the same relative positions; affinity: mean "
    "overlap of the top-10 keys (T_ee, σ = mean over positions) over a seeded sample of "
    "query tokens both vocabularies have; assignment: scipy linear_sum_assignment; no "
    "match: S ≤ θ, the similarity B's head reaches with its pattern rotated over key "
    "positions and its keys paired with other query tokens (5% family-wise)")
MATCHED_COLOR = "red"
NO_MATCH_COLOR = "0.8"
MARKS = "red squares: matched pairs; grey dashed: assigned, no match"


def _short(name: str, n: int = 24) -> str:
    return name if len(name) <= n else name[: n - 1] + "…"


def draw_similarity(ax, fig: Figure, similarity: np.ndarray, pairs, name_a: str,
                    name_b: str, matched=None) -> None:
    """The (H_A, H_B) similarity as an image (0..1), a square on each assigned pair: solid
    red where matched, dashed grey where it has no match (`matched`: one flag per pair;
    None: all matched)."""
    from matplotlib.patches import Rectangle

    im = ax.imshow(similarity, vmin=0.0, vmax=1.0, cmap="viridis", interpolation="nearest",
                   aspect="equal")
    flags = [True] * len(pairs) if matched is None else [bool(x) for x in matched]
    for (a, b), ok in zip(pairs, flags):
        ax.add_patch(Rectangle((b - 0.42, a - 0.42), 0.84, 0.84, fill=False,
                               edgecolor=MATCHED_COLOR if ok else NO_MATCH_COLOR,
                               linewidth=0.8, linestyle="-" if ok else (0, (2, 1.5))))
    Ha, Hb = similarity.shape
    ax.set_xticks(range(Hb))
    ax.set_yticks(range(Ha))
    ax.tick_params(labelsize=style.FOOTER_PT + 0.5)
    ax.set_xlabel(f"head of B ({_short(name_b)})")
    ax.set_ylabel(f"head of A ({_short(name_a)})")
    cb = fig.colorbar(im, ax=ax, location="right", fraction=0.05, pad=0.02)
    cb.ax.tick_params(labelsize=style.FOOTER_PT + 0.5)
    cb.outline.set_linewidth(0.3)
    cb.set_label("similarity")


def draw_metric_pairs(axes, pairs: list[tuple], metrics) -> None:
    """One panel per metric: value in A against value in B for each assigned pair (a
    filled dot, "a→b", where matched; a hollow grey one, "a↛b", where it has no match),
    the diagonal (no difference) dashed. `pairs`: rows (head_a, head_b, metric, value_a,
    value_b, difference[, matched])."""
    for ax, m in zip(axes, metrics):
        rows = [r for r in pairs if r[2] == m]
        va = np.array([r[3] for r in rows], dtype=float)
        vb = np.array([r[4] for r in rows], dtype=float)
        ok_match = np.array([len(r) < 7 or bool(r[6]) for r in rows], dtype=bool)
        ok = np.isfinite(va) & np.isfinite(vb)
        ax.set_title(m, pad=2, fontsize=style.SMALL_PT)
        ax.tick_params(labelsize=style.FOOTER_PT + 0.5)
        if not ok.any():
            ax.text(0.5, 0.5, "no value\n(needs a corpus)" if m in _CORPUS else "no value",
                    transform=ax.transAxes, ha="center", va="center", fontsize=style.SMALL_PT)
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        lo = float(min(va[ok].min(), vb[ok].min()))
        hi = float(max(va[ok].max(), vb[ok].max()))
        pad = 0.05 * (hi - lo) or 0.5
        ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], color="0.6", linewidth=0.5,
                linestyle="--")
        ax.scatter(va[ok & ok_match], vb[ok & ok_match], s=6, color="C0", zorder=3)
        ax.scatter(va[ok & ~ok_match], vb[ok & ~ok_match], s=6, facecolors="none",
                   edgecolors="0.55", linewidths=0.5, zorder=3)
        for r, x, y, hit in zip(rows, va, vb, ok_match):
            if np.isfinite(x) and np.isfinite(y):
                ax.annotate(f"{r[0]}{'→' if hit else '↛'}{r[1]}", (x, y),
                            fontsize=style.FOOTER_PT, xytext=(2, 2), textcoords="offset points",
                            color="black" if hit else "0.45")
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_ylim(lo - pad, hi + pad)
        ax.xaxis.set_major_locator(MaxNLocator(3))
        ax.yaxis.set_major_locator(MaxNLocator(4))
        ax.ticklabel_format(style="sci", scilimits=(-3, 4), useMathText=True)
        for axis in (ax.xaxis, ax.yaxis):
            axis.get_offset_text().set_fontsize(style.FOOTER_PT)
        ax.set_xlabel("A", labelpad=1)
        ax.set_ylabel("B", labelpad=1)


_CORPUS = ("mean_bigram_auroc", "spearman_te_count")


def comparison_figure(similarity: np.ndarray, assignment, pairs: list[tuple], metrics,
                      name_a: str, name_b: str, footer_parts, matched=None) -> Figure:
    """The similarity heatmap (left, over all rows) and one small panel per metric
    (`matched`: one flag per pair of `assignment`)."""
    metrics = list(metrics)
    ncols = 4
    nrows = max(2, -(-len(metrics) // ncols))
    fig, axes = style.new_figure(TEXT_IN, 0.2 * TEXT_IN * nrows, nrows, 1 + ncols,
                                 footer=footer_parts,
                                 gridspec_kw={"width_ratios": [2.6] + [1.0] * ncols})
    grid = axes[0, 0].get_subplotspec().get_gridspec()
    for ax in axes[:, 0]:
        ax.remove()
    draw_similarity(fig.add_subplot(grid[:, 0]), fig, similarity, assignment, name_a, name_b,
                    matched)
    panels = axes[:, 1:]
    draw_metric_pairs(panels.flat, pairs, metrics)
    style.hide_unused(panels, len(metrics))
    return fig


@figure("study_compare_heads", paper="Comparison (issue 20)",
        title="Head similarity of models A and B with the one-to-one matching (pairs no "
              "more alike than unrelated heads marked 'no match'), and the assigned heads' "
              "metrics in A against B",
        convention=COMPARE_CONVENTION, only_with="compare")
def compare_heads(ctx: FigureContext):
    from detokgui.core.base.progress import rescaled
    from detokgui.core.compare.head_metrics import HEAD_METRICS
    from detokgui.core.compare.pair import METRIC_PAIR_COLUMNS, Pair, iter_compare, metric_pairs
    from detokgui.core.corpus.counts import iter_corpus_counts
    from detokgui.figures.corpus import counts

    b = ctx.compare
    if b is None:
        raise FigureSkipped("needs a model B: give --compare MODEL")
    a = ctx.layer
    counts_a = counts_b = None
    if ctx.corpus:
        counts_a = yield from rescaled(counts(ctx), 0.0, 0.1)
        counts_b = counts_a if b is a else (yield from rescaled(iter_corpus_counts(
            [str(p) for p in ctx.corpus], b.tokenizer, b.n_vocab), 0.1, 0.2))
    res = yield from rescaled(iter_compare(Pair(a, b), counts_a=counts_a, counts_b=counts_b),
                              0.2, 1.0)
    m = res.matching
    pairs = metric_pairs(m, res.metrics_a, res.metrics_b)
    with style.style():
        fig = comparison_figure(
            m.similarity, m.assignment, pairs, HEAD_METRICS, model_name(a), model_name(b),
            footer(ctx, f"B: {model_name(b)} ({b.summary})",
                   f"n = {m.n}, {len(m.queries.a)} shared query tokens (seed {m.seed}), "
                   f"top-{m.k} keys", f"{sum(m.matched)} of {len(m.assignment)} assigned "
                   f"pairs matched", MARKS, m.rule()), m.matched)
    header = list(METRIC_PAIR_COLUMNS)
    notes = ("assignment " + ", ".join(f"{x}→{y}" + ("" if ok else " (no match)")
                                       for (x, y), ok in zip(m.assignment, m.matched))
             + f"; {m.rule()}")
    return Drawn(fig, (header, iter(pairs)), notes=notes, uses_corpus=bool(ctx.corpus))
