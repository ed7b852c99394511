"""The paper's figures that need only the weights (Kamoda et al. 2025, Figs 2-3, 6-10, 12),
drawn with the authors' conventions and layouts (their `plots/` and `visualize/` code):

- T_ee heatmaps: 100 tokens drawn uniformly with replacement (torch generator, seed 42,
  as theirs, so GPT-2 gives the paper's sample), sigma per token = mean over positions,
  red < 0 < blue (the authors' RdBu), colour bar on top, the sample index on both axes.
- Position terms: the "paper" convention of `core.position_side.positional` (key side E_v[1/sigma],
  query side sigma_i = vocabulary mean / max / min as three lines, 95% percentile bands
  over the vocabulary); the softmax is of the vocabulary-mean line divided by the model's
  temperature tau (sqrt(d'); 1 for GPT-Neo), which every footer states. Query positions
  are the paper's (500; 50, 500, 1000), scaled to the model's positions when it has fewer
  than 1024.
- Heads: the paper's (1 and 7; 4 and 7 for Fig 2-A; 0 for Fig 7) unless --heads.
"""

from __future__ import annotations

import numpy as np
import torch

from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import Job
from detokgui.core.model.conventions import COLOUR_SIGN_NOTE, PAPER_QUERY_POSITION, SigmaChoice
from detokgui.core.model.tokens import display_token, resolve_token
from detokgui.core.position_side import positional as pos
from detokgui.core.token_side.affinity import affinity_block, topk_keys
from detokgui.figures import style
from detokgui.figures.labels import (
    POSITION_LABEL,
    footer,
    heads_text,
    position_note,
    tee_symbol,
    with_temperature,
)
from detokgui.figures.observed import draw_observed, observed
from detokgui.figures.registry import (
    PAPER_POSITIONS,
    Drawn,
    FigureContext,
    FigureSkipped,
    figure,
)
from detokgui.figures.style import COLUMN_IN, SIGMA_COLOURS, TEXT_IN

PAPER_POSITION = ("paper convention (authors' code): key side E_v[1/σ(e_v+p_j)]; query side "
                  "σ_i = vocabulary mean / max / min of σ(e_v+p_i) (one line each); band: 95% "
                  "percentile interval over the vocabulary v of the per-token values")
PAPER_POSITION_SHORT = ("σ: paper convention, key E_v[1/σ(e_v+p_j)], query σ_i = mean/max/min "
                        "over v; band 95% PI over v")
SOFTMAX_CONVENTION = PAPER_POSITION + "; softmax of the vocabulary-mean line / τ"
TOKEN_SIGMA = ("σ per token = mean over positions of σ(e_v+p_j), the authors' code (float32 "
               "here; their Table 1 used float16, so near-ties may order differently)")
SIGMA_I_LABELS = {"mean": r"mean $\sigma_i$", "max": r"max $\sigma_i$", "min": r"min $\sigma_i$"}
SIGMA_I_KINDS = ("mean", "max", "min")
TEE_SAMPLE, TEE_SEED, TEE_TICK = 100, 42, 17
TOPK_WORDS, TOPK_K = ("iens", "tarian", " Jackson"), 5


def _tp(h):
    return rf"$T^{{\mathrm{{p}}}}_{{j,{h}}}$"


def _tpp(i, h):
    return rf"$T^{{\mathrm{{pp}}}}_{{{i},j,{h}}}$"


def _tp_tpp(i, h):
    return rf"$T^{{\mathrm{{pp}}}}_{{{i},j,{h}}}+T^{{\mathrm{{p}}}}_{{j,{h}}}$"


def _softmax(i, h):
    return (rf"$\mathrm{{softmax}}_j\,(T^{{\mathrm{{pp}}}}_{{{i},j,{h}}}"
            rf"+T^{{\mathrm{{p}}}}_{{j,{h}}})/\tau$")


# --------------------------------------------------------------------------- data


