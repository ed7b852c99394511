"""The paper's figures that need corpus counts (Kamoda et al. 2025, Fig 2-C, 2-D, 5, 6
left, 11), drawn as the authors' plots draw them:

- Fig 2-C: ROC curves of T_ee(u, .) for one current token u, one panel per head; the
  positives are the tokens that precede u in the corpus (weighted by count), the
  negatives every other token (`core.token_side.auroc.roc_curve`); sigma per token = mean over
  positions. The paper's u is 'iens'; when it is not one token of the tokenizer or never
  follows anything in the corpus, the word-continuation token (lower-case letters, no
  leading space, like 'iens') preceded by the most distinct tokens (the index says which).
- Fig 2-D: the mean bigram AUROC of every head (the paper's table as a bar chart) over
  the query tokens with at least one bigram (`BigramAUROC.head_means("skip")`); the CSV
  also has the authors' convention (tokens without a bigram scored 0).
- Fig 5 / 11: T_e(v) = b^QK_h e_v^T E_j[1/sigma(e_v + p_j)] (the authors' convention)
  against the token's corpus count on a log axis; tokens the corpus lacks are left out
  (no log count); Spearman's rho over the plotted tokens in each panel.
- Fig 6 left: Var(e_v) against the count, the same way.

Counts, AUROC and frequency statistics are computed once per export (`ctx.memo`) over
the whole corpus (counts and AUROC are also cached on disk by the core).
"""

from __future__ import annotations

import numpy as np

from detokgui.core.base.progress import Job
from detokgui.core.base.progress import rescaled as _rescaled
from detokgui.core.corpus.counts import iter_corpus_counts
from detokgui.core.model.conventions import SigmaChoice, sigma_stats_job
from detokgui.core.model.tokens import display_token, encode_text, token_strings
from detokgui.core.token_side.auroc import (
    NO_BIGRAM_LABELS,
    PositiveSets,
    iter_bigram_auroc,
    roc_curve,
)
from detokgui.core.token_side.frequency import frequency_stats
from detokgui.figures import style
from detokgui.figures.labels import footer, heads_text
from detokgui.figures.registry import Drawn, FigureContext, figure
from detokgui.figures.style import COLUMN_IN, TEXT_IN

ROC_WORD = "iens"
TOKEN_SIGMA_MEAN = "σ per token = mean over positions of σ(e_v+p_j)"
T_E_PAPER = ("T_e = b^QK e_v^T E_j[1/σ(e_v+p_j)] (authors' code); tokens absent from the "
             "corpus left out (no log count); Spearman ρ over the plotted tokens")
T_E_SHORT = "T_e = b^QK e_v^T E_j[1/σ(e_v+p_j)]; count-0 tokens left out"


# --------------------------------------------------------------------------- shared data


def counts(ctx: FigureContext) -> Job:
    """The corpus counts (whole corpus), once per export."""
    layer = ctx.layer
    return ctx.memo("corpus.counts", lambda: iter_corpus_counts(
        [str(p) for p in ctx.corpus], layer.tokenizer, layer.n_vocab))


def auroc(ctx: FigureContext) -> Job:
    """The bigram AUROC of every query token for every head, once per export."""
    c = yield from _rescaled(counts(ctx), 0.0, 0.05)
    return (yield from _rescaled(ctx.memo("corpus.auroc", lambda: iter_bigram_auroc(
        ctx.layer, c, SigmaChoice("mean"))), 0.05, 1.0))


def frequency(ctx: FigureContext) -> Job:
    """`frequency_stats` of every head with the authors' T_e, once per export."""
    c = yield from _rescaled(counts(ctx), 0.0, 0.5)

    def make():
        yield from _rescaled(sigma_stats_job(ctx.layer), 0.5, 0.95)
        return frequency_stats(ctx.layer, c, heads=None, t_e="paper")

    return (yield from ctx.memo("corpus.frequency", make))


def _corpus_name(ctx: FigureContext) -> str:
    return "corpus " + ", ".join(p.name for p in ctx.corpus)


# --------------------------------------------------------------------------- Fig 2-C


def roc_query(layer, c) -> tuple[int, str]:
    """The current token of Fig 2-C and why it was chosen (module docstring)."""
    tok = layer.tokenizer
    pos = PositiveSets.from_counts(c, layer)
    ids = encode_text(tok, ROC_WORD)
    if len(ids) == 1 and pos.m[ids[0]] > 0:
        return int(ids[0]), "the paper's token"
    names = token_strings(tok, layer.n_vocab)
    suffix = np.array([n.isalpha() and n.islower() and len(n) >= 3 for n in names])
    m = np.where(suffix, pos.m, 0)
    if m.max() > 0:
        return int(np.argmax(m)), (
            f"fallback: {ROC_WORD!r} has no bigram in this corpus; the word-continuation "
            "token (lower-case letters, no leading space) preceded by the most distinct tokens")
    return int(np.argmax(pos.m)), (
        f"fallback: {ROC_WORD!r} has no bigram in this corpus; the token preceded by the most "
        "distinct tokens")


