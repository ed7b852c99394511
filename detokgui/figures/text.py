"""The paper's figures that run the model on corpus text (Kamoda et al. 2025, Fig 3-E, 4,
13), over the first `ctx.max_texts` windows of the corpus (`FigureContext.texts`):

- Fig 3-E: the model's attention at query position i = 500 (scaled to the model's
  positions as the weight-only figures do) against its weight-only prediction
  (`figures.observed`).
- Fig 4 / 13: the contribution C^X_{i,h} of each of the six terms per query position
  (`core.text_side.empirical.iter_kl`, the paper's equation KL(P || Q) of softmaxes divided by the
  model's temperature tau), the mean
  over windows with its 95% confidence interval (mean ± 1.96 standard errors), on a log
  axis; i = 0 (one key: every contribution is 0) and the last position are left out,
  as in the authors' plot.

The KL contributions of every head are computed once per export (`ctx.memo`).
"""

from __future__ import annotations

import numpy as np

from detokgui.core.base.progress import Job
from detokgui.core.model.conventions import PAPER_QUERY_POSITION
from detokgui.core.model.terms import TERM_NAMES
from detokgui.core.text_side.empirical import (
    DEFINITION_LABELS,
    DEFINITION_SHORT,
    definition_temperature,
    iter_kl,
)
from detokgui.figures import style
from detokgui.figures.labels import (
    POSITION_LABEL,
    footer,
    heads_text,
    position_note,
    with_temperature,
)
from detokgui.figures.observed import ZOOM_KEYS, draw_observed, observed
from detokgui.figures.registry import DEFAULT_MAX_TEXTS, Drawn, FigureContext, figure
from detokgui.figures.style import COLUMN_IN, TEXT_IN

KL_DEFINITION = "paper"
CAP = f"first {DEFAULT_MAX_TEXTS} corpus windows by default (--max-texts)"
KL_CONVENTION = (f"{DEFINITION_LABELS[KL_DEFINITION]}; mean over texts with 95% CI (±1.96 SE); "
                 f"i = 0 and the last position left out; {CAP}")
FIG3E_CONVENTION = ("observed: the model's layer-0 attention, mean and 95% percentile interval "
                    "over the corpus windows longer than i; prediction: paper convention (key "
                    "E_v[1/σ(e_v+p_j)], query σ_i = vocabulary mean) softmax / τ; the "
                    f"last {ZOOM_KEYS} keys; {CAP}")
TERM_TEX = {"ee": "ee", "pp": "pp", "pe": "pe", "ep": "ep", "e": "e", "p": "p"}


def _with_cap(ctx: FigureContext, convention: str) -> str:
    """The convention text with the cap this export used."""
    return convention.replace(CAP, f"first {ctx.max_texts} corpus windows (--max-texts)")


def _windows_note(ctx: FigureContext) -> str:
    return f"first {ctx.max_texts} windows of the corpus " + ", ".join(
        p.name for p in ctx.corpus)


# --------------------------------------------------------------------------- Fig 3-E


@figure("fig03e_observed", paper="Fig 3-E", needs_corpus=True,
        title="Observed attention at {i} (mean and 95% interval over texts) against "
              "softmax(T_pp + T_p)",
        convention=FIG3E_CONVENTION)
def fig3e(ctx: FigureContext) -> Job[Drawn]:
    hs = ctx.paper_heads((1, 7))
    i = ctx.paper_position(PAPER_QUERY_POSITION)
    obs = yield from observed(ctx, hs, i)
    with style.style():
        fig, axes = style.new_figure(
            0.55 * COLUMN_IN, 0.4 * COLUMN_IN * len(hs) + 0.35, len(hs), 1,
            footer=footer(ctx, position_note(ctx, [PAPER_QUERY_POSITION], [i]), f"{obs.rows.windows} windows "
                          f"longer than i of the {_windows_note(ctx)}", "prediction: paper σ"))
        for r, h in enumerate(hs):
            draw_observed(axes[r, 0], obs, r, h)
            axes[r, 0].set_ylabel(f"Head {h}")
        axes[-1, 0].set_xlabel(POSITION_LABEL)
        style.top_legend(fig, axes[0, 0], ncols=2, fontsize=style.FOOTER_PT + 0.5)

    def table():
        m, a, b, p = obs.mean.tolist(), obs.lo.tolist(), obs.hi.tolist(), obs.pred.tolist()
        tau = float(ctx.layer.temperature)
        for r, h in enumerate(hs):
            for jj in range(i + 1):
                yield (h, i, jj, m[r][jj], a[r][jj], b[r][jj], p[r][jj], obs.rows.windows,
                       "paper", tau)

    header = ["head", "i", "j", "observed_mean", "observed_lo", "observed_hi", "predicted",
              "windows", "convention", "temperature"]
    return Drawn(fig, (header, table()),
                 convention=with_temperature(ctx, _with_cap(ctx, FIG3E_CONVENTION)),
                 notes=f"{heads_text(hs)}; {position_note(ctx, [PAPER_QUERY_POSITION], [i])}; "
                       f"{obs.rows.windows} windows of {obs.rows.texts} read")