def _lines(ctx: FigureContext, i: int, hs) -> dict[str, pos.PositionalBias]:
    """The paper-convention bias at query position i for the three query sigmas."""
    return pos.bias_lines(ctx.layer, i, hs, SIGMA_I_KINDS, convention="paper", bands=True)


BIAS_COLUMNS = ["head", "i", "sigma_i", "j", "t_p", "t_p_lo", "t_p_hi", "t_pp", "t_pp_lo",
                "t_pp_hi", "total", "total_lo", "total_hi", "softmax", "convention",
                "temperature"]


def _bias_table(results: list[pos.PositionalBias]):
    def rows():
        for b in results:
            arrays = [b.t_p, b.t_p_lo, b.t_p_hi, b.t_pp, b.t_pp_lo, b.t_pp_hi, b.total,
                      b.total_lo, b.total_hi, b.softmax]
            arrays = [a.tolist() for a in arrays]
            for r, h in enumerate(b.heads):
                for j in range(b.i + 1):
                    yield (h, b.i, b.sigma, j, *(float(a[r][j]) for a in arrays), b.convention,
                           float(b.temperature))

    return list(BIAS_COLUMNS), rows()


def _tp_all(ctx: FigureContext, hs) -> pos.PositionalBias:
    """T_p over every key position (it does not depend on i or on the query sigma)."""
    return pos.positional_bias(ctx.layer, ctx.n_positions - 1, "mean", hs, "paper", bands=True)


def _tp_table(b: pos.PositionalBias, raw: np.ndarray):
    cols = [raw.tolist(), b.t_p.tolist(), b.t_p_lo.tolist(), b.t_p_hi.tolist()]

    def rows():
        for r, h in enumerate(b.heads):
            for j in range(b.i + 1):
                yield (h, j, *(float(c[r][j]) for c in cols), b.convention)

    return ["head", "j", "raw", "t_p", "t_p_lo", "t_p_hi", "convention"], rows()


# --------------------------------------------------------------------------- drawing


def _draw_tp(ax, b: pos.PositionalBias, r: int, h: int) -> None:
    style.plot_band(ax, b.j, b.t_p[r], b.t_p_lo[r], b.t_p_hi[r])
    style.panel_title(ax, _tp(h))


def _draw_bands(ax, lines, r, name: str, title: str) -> None:
    """One line with its 95% band per query sigma (mean, max, min) for the field `name`
    of the `PositionalBias` results (t_pp or total)."""
    for kind in SIGMA_I_KINDS:
        b = lines[kind]
        style.plot_band(ax, b.j, getattr(b, name)[r], getattr(b, f"{name}_lo")[r],
                        getattr(b, f"{name}_hi")[r], color=SIGMA_COLOURS[kind],
                        label=SIGMA_I_LABELS[kind])
    style.panel_title(ax, title)


def _draw_tpp(ax, lines, r, h, i) -> None:
    _draw_bands(ax, lines, r, "t_pp", _tpp(i, h))


def _draw_total(ax, lines, r, h, i) -> None:
    _draw_bands(ax, lines, r, "total", _tp_tpp(i, h))


def _draw_softmax(ax, lines, r, h, i, short: bool = False) -> None:
    for kind in SIGMA_I_KINDS:
        b = lines[kind]
        ax.plot(b.j, b.softmax[r], color=SIGMA_COLOURS[kind], label=SIGMA_I_LABELS[kind])
    style.panel_title(ax, _softmax_short(i, h) if short else _softmax(i, h))


def _softmax_short(i, h):
    """The softmax label for narrow panels: the sum named by its query and head only."""
    return rf"$\mathrm{{softmax}}_j\,(T^{{\mathrm{{pp+p}}}}_{{{i},j,{h}}})$"


def _xlabels(axes) -> None:
    for ax in axes[-1]:
        ax.set_xlabel(POSITION_LABEL)


# --------------------------------------------------------------------------- Fig 2


@figure("fig02a_topk", paper="Fig 2-A",
        title="Top-5 previous tokens by T_ee for the current tokens 'iens', 'tarian', "
              "' Jackson' (heads 4 and 7)",
        convention=TOKEN_SIGMA)