@figure("fig02c_roc", paper="Fig 2-C", needs_corpus=True,
        title="ROC curve of T_ee for the previous tokens of 'iens' (heads 1 and 7)",
        convention=f"{TOKEN_SIGMA_MEAN}; positives = the tokens preceding the current token "
                   "in the corpus, weighted by bigram count; negatives = every other token")
def fig2c(ctx: FigureContext) -> Job[Drawn]:
    layer = ctx.layer
    c = yield from counts(ctx)
    u, why = roc_query(layer, c)
    hs = ctx.paper_heads((1, 7))
    roc = roc_curve(layer, c, u, SigmaChoice("mean"), hs)
    name = display_token(layer.tokenizer, u)
    with style.style():
        fig, axes = style.new_figure(
            COLUMN_IN, 0.55 * COLUMN_IN + 0.1, 1, len(hs), sharey=True,
            footer=footer(ctx, f"current token {name!r} ({why})", f"{roc.positives} previous "
                          f"tokens, {roc.weight} bigrams in the {_corpus_name(ctx)}",
                          "σ per token: mean over positions"))
        for ax, r, h in zip(axes[0], range(len(hs)), hs):
            (line,) = ax.plot(roc.fpr[r], roc.tpr[r])
            ax.fill_between(roc.fpr[r], roc.tpr[r], color=line.get_color(), alpha=0.2,
                            linewidth=0)
            ax.plot([0, 1], [0, 1], linestyle="--", color="0.3", linewidth=0.4)
            ax.text(0.1, 0.1, f"AUC: {roc.auroc[r]:.2f}", fontsize=style.SMALL_PT,
                    bbox={"boxstyle": "round", "fc": "w", "linewidth": 0.4})
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1)
            ax.set_title(f'"{name}"\nHead: {h}', pad=2)
            ax.set_xlabel("False Positive Rate")
        axes[0, 0].set_ylabel("True Positive Rate")

    def rows():
        for r, h in enumerate(hs):
            for k, (x, y) in enumerate(zip(roc.fpr[r].tolist(), roc.tpr[r].tolist())):
                yield (h, u, name, k, x, y, float(roc.auroc[r]), roc.positives, roc.weight,
                       "mean over positions")

    header = ["head", "query_id", "query_token", "point", "fpr", "tpr", "auroc", "positives",
              "bigrams", "sigma"]
    return Drawn(fig, (header, rows()), notes=f"{heads_text(hs)}; token {name!r}: {why}")


# --------------------------------------------------------------------------- Fig 2-D


@figure("fig02d_auroc", paper="Fig 2-D", needs_corpus=True,
        title="Mean bigram AUROC of T_ee per head",
        convention=f"{TOKEN_SIGMA_MEAN}; mean over the query tokens with at least one bigram "
                   "(the paper's code scored tokens without a bigram 0: column mean_auroc_zero "
                   "of the CSV)")
def fig2d(ctx: FigureContext) -> Job[Drawn]:
    res = yield from auroc(ctx)
    means, used = res.head_means("skip")
    zero, n_zero = res.head_means("zero")
    hs = res.heads
    best = int(np.nanargmax(means))
    with style.style():
        fig, axes = style.new_figure(
            COLUMN_IN, 0.42 * COLUMN_IN,
            footer=footer(ctx, f"mean over the {int(used[0])} query tokens with a bigram in "
                          f"the {_corpus_name(ctx)}", "σ per token: mean over positions"))
        ax = axes[0, 0]
        colours = ["C3" if r == best else "C0" for r in range(len(hs))]
        ax.bar(hs, means, color=colours, width=0.7)
        ax.axhline(0.5, color="0.3", linewidth=0.4, linestyle="--")
        for h, m in zip(hs, means):
            ax.text(h, m + 0.01, f"{m:.2f}", ha="center", va="bottom", fontsize=style.FOOTER_PT + 0.5)
        ax.set_xticks(hs)
        ax.set_xlabel("Head")
        ax.set_ylabel("Mean AUROC")
        ax.set_ylim(0, 1.08)
        ax.set_xmargin(0.02)

    rows = [(h, float(m), int(n), float(z), int(nz), NO_BIGRAM_LABELS["skip"],
             "mean over positions") for h, m, n, z, nz in zip(hs, means, used, zero, n_zero)]
    header = ["head", "mean_auroc", "tokens", "mean_auroc_zero", "tokens_zero", "no_bigram",
              "sigma"]
    return Drawn(fig, (header, rows), notes=f"highest: head {hs[best]} ({means[best]:.3f})")