# --------------------------------------------------------------------------- Fig 4, 13


def kl_all_heads(ctx: FigureContext) -> Job:
    """The KL contributions of every head over the text windows, once per export."""
    return ctx.memo(f"text.kl.{KL_DEFINITION}", lambda: iter_kl(
        ctx.layer, ctx.texts(), KL_DEFINITION))


def contribution_band(res, head: int, term: str):
    """(mean, low, high) over i for one head and term: the mean over texts and mean ±
    1.96 SE; NaN at i = 0, at the last position and where the mean is not above 1e-10
    (a log axis)."""
    r, x = res.heads.index(head), res.terms.index(term)
    mean = res.contribution[r, x].astype(np.float64).copy()
    se = res.stderr[r, x].astype(np.float64)
    mean[0] = np.nan
    mean[-1] = np.nan
    mean[~(mean > 1e-10)] = np.nan
    return mean, mean - 1.96 * se, mean + 1.96 * se


def _kl_figure(ctx: FigureContext, hs, width: float, ncols: int, panel_aspect: float):
    res = yield from kl_all_heads(ctx)
    reach = int(np.count_nonzero(res.texts))
    i = np.arange(res.contribution.shape[-1])
    nrows, ncols = style.grid_shape(len(hs), ncols)
    with style.style():
        fig, axes = style.new_figure(
            width, nrows * width / ncols * panel_aspect + 0.3, nrows, ncols, sharex=True,
            footer=footer(ctx, f"{res.n_texts} windows: {_windows_note(ctx)}",
                          DEFINITION_SHORT[KL_DEFINITION],
                          "band: mean ± 1.96 SE over texts"))
        for ax, h in zip(axes.flat, hs):
            lowest = np.inf
            for term in TERM_NAMES:
                mean, lo, hi = contribution_band(res, h, term)
                style.plot_band(ax, i, mean, np.maximum(lo, 1e-12), hi,
                                label=rf"$C^{{\mathrm{{{TERM_TEX[term]}}}}}$")
                if np.isfinite(mean).any():
                    lowest = min(lowest, float(np.nanmin(mean)))
            ax.set_yscale("log")
            if np.isfinite(lowest):
                ax.set_ylim(bottom=lowest / 10)
            ax.set_xlim(0, max(1, reach - 1))
            style.panel_title(ax, rf"$C_{{i,{h}}}$")
        style.hide_unused(axes, len(hs))
        for ax in axes[-1]:
            ax.set_xlabel("Present token position ($i$)")
        style.top_legend(fig, axes.flat[0], ncols=6, fontsize=style.FOOTER_PT + 1)

    tau = float(definition_temperature(ctx.layer, res.definition))

    def rows():
        c, se = res.contribution.tolist(), res.stderr.tolist()
        texts = res.texts.tolist()
        for h in hs:
            r = res.heads.index(h)
            for x, term in enumerate(res.terms):
                for ii, k in enumerate(texts):
                    if k:
                        m, s = c[r][x][ii], se[r][x][ii]
                        yield (h, ii, term, m, s, m - 1.96 * s, m + 1.96 * s, int(k),
                               res.definition, tau)

    header = ["head", "i", "term", "contribution", "stderr", "ci_lo", "ci_hi", "texts",
              "definition", "temperature"]
    return Drawn(fig, (header, rows()),
                 convention=with_temperature(ctx, _with_cap(ctx, KL_CONVENTION)),
                 notes=f"{heads_text(hs)}; {res.n_texts} windows")


@figure("fig04_six_terms", paper="Fig 4", needs_corpus=True,
        title="Contribution C of each of the six terms per query position (heads 1 and 7)",
        convention=KL_CONVENTION)
def fig4(ctx: FigureContext) -> Job[Drawn]:
    hs = ctx.paper_heads((1, 7))
    return (yield from _kl_figure(ctx, hs, COLUMN_IN, 2, 0.75))


@figure("fig13_six_terms_all_heads", paper="Fig 13", needs_corpus=True,
        title="Contribution of the six terms per query position, every head",
        convention=KL_CONVENTION)
def fig13(ctx: FigureContext) -> Job[Drawn]:
    hs = list(range(ctx.layer.n_heads))
    return (yield from _kl_figure(ctx, hs, TEXT_IN, 4, 0.6))