def fig2a(ctx: FigureContext) -> Drawn:
    layer = ctx.layer
    tok = layer.tokenizer
    if tok is None:
        raise FigureSkipped("the model has no tokenizer, so the paper's words cannot be looked up")
    hs = ctx.paper_heads((4, 7))
    queries, left_out = [], []
    for w in TOPK_WORDS:  # one token each in GPT-2; another tokenizer may split them
        try:
            queries.append((w, resolve_token(tok, w, "the paper's word")))
        except InputError:
            left_out.append(w)
    if not queries:
        raise FigureSkipped(f"none of the paper's words ({', '.join(map(repr, TOPK_WORDS))}) "
                            "is one token of this tokenizer")
    results = {q: topk_keys(layer, q, TOPK_K, SigmaChoice("mean"), hs) for _, q in queries}
    cell_rows = [[(_clip(display_token(tok, int(results[q].ids[r, rank]))),
                   f"{float(results[q].scores[r, rank]):.2f}") for _, q in queries]
                 for r in range(len(hs)) for rank in range(TOPK_K)]
    n_rows = len(cell_rows) + 1
    with style.style():
        fig, axes = style.new_figure(
            COLUMN_IN, 0.125 * (n_rows + len(hs)) + 0.05,
            footer=footer(ctx, heads_text(hs), f"top {TOPK_K} keys by T_ee, score after each",
                          "σ per token: mean over positions"))
        _draw_table(axes[0, 0], [f"current: {display_token(tok, q)}" for _, q in queries],
                    hs, cell_rows)

    def rows():
        for _w, q in queries:
            res = results[q]
            for r, h in enumerate(hs):
                for rank in range(TOPK_K):
                    key = int(res.ids[r, rank])
                    seq = tok.decode([key, q], clean_up_tokenization_spaces=False)
                    yield (h, q, display_token(tok, q), rank + 1, key, display_token(tok, key),
                           float(res.scores[r, rank]), seq, "mean over positions")

    header = ["head", "query_id", "query_token", "rank", "key_id", "key_token", "score",
              "sequence", "sigma"]
    notes = heads_text(hs)
    if left_out:
        notes += (f"; left out, not one token of this tokenizer: "
                  f"{', '.join(map(repr, left_out))}")
    return Drawn(fig, (header, rows()), notes=notes)


def _clip(text: str, n: int = 13) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _draw_table(ax, columns: list[str], hs, cell_rows) -> None:
    """A booktabs-style table: one block of TOPK_K ranked rows per head, each query column
    a (token, score) pair; rules above and below the header and at the end."""
    ax.axis("off")
    n_lines = 1 + len(hs) * (TOPK_K + 1)
    dy = 1.0 / n_lines
    x0, width = 0.07, 0.93 / len(columns)
    y = 1.0 - dy / 2

    def rule(yy, lw):
        ax.plot([0, 1], [yy, yy], color="black", linewidth=lw, transform=ax.transAxes,
                clip_on=False)

    rule(1.0, 0.6)
    for c, name in enumerate(columns):
        ax.text(x0 + c * width, y, name, transform=ax.transAxes, va="center", ha="left",
                fontweight="bold", fontsize=style.SMALL_PT)
    rule(1.0 - dy, 0.4)
    for r, h in enumerate(hs):
        y -= dy
        ax.text(0.0, y, f"head {h}", transform=ax.transAxes, va="center", ha="left",
                fontstyle="italic", fontsize=style.SMALL_PT)
        for rank in range(TOPK_K):
            y -= dy
            ax.text(0.0, y, f"{rank + 1}", transform=ax.transAxes, va="center", ha="left",
                    fontsize=style.SMALL_PT, color="0.4")
            for c, (token, score) in enumerate(cell_rows[r * TOPK_K + rank]):
                ax.text(x0 + c * width, y, token, transform=ax.transAxes, va="center",
                        ha="left", fontsize=style.SMALL_PT)
                ax.text(x0 + (c + 1) * width - 0.02, y, score, transform=ax.transAxes,
                        va="center", ha="right", fontsize=style.SMALL_PT, color="0.35")
    rule(0.0, 0.6)