# --------------------------------------------------------------------------- Fig 5, 11


def _scatter(ax, x, y) -> None:
    ax.scatter(x, y, s=1.0, alpha=0.3, marker=".", linewidths=0, rasterized=True)
    ax.set_xscale("log")


def _rho_text(ax, rho: float) -> None:
    ax.text(0.97, 0.05, f"ρ = {rho:.2f}", transform=ax.transAxes, ha="right", va="bottom",
            fontsize=style.SMALL_PT,
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.7, "pad": 0.3})


def _te_figure(ctx: FigureContext, hs, width: float, ncols: int, panel_aspect: float):
    fs = yield from frequency(ctx)
    rows_of = {h: r for r, h in enumerate(fs.heads)}
    used = fs.used
    x = fs.counts[used]
    nrows, ncols = style.grid_shape(len(hs), ncols)
    with style.style():
        fig, axes = style.new_figure(
            width, nrows * width / ncols * panel_aspect + 0.15, nrows, ncols, sharex=True,
            footer=footer(ctx, f"{fs.n_used} of {len(fs.counts)} tokens occur in the "
                          f"{_corpus_name(ctx)}", T_E_SHORT))
        for ax, h in zip(axes.flat, hs):
            r = rows_of[h]
            _scatter(ax, x, fs.t_e[r, used])
            ax.axhline(0, color="black", linewidth=0.4, linestyle="--")
            style.panel_title(ax, rf"$T^{{\mathrm{{e}}}}_{{j,{h}}}$")
            _rho_text(ax, float(fs.rho_t_e[r]))
        style.hide_unused(axes, len(hs))
        for ax in axes[-1]:
            ax.set_xlabel("Token ($j$) count")
    names = token_strings(ctx.layer.tokenizer, ctx.layer.n_vocab)

    def rows():
        c = fs.counts.tolist()
        ok = used.tolist()
        for h in hs:
            r = rows_of[h]
            te, rho = fs.t_e[r].tolist(), float(fs.rho_t_e[r])
            for v in range(len(c)):
                yield (h, v, names[v], c[v], te[v], int(ok[v]), rho, "paper")

    header = ["head", "token_id", "token", "count", "t_e", "used", "rho", "t_e_convention"]
    notes = "; ".join(f"head {h}: ρ = {fs.rho_t_e[rows_of[h]]:.3f}" for h in hs)
    return Drawn(fig, (header, rows()), notes=f"{notes} (over {fs.n_used} tokens)")


@figure("fig05_te_frequency", paper="Fig 5", needs_corpus=True,
        title="T_e of every token against its corpus count (heads 1 and 7)",
        convention=T_E_PAPER)
def fig5(ctx: FigureContext) -> Job[Drawn]:
    hs = ctx.paper_heads((1, 7))
    return (yield from _te_figure(ctx, hs, COLUMN_IN, 2, 0.72))


@figure("fig11_te_all_heads", paper="Fig 11", needs_corpus=True,
        title="T_e against corpus count, every head", convention=T_E_PAPER)
def fig11(ctx: FigureContext) -> Job[Drawn]:
    hs = list(range(ctx.layer.n_heads))
    return (yield from _te_figure(ctx, hs, TEXT_IN, 4, 0.6))


# --------------------------------------------------------------------------- Fig 6 left


@figure("fig06l_wte_variance", paper="Fig 6 (left)", needs_corpus=True,
        title="Var(e_v) of the token embedding against the token's corpus count",
        convention="population variance over the d dimensions (no LayerNorm); tokens absent "
                   "from the corpus left out; Spearman ρ over the plotted tokens")
def fig6l(ctx: FigureContext) -> Job[Drawn]:
    fs = yield from frequency(ctx)
    used = fs.used
    with style.style():
        fig, axes = style.new_figure(
            0.55 * COLUMN_IN, 0.5 * COLUMN_IN,
            footer=footer(ctx, f"{fs.n_used} tokens of the {_corpus_name(ctx)}", "no LayerNorm"))
        ax = axes[0, 0]
        _scatter(ax, fs.counts[used], fs.variance[used])
        ax.set_xlabel("Token count")
        style.panel_title(ax, r"$\mathrm{Var}(\mathbf{e}_{\mathrm{ID}})$")
        _rho_text(ax, fs.rho_variance)
    names = token_strings(ctx.layer.tokenizer, ctx.layer.n_vocab)

    def rows():
        c, var, ok = fs.counts.tolist(), fs.variance.tolist(), used.tolist()
        for v in range(len(c)):
            yield (v, names[v], c[v], var[v], int(ok[v]), fs.rho_variance)

    header = ["token_id", "token", "count", "variance", "used", "rho"]
    return Drawn(fig, (header, rows()), notes=f"ρ = {fs.rho_variance:.3f} over {fs.n_used} tokens")