def _tee_sample(layer) -> list[int]:
    g = torch.Generator().manual_seed(TEE_SEED)
    return torch.randint(0, layer.n_vocab, (TEE_SAMPLE,), generator=g).tolist()


def _tee_figure(ctx: FigureContext, hs, raw: bool, width: float, ncols: int):
    layer = ctx.layer
    ids = _tee_sample(layer)
    choice = SigmaChoice("none" if raw else "mean")
    values = affinity_block(layer, ids, sigma=choice, heads=hs).double().cpu().numpy()
    nrows, ncols = style.grid_shape(len(hs), ncols)
    panel = width / ncols
    with style.style():
        fig, axes = style.new_figure(
            width, nrows * panel * 1.18 + 0.05, nrows, ncols,
            footer=footer(ctx, heads_text(hs), f"{TEE_SAMPLE} tokens drawn uniformly "
                          f"(seed {TEE_SEED})", "no LayerNorm (raw)" if raw
                          else "σ per token: mean over positions", COLOUR_SIGN_NOTE))
        ticks = np.arange(0, TEE_SAMPLE, TEE_TICK)
        for ax, (r, h) in zip(axes.flat, enumerate(hs)):
            style.diverging_heatmap(fig, ax, values[r], tee_symbol(h, raw))
            ax.set_xticks(ticks)
            ax.set_yticks(ticks)
            ax.tick_params(labelsize=style.FOOTER_PT + 0.5, length=1.5)
        style.hide_unused(axes, len(hs))
        for ax in axes[:, 0]:
            ax.set_ylabel(r"Token $\mathrm{ID}_i$")
        for ax in axes[-1]:
            ax.set_xlabel(r"Token $\mathrm{ID}_j$")

    def rows():
        names = [display_token(layer.tokenizer, t) for t in ids]
        for r, h in enumerate(hs):
            block = values[r].tolist()
            for a, (qa, qn) in enumerate(zip(ids, names)):
                for b, (kb, kn) in enumerate(zip(ids, names)):
                    yield (h, a, qa, qn, b, kb, kn, float(block[a][b]), choice.convention)

    header = ["head", "query_index", "query_id", "query_token", "key_index", "key_id",
              "key_token", "value", "sigma"]
    return fig, (header, rows())


@figure("fig02b_tee", paper="Fig 2-B",
        title="T_ee between 100 tokens drawn from the vocabulary (heads 1 and 7)",
        convention=TOKEN_SIGMA)
def fig2b(ctx: FigureContext) -> Drawn:
    hs = ctx.paper_heads((1, 7))
    fig, table = _tee_figure(ctx, hs, raw=False, width=COLUMN_IN, ncols=len(hs))
    return Drawn(fig, table, notes=heads_text(hs))


@figure("fig12_tee_all_heads", paper="Fig 12",
        title="T_ee between 100 tokens drawn from the vocabulary, every head (with LayerNorm)",
        convention=TOKEN_SIGMA)
def fig12(ctx: FigureContext) -> Drawn:
    hs = list(range(ctx.layer.n_heads))
    fig, table = _tee_figure(ctx, hs, raw=False, width=TEXT_IN, ncols=4)
    return Drawn(fig, table)


@figure("fig12_tee_all_heads_raw", paper="Fig 12 (without LayerNorm)",
        title="e_i W^QK e_j^T between the same 100 tokens, every head, without LayerNorm",
        convention="no LayerNorm (raw e W^QK e^T)")
def fig12_raw(ctx: FigureContext) -> Drawn:
    hs = list(range(ctx.layer.n_heads))
    fig, table = _tee_figure(ctx, hs, raw=True, width=TEXT_IN, ncols=4)
    return Drawn(fig, table)


# --------------------------------------------------------------------------- Fig 3


@figure("fig03_position_bias", paper="Fig 3 (A-D; E with a corpus)",
        title="A: T_p; B: T_pp at {i}; C: T_pp + T_p; D: its softmax; E (with a corpus): "
              "observed attention against D (heads 1 and 7)",
        convention=PAPER_POSITION + "; E as fig03e_observed")
def fig3(ctx: FigureContext) -> Job[Drawn]:
    hs = ctx.paper_heads((1, 7))
    i = ctx.paper_position(PAPER_QUERY_POSITION)
    tp = _tp_all(ctx, hs)
    lines = _lines(ctx, i, hs)
    obs, why = None, ""
    if ctx.corpus:
        try:
            obs = yield from observed(ctx, hs, i)
        except InputError as exc:
            why = f"no panel E: {exc}"
    ncols = 5 if obs is not None else 4
    e_note = (f"E: {obs.rows.windows} corpus windows, mean and 95% interval; last 16 keys"
              if obs is not None else "")
    with style.style():
        fig, axes = style.new_figure(
            TEXT_IN, 0.145 * TEXT_IN * len(hs) + 0.25, len(hs), ncols,
            footer=footer(ctx, heads_text(hs), position_note(ctx, [PAPER_QUERY_POSITION], [i]),
                          PAPER_POSITION_SHORT, e_note))
        for r, h in enumerate(hs):
            _draw_tp(axes[r, 0], tp, r, h)
            _draw_tpp(axes[r, 1], lines, r, h, i)
            _draw_total(axes[r, 2], lines, r, h, i)
            _draw_softmax(axes[r, 3], lines, r, h, i, short=obs is not None)
            if obs is not None:
                draw_observed(axes[r, 4], obs, r, h)
            axes[r, 0].set_ylabel(f"Head {h}")
        for r in range(len(hs) - 1):  # shared x per column (not E: its own range)
            for c in range(4):
                axes[r, c].sharex(axes[-1, c])
                axes[r, c].tick_params(labelbottom=False)
        for c, letter in enumerate("ABCDE"[:ncols]):
            style.panel_letter(axes[0, c], letter)
        handles, labels = axes[0, 1].get_legend_handles_labels()
        if obs is not None:
            more = axes[0, 4].get_legend_handles_labels()
            handles, labels = handles + more[0], labels + more[1]
        fig.legend(handles, labels, loc="outside upper center", ncols=len(labels))
        _xlabels(axes[:, :4])
        if obs is not None:
            axes[-1, 4].set_xlabel("$j$ (last 16 keys)")
    notes = f"{heads_text(hs)}; {position_note(ctx, [PAPER_QUERY_POSITION], [i])}"
    if obs is not None:
        notes += f"; E: {obs.rows.windows} windows (data in fig03e_observed.csv)"
    elif why:
        notes += f"; {why}"
    return Drawn(fig, _bias_table(list(lines.values())), notes=notes,
                 convention=with_temperature(ctx, PAPER_POSITION + "; E as fig03e_observed"),
                 uses_corpus=obs is not None)


@figure("fig03a_tp", paper="Fig 3-A", title="T_p over past positions j (heads 1 and 7)",
        convention=PAPER_POSITION)
def fig3a(ctx: FigureContext) -> Drawn:
    hs = ctx.paper_heads((1, 7))
    tp = _tp_all(ctx, hs)
    raw = pos.positional_bias(ctx.layer, ctx.n_positions - 1, "none", hs).t_p
    with style.style():
        fig, axes = style.new_figure(
            0.55 * COLUMN_IN, 0.4 * COLUMN_IN * len(hs) + 0.15, len(hs), 1, sharex=True,
            footer=footer(ctx, "σ: paper convention (key E_v[1/σ])", "band: 95% PI over v"))
        for r, h in enumerate(hs):
            _draw_tp(axes[r, 0], tp, r, h)
            axes[r, 0].set_ylabel(f"Head {h}")
        _xlabels(axes)
    return Drawn(fig, _tp_table(tp, raw), notes=heads_text(hs))


@figure("fig03b_tpp", paper="Fig 3-B",
        title="T_pp at query position {i} for the mean / max / min query sigma "
              "(heads 1 and 7)", convention=PAPER_POSITION)
def fig3b(ctx: FigureContext) -> Drawn:
    hs = ctx.paper_heads((1, 7))
    i = ctx.paper_position(PAPER_QUERY_POSITION)
    lines = _lines(ctx, i, hs)
    with style.style():
        fig, axes = style.new_figure(
            0.55 * COLUMN_IN, 0.4 * COLUMN_IN * len(hs) + 0.35, len(hs), 1, sharex=True,
            footer=footer(ctx, position_note(ctx, [PAPER_QUERY_POSITION], [i]), "σ: paper convention",
                          "band: 95% PI over v"))
        for r, h in enumerate(hs):
            _draw_tpp(axes[r, 0], lines, r, h, i)
            axes[r, 0].set_ylabel(f"Head {h}")
        style.top_legend(fig, axes[0, 0], ncols=3, fontsize=style.FOOTER_PT + 0.5)
        _xlabels(axes)
    return Drawn(fig, _bias_table(list(lines.values())),
                 notes=f"{heads_text(hs)}; {position_note(ctx, [PAPER_QUERY_POSITION], [i])}")


@figure("fig03cd_tp_tpp", paper="Fig 3-C, 3-D",
        title="T_pp + T_p at {i} before and after the softmax (heads 1 and 7)",
        convention=SOFTMAX_CONVENTION)
def fig3cd(ctx: FigureContext) -> Drawn:
    hs = ctx.paper_heads((1, 7))
    i = ctx.paper_position(PAPER_QUERY_POSITION)
    lines = _lines(ctx, i, hs)
    with style.style():
        fig, axes = style.new_figure(
            COLUMN_IN, 0.36 * COLUMN_IN * len(hs) + 0.35, len(hs), 2, sharex=True,
            footer=footer(ctx, position_note(ctx, [PAPER_QUERY_POSITION], [i]), PAPER_POSITION_SHORT))
        for r, h in enumerate(hs):
            _draw_total(axes[r, 0], lines, r, h, i)
            _draw_softmax(axes[r, 1], lines, r, h, i)
            axes[r, 0].set_ylabel(f"Head {h}")
        axes[0, 0].set_title("Before softmax")
        axes[0, 1].set_title("After softmax")
        style.top_legend(fig, axes[0, 0])
        _xlabels(axes)
    return Drawn(fig, _bias_table(list(lines.values())),
                 convention=with_temperature(ctx, SOFTMAX_CONVENTION),
                 notes=f"{heads_text(hs)}; {position_note(ctx, [PAPER_QUERY_POSITION], [i])}")


# --------------------------------------------------------------------------- Figs 6-10


@figure("fig06r_wpe_variance", paper="Fig 6 (right)",
        title="Var(p_i) of the position embedding at the first and the last 11 positions",
        convention="population variance over the d dimensions (no LayerNorm)")
def fig6r(ctx: FigureContext) -> Drawn:
    var = pos.position_variance(ctx.layer)
    L = len(var)
    n = min(11, L)
    head, tail = np.arange(n), np.arange(L - n, L)
    with style.style():
        fig, axes = style.new_figure(0.5 * COLUMN_IN, 0.5 * COLUMN_IN, 2, 1,
                                     footer=footer(ctx, f"L = {L}", "no LayerNorm"))
        for ax, idx in zip(axes[:, 0], (head, tail)):
            ax.plot(idx, var[idx], marker="o", markersize=1.8)
            ax.set_xticks(idx[::5])
            style.panel_title(ax, r"$\mathrm{Var}(\mathbf{p}_i)$")
            ax.set_xmargin(0.04)
        axes[-1, 0].set_xlabel("Position ($i$)")
    rows = ((j, float(v)) for j, v in enumerate(var.tolist()))
    return Drawn(fig, (["position", "variance"], rows))


@figure("fig07_raw_tpp_last", paper="Fig 7",
        title="p_i W^QK p_j^T without LayerNorm for the last five query positions (head 0)",
        convention="no LayerNorm (raw)")
def fig7(ctx: FigureContext) -> Drawn:
    h = ctx.paper_heads((0,))[0] if not ctx.heads else 0
    res = pos.raw_pp_last_positions(ctx.layer, 5, [h])
    with style.style():
        fig, axes = style.new_figure(COLUMN_IN, 0.36 * COLUMN_IN,
                                     footer=footer(ctx, f"head {h}", "no LayerNorm"))
        ax = axes[0, 0]
        for r, i in enumerate(res.positions):
            ax.plot(np.arange(i + 1), res.values[0, r, : i + 1], label=f"$i={i}$")
        style.panel_title(ax, rf"$\mathbf{{p}}_i\mathbf{{W}}^{{QK}}_{{{h}}}\mathbf{{p}}_j^\top$")
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
        ax.set_xlabel(POSITION_LABEL)

    def rows():
        for r, i in enumerate(res.positions):
            for j, v in enumerate(res.values[0, r, : i + 1].tolist()):
                yield (h, i, j, float(v))

    return Drawn(fig, (["head", "i", "j", "raw_t_pp"], rows()), notes=f"head {h}")


@figure("fig08_tp_all_heads", paper="Fig 8", title="T_p over past positions j, every head",
        convention=PAPER_POSITION)
def fig8(ctx: FigureContext) -> Drawn:
    hs = list(range(ctx.layer.n_heads))
    tp = _tp_all(ctx, hs)
    raw = pos.positional_bias(ctx.layer, ctx.n_positions - 1, "none", hs).t_p
    nrows, ncols = style.grid_shape(len(hs), 4)
    with style.style():
        fig, axes = style.new_figure(TEXT_IN, 0.19 * TEXT_IN * nrows + 0.1, nrows, ncols,
                                     sharex=True, footer=footer(ctx, PAPER_POSITION_SHORT))
        for ax, (r, h) in zip(axes.flat, enumerate(hs)):
            _draw_tp(ax, tp, r, h)
        style.hide_unused(axes, len(hs))
        _xlabels(axes)
    return Drawn(fig, _tp_table(tp, raw))


def _all_heads_positions(ctx: FigureContext):
    paper = list(PAPER_POSITIONS)
    used = sorted({ctx.paper_position(p) for p in paper})
    return paper, used


def _per_head_grid(ctx: FigureContext, draw, legend_from: int):
    hs = list(range(ctx.layer.n_heads))
    paper, used = _all_heads_positions(ctx)
    lines = {i: _lines(ctx, i, hs) for i in used}
    with style.style():
        fig, axes = style.new_figure(
            TEXT_IN, 0.085 * TEXT_IN * len(hs) + 0.35, len(hs), len(used), sharex="col",
            footer=footer(ctx, position_note(ctx, paper, used), PAPER_POSITION_SHORT))
        for r, h in enumerate(hs):
            for c, i in enumerate(used):
                draw(axes[r, c], lines[i], r, h, i)
        style.top_legend(fig, axes[0, legend_from])
        for ax, i in zip(axes[-1], used):
            ax.set_xlabel(f"Past token position ($0\\leq j\\leq {i}$)")
    results = [b for i in used for b in lines[i].values()]
    return Drawn(fig, _bias_table(results), notes=position_note(ctx, paper, used))


@figure("fig09_tpp_all_heads", paper="Fig 9",
        title="T_pp at {i3} for the mean / max / min query sigma, every head",
        convention=PAPER_POSITION)
def fig9(ctx: FigureContext) -> Drawn:
    return _per_head_grid(ctx, _draw_tpp, 0)


@figure("fig10_softmax_all_heads", paper="Fig 10",
        title="softmax_j (T_pp + T_p) / τ at {i3}, every head",
        convention=SOFTMAX_CONVENTION)
def fig10(ctx: FigureContext) -> Drawn:
    drawn = _per_head_grid(ctx, _draw_softmax, 0)
    drawn.convention = with_temperature(ctx, SOFTMAX_CONVENTION)
    return drawn
