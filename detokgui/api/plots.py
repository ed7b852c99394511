"""Figures of the results: `plot(df)` (also `df.dg.plot()`) draws a DataFrame returned by
an analysis of `detokgui.api`, and `figure(layer, key)` draws one of the figures that
`detokgui export figures` writes.

`plot` draws from the DataFrame's rows only, so that a filtered frame
(`df[df["head"] == 7]`) draws what it holds and a frame read back from a file draws the
same. It uses the exported figures' look and drawing helpers (`detokgui.figures.style`:
printed sizes, the T_ee heatmap in red < 0 < blue, bands, in-panel titles, the mean / max /
min sigma colours) and ends with the footer every exported figure has: the model and the
conventions of `df.attrs`. Per-head figures have one panel per head in the frame
(`heads=[...]` keeps only some).

The window's plots export their SVG and PDF through the same drawers (`figures.view_figure`):
`DRAWERS` also holds one per table a view plots that no analysis returns (the positional
bias's T_p band and B3 curves, the ROC curve, the sorted score matrix, ...), keyed by the
name the view's `PlotFrame` declares; attrs["view"] and attrs["conventions"] (the view's
own words for its conventions) then join the footer.

`figure(layer, key, heads=..., corpus=...)` is the exported figure itself: the
registry's builder (`detokgui.figures.registry`) with the paper's settings, the same
code and the same Figure as `export figures --only KEY`.

Each function returns a `matplotlib.figure.Figure` (never pyplot: no global state); in
Jupyter a returned Figure shows inline.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from detokgui.api.jobs import ProgressArg, run_job
from detokgui.core.base.errors import InputError
from detokgui.core.model.conventions import COLOUR_SIGN_NOTE, TERM_COLOURS
from detokgui.core.model.tokens import SPACE_MARK
from detokgui.figures import style
from detokgui.figures.labels import POSITION_LABEL, tee_symbol
from detokgui.figures.style import COLUMN_IN, SIGMA_COLOURS, TEXT_IN

#: attrs shown in a figure's footer, in this order (the others are arguments already
#: visible in the panels' titles)
FOOTER_KEYS = ("view", "sigma_label", "convention_label", "convention", "definition", "label",
               "no_bigram_label", "zero_counts_label", "circuit", "final_norm", "source",
               "conventions")
PATTERN_FLOOR = 1e-4
BAR_LABEL_CHARS = 12


def plot(df: pd.DataFrame, *, heads=None) -> Figure:
    """The Figure of a DataFrame returned by a `detokgui.api` analysis (by its
    attrs["analysis"]); `heads` keeps only those heads of a per-head figure."""
    analysis = df.attrs.get("analysis")
    draw = DRAWERS.get(analysis)
    if draw is None:
        raise InputError(f"This DataFrame is not a detokgui result that can be plotted "
                         f"(attrs['analysis'] = {analysis!r}); plot one of "
                         f"{', '.join(sorted(DRAWERS))}.")
    if heads is not None and "head" in df.columns:
        keep = [int(h) for h in np.atleast_1d(heads)]
        df = df[df["head"].isin(keep)]
    if df.empty:
        raise InputError("The DataFrame has no rows to plot.")
    return draw(df)


def figure(layer, key: str, *, heads=None, corpus=(), max_texts: int | None = None,
           compare=None, progress: ProgressArg = True) -> Figure:
    """The figure `key` of `detokgui export figures` (a file stem of its index.md, e.g.
    "fig03_position_bias", "fig02d_auroc") for this layer, drawn by the same builder:
    the paper's heads unless `heads`, the corpus figures on `corpus` ("sample" or paths),
    the comparison figure ("study_compare_heads") against the layer `compare`.
    InputError when the key is unknown or the figure cannot be drawn here (the reason the
    index would give)."""
    from detokgui.figures.export import check_corpus
    from detokgui.figures.registry import (
        DEFAULT_MAX_TEXTS,
        FIGURES,
        FigureContext,
        FigureSkipped,
        load_figures,
    )

    load_figures()
    spec = FIGURES.get(key)
    if spec is None or not spec.implemented:
        known = ", ".join(k for k, s in sorted(FIGURES.items()) if s.implemented)
        raise InputError(f"There is no figure {key!r}; choose one of {known}.")
    paths = [corpus] if isinstance(corpus, str) else list(corpus or ())
    ctx = FigureContext(layer, check_corpus(paths),
                        tuple(int(h) for h in np.atleast_1d(heads)) if heads is not None else None,
                        max_texts=DEFAULT_MAX_TEXTS if max_texts is None else max_texts,
                        compare=compare)
    if spec.needs_corpus and not ctx.corpus:
        raise InputError(f"The figure {key} needs a corpus: corpus=\"sample\" or paths.")
    try:
        drawn = spec.build(ctx)
        if not hasattr(drawn, "figure"):
            drawn = run_job(drawn, key, progress)
    except FigureSkipped as exc:
        raise InputError(f"The figure {key} cannot be drawn for {layer.name}: {exc}") from None
    return drawn.figure


# --------------------------------------------------------------------------- shared


def _footer(df: pd.DataFrame, *parts) -> list[str]:
    """The model, `parts`, then the attrs of FOOTER_KEYS: a label as it is, another value
    as "key: value", "conventions" (a list of texts, e.g. a window view's) one by one."""
    a = df.attrs
    shown: list[str] = []
    for k in FOOTER_KEYS:
        value = a.get(k)
        if value is None or (isinstance(value, (str, list, tuple)) and not value):
            continue
        if k == "conventions":
            shown += [str(v) for v in value]
        elif k.endswith("label") or k in ("circuit", "label"):
            shown.append(str(value))
        else:
            shown.append(f"{k}: {value}")
    return [str(a.get("model", "")), *parts, *shown]


def _shown(text) -> str:
    """A token's text as the figures show it: a visible leading space, escaped controls."""
    text = str(text)
    if text.startswith(" "):
        text = SPACE_MARK + text[1:]
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= BAR_LABEL_CHARS else text[: BAR_LABEL_CHARS - 1] + "…"


def _heads(df: pd.DataFrame) -> list[int]:
    return [int(h) for h in pd.unique(df["head"])]


def _grid(df: pd.DataFrame, n: int, ncols: int, panel_h: float, *parts, width=None,
          **kw):
    """n panels in rows of `ncols`; `width` by default the text width for a full row, a
    row of fewer panels narrower (one: a column's width)."""
    nrows, used = style.grid_shape(n, ncols)
    if width is None:
        width = max(TEXT_IN * used / ncols, COLUMN_IN)
    ncols = used
    fig, axes = style.new_figure(width, nrows * panel_h + 0.15, nrows, ncols,
                                 footer=_footer(df, *parts), **kw)
    style.hide_unused(axes, n)
    return fig, axes


def _matrix(rows: pd.DataFrame, i: str, j: str, value: str) -> np.ndarray:
    """values at (row i, column j) as a matrix; cells without a row are NaN."""
    n = int(max(rows[i].max(), rows[j].max())) + 1
    out = np.full((n, n), np.nan)
    out[rows[i].to_numpy(int), rows[j].to_numpy(int)] = rows[value].to_numpy(float)
    return out


def _diverging(fig, ax, values: np.ndarray, title: str) -> None:
    style.diverging_heatmap(fig, ax, np.nan_to_num(values), title)
    if np.isnan(values).any():  # the causal mask above the diagonal: blank, not 0
        ax.images[0].set_data(np.ma.masked_invalid(values))


def _bars(ax, names, values, colours, title: str) -> None:
    y = np.arange(len(values))[::-1]
    ax.barh(y, values, color=colours, height=0.7)
    ax.set_yticks(y, [_shown(n) for n in names], fontsize=style.FOOTER_PT + 0.5,
                  parse_math=False)
    ax.axvline(0, color="0.3", linewidth=0.4)
    ax.set_xmargin(0.06)
    ax.tick_params(axis="x", labelsize=style.FOOTER_PT + 0.5)
    ax.set_title(title, pad=2, parse_math=False)


# --------------------------------------------------------------------------- token side


def _term_panels(df: pd.DataFrame, names: list[str], what: str) -> Figure:
    h = _heads(df)[0]
    rows = df[df["head"] == h]
    with style.style():
        fig, axes = _grid(df, len(names), 4, 0.3 * TEXT_IN,
                          f"head {h}{' (the first in the frame)' if len(_heads(df)) > 1 else ''}",
                          f"{what}; rows i (query), columns j (key)", COLOUR_SIGN_NOTE)
        for ax, name in zip(axes.flat, names):
            _diverging(fig, ax, _matrix(rows[rows["term"] == name], "i", "j", "value"), name)
            ax.set_xlabel("$j$")
            ax.set_ylabel("$i$")
    return fig


def _terms(df):
    return _term_panels(df, list(pd.unique(df["term"])), "the six terms and the attention")


def _sentence(df):
    return _term_panels(df, list(pd.unique(df["term"])),
                        "six terms, their sum, predicted and actual attention")


def _sigma(df):
    with style.style():
        fig, axes = style.new_figure(COLUMN_IN, 0.5 * COLUMN_IN, footer=_footer(
            df, "line: mean over the vocabulary; band: min..max"))
        ax = axes[0, 0]
        style.plot_band(ax, df["position"], df["mean"], df["min"], df["max"])
        style.panel_title(ax, r"$\sigma(\mathbf{e}_v+\mathbf{p}_j)$")
        ax.set_xlabel("Position ($j$)")
    return fig


def _topk(df):
    anchor, ranked = df.columns[1], df.columns[5]  # <anchor>_token, <ranked>_token
    blocks = list(df.groupby([df.columns[0], "head"], sort=False))
    with style.style():
        fig, axes = _grid(df, len(blocks), 4, 0.28 * TEXT_IN, "bars: T_ee score, best first")
        for ax, ((_, h), rows) in zip(axes.flat, blocks):
            _bars(ax, rows[ranked], rows["score"], "C0",
                  f"{_shown(rows[anchor].iloc[0])}, head {h}")
    return fig


def _heatmap(df):
    hs = _heads(df)
    raw = df.attrs.get("sigma") == "none"
    with style.style():
        fig, axes = _grid(df, len(hs), 2, 0.5 * TEXT_IN, "rows: query tokens; columns: keys",
                          COLOUR_SIGN_NOTE,
                          width=TEXT_IN if len(hs) > 1 else 0.6 * TEXT_IN)
        for ax, h in zip(axes.flat, hs):
            rows = df[df["head"] == h]
            _diverging(fig, ax, _matrix(rows, "query_index", "key_index", "value"),
                       tee_symbol(h, raw))
            names = (rows.drop_duplicates("key_index").sort_values("key_index")["key_token"])
            step = max(1, len(names) // 30)
            ticks = np.arange(0, len(names), step)
            labels = [_shown(names.iloc[k]) for k in ticks]
            ax.set_xticks(ticks, labels, rotation=90, fontsize=style.FOOTER_PT + 0.5,
                          parse_math=False)
            ax.set_yticks(ticks, labels, fontsize=style.FOOTER_PT + 0.5, parse_math=False)
    return fig


def _neighbours(df):
    with style.style():
        fig, axes = style.new_figure(0.6 * COLUMN_IN, 0.1 * len(df) + 0.5,
                                     footer=_footer(df, "cosine in the token embedding"))
        _bars(axes[0, 0], df["token"], df["cosine"], "C0", "nearest tokens")
    return fig


# --------------------------------------------------------------------------- position side


def _bias(df):
    hs = _heads(df)
    i = df.attrs.get("i", int(df["j"].max()))
    with style.style():
        fig, axes = style.new_figure(TEXT_IN, 0.145 * TEXT_IN * len(hs) + 0.25, len(hs), 4,
                                     sharex=True, footer=_footer(df, f"i = {i}",
                                                                 "band: 95% PI over v"))
        for r, h in enumerate(hs):
            rows = df[df["head"] == h]
            j = rows["j"].to_numpy()
            for c, (name, tex) in enumerate((("t_p", rf"$T^{{\mathrm{{p}}}}_{{j,{h}}}$"),
                                             ("t_pp", rf"$T^{{\mathrm{{pp}}}}_{{{i},j,{h}}}$"))):
                style.plot_band(axes[r, c], j, rows[name], rows[f"{name}_lo"],
                                rows[f"{name}_hi"], color=SIGMA_COLOURS["mean"])
                style.panel_title(axes[r, c], tex)
            axes[r, 2].plot(j, rows["total"], color=SIGMA_COLOURS["mean"])
            style.panel_title(axes[r, 2], rf"$T^{{\mathrm{{pp}}}}+T^{{\mathrm{{p}}}}$ (head {h})")
            axes[r, 3].plot(j, rows["softmax"], color=SIGMA_COLOURS["mean"])
            style.panel_title(axes[r, 3], r"softmax$_j$")
            axes[r, 0].set_ylabel(f"Head {h}")
        for ax in axes[-1]:
            ax.set_xlabel(POSITION_LABEL)
    return fig


def _neurons(df):
    colours = {"linear": "C0", "periodic": "C1", "other": "0.6"}
    with style.style():
        fig, axes = style.new_figure(COLUMN_IN, 0.5 * COLUMN_IN, footer=_footer(
            df, "raw position embedding" if not df.attrs.get("scaled") else "P[j] / mean σ"))
        ax = axes[0, 0]
        for group, rows in df.groupby("group", sort=False):
            ax.bar(rows["dim"], rows["norm"], color=colours.get(group, "0.3"), width=1.0,
                   label=group)
        ax.set_xlabel("Dimension ($k$)")
        ax.set_ylabel("norm of P[:, k]")
        ax.legend(loc="upper right")
    return fig


def _pattern(df):
    hs = _heads(df)
    norm = LogNorm(PATTERN_FLOOR, 1.0)
    with style.style():
        fig, axes = _grid(df, len(hs), 4, 0.25 * TEXT_IN,
                          f"query {_shown(df['query_token'].iloc[0])} at n = {df['n'].iloc[0]}",
                          "keys j row by row, the query bottom right")
        im = None
        for ax, h in zip(axes.flat, hs):
            rows = df[df["head"] == h]
            grid = np.full((int(rows["grid_row"].max()) + 1, int(rows["grid_col"].max()) + 1),
                           np.nan)
            grid[rows["grid_row"].to_numpy(int), rows["grid_col"].to_numpy(int)] = np.clip(
                rows["pattern"].to_numpy(float), PATTERN_FLOOR, 1.0)
            # "nearest", as style.diverging_heatmap: librsvg and Qt smooth "none"'s image
            im = ax.imshow(grid, norm=norm, cmap="viridis", interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(f"head {h}", pad=2)
        cb = fig.colorbar(im, ax=axes, location="right", fraction=0.03, pad=0.01, aspect=30)
        cb.set_label("attention weight (log scale)")
    return fig


def _head_classes(df):
    criteria = ("span_fraction", "recent_weight", "self_top_fraction")
    x = np.arange(len(df))
    with style.style():
        fig, axes = style.new_figure(TEXT_IN, 0.3 * TEXT_IN, footer=_footer(
            df, f"n = {df['n'].iloc[0]}, {df['sample'].iloc[0]} sampled query tokens"))
        ax = axes[0, 0]
        for c, name in enumerate(criteria):
            ax.bar(x + (c - 1) * 0.27, df[name], width=0.27, label=name)
        ax.set_xticks(x, [f"{h}: {lab}" for h, lab in zip(df["head"], df["label"])],
                      rotation=30, ha="right", fontsize=style.FOOTER_PT + 0.5)
        ax.set_xlabel("Head and class")
        ax.set_ylim(0, 1.05)
        style.top_legend(fig, ax)
    return fig


def _slopes(df):
    hs = _heads(df)
    with style.style():
        fig, axes = _grid(df, len(hs), 4, 0.3 * TEXT_IN,
                          "slope per position of e_u W^QK p_j^T; top: rising, bottom: falling")
        for ax, h in zip(axes.flat, hs):
            rows = df[df["head"] == h]
            top, bottom = rows[rows["side"] == "top"], rows[rows["side"] == "bottom"][::-1]
            both = pd.concat([top, bottom])
            _bars(ax, both["token"], both["slope"], ["C0"] * len(top) + ["C3"] * len(bottom),
                  f"head {h}")
    return fig


# --------------------------------------------------------------------------- corpus


def _counts(df):
    counts = np.sort(df["count"].to_numpy(float))[::-1]
    counts = counts[counts > 0]
    what = "bigrams" if df.attrs.get("bigrams") else "tokens"
    with style.style():
        fig, axes = style.new_figure(COLUMN_IN, 0.55 * COLUMN_IN, footer=_footer(
            df, f"{len(counts)} {what} with a count", f"{df.attrs.get('corpus_tokens')} tokens"))
        ax = axes[0, 0]
        ax.loglog(np.arange(1, len(counts) + 1), counts)
        ax.set_xlabel(f"Rank of the {what[:-1]}")
        ax.set_ylabel("Corpus count")
    return fig


def _stats(df):
    with style.style():
        fig, axes = style.new_figure(COLUMN_IN, 0.55 * COLUMN_IN, footer=_footer(
            df, "self_rank = 1 + #{v ≠ u: T_ee(u,v) > T_ee(u,u)}"))
        ax = axes[0, 0]
        top = max(2.0, float(df["self_rank"].max()))
        bins = np.logspace(0, np.log10(top) + 0.01, 40)
        for h in _heads(df):
            ax.hist(df.loc[df["head"] == h, "self_rank"], bins=bins, histtype="step",
                    label=f"head {h}")
        ax.set_xscale("log")
        ax.set_xlabel("Self-rank of the query token among all keys")
        ax.set_ylabel("Query tokens")
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    return fig


def _auroc(df):
    means = df.groupby("head", sort=True)["auroc"].mean()
    return _auroc_bars(df, means.index.to_numpy(), means.to_numpy(),
                       f"mean over {df.groupby('head').size().iloc[0]} query tokens per head")


def _auroc_means(df):
    """The window's bar chart: one row per head with its mean AUROC already taken."""
    rows = df.sort_values("head")
    lo, hi = rows["query_tokens"].min(), rows["query_tokens"].max()
    return _auroc_bars(df, rows["head"].to_numpy(int), rows["mean_auroc"].to_numpy(float),
                       f"mean over the {lo if lo == hi else f'{lo}..{hi}'} query tokens "
                       "with a bigram per head")


def _auroc_bars(df, hs, values, note: str):
    best = int(np.nanargmax(values)) if np.isfinite(values).any() else -1
    with style.style():
        fig, axes = style.new_figure(COLUMN_IN, 0.42 * COLUMN_IN,
                                     footer=_footer(df, note, "as Fig 2-D"))
        ax = axes[0, 0]
        ax.bar(hs, values, color=["C3" if r == best else "C0" for r in range(len(hs))],
               width=0.7)
        ax.axhline(0.5, color="0.3", linewidth=0.4, linestyle="--")
        for h, m in zip(hs, values):
            if not np.isfinite(m):
                continue
            ax.text(h, m + 0.01, f"{m:.2f}", ha="center", va="bottom",
                    fontsize=style.FOOTER_PT + 0.5)
        ax.set_xticks(hs)
        ax.set_xlabel("Head")
        ax.set_ylabel("Mean AUROC")
        ax.set_ylim(0, 1.08)
    return fig


def _frequency(df):
    hs = _heads(df)
    rho = {int(k): v for k, v in (df.attrs.get("rho") or {}).items()}
    with style.style():
        fig, axes = _grid(df, len(hs), 4, 0.2 * TEXT_IN, "T_e against the token's corpus count",
                          sharex=True)
        for ax, h in zip(axes.flat, hs):
            rows = df[(df["head"] == h) & (df["count"] > 0)]
            ax.scatter(rows["count"], rows["t_e"], s=1.0, alpha=0.3, marker=".", linewidths=0,
                       rasterized=True)
            ax.set_xscale("log")
            ax.axhline(0, color="black", linewidth=0.4, linestyle="--")
            style.panel_title(ax, rf"$T^{{\mathrm{{e}}}}_{{j,{h}}}$"
                              + (f"  ρ = {rho[h]:.2f}" if h in rho else ""))
        for ax in axes[-1]:
            ax.set_xlabel("Token ($j$) count")
    return fig


# --------------------------------------------------------------------------- text side


def _empirical(df):
    hs = _heads(df)
    with style.style():
        fig, axes = _grid(df, len(hs), 4, 0.2 * TEXT_IN,
                          f"i = {df.attrs.get('i')}, {df['windows'].iloc[0]} windows",
                          sharex=True)
        for ax, h in zip(axes.flat, hs):
            rows = df[df["head"] == h]
            ax.plot(rows["j"], rows["empirical"], label="observed (mean)")
            ax.plot(rows["j"], rows["predicted"], label="predicted (B3)", linestyle="--")
            style.panel_title(ax, f"head {h}")
        style.top_legend(fig, axes[0, 0])
        for ax in axes[-1]:
            ax.set_xlabel(POSITION_LABEL)
    return fig


def _kl(df):
    hs = _heads(df)
    with style.style():
        fig, axes = _grid(df, len(hs), 4, 0.2 * TEXT_IN, "KL contribution of each term",
                          sharex=True)
        for ax, h in zip(axes.flat, hs):
            rows = df[df["head"] == h]
            for term, t in rows.groupby("term", sort=False):
                ax.plot(t["i"], t["contribution"], label=term)
            style.panel_title(ax, f"head {h}")
        style.top_legend(fig, axes[0, 0])
        for ax in axes[-1]:
            ax.set_xlabel("Query position ($i$)")
    return fig


def _sinks(df):
    """Per position: a panel per head with the six terms' advantages A^X_i over query
    position i and their sum A_i (black), or with attrs["show"] = "attention" (the
    window's choice) the attention to position 0 and its uniform share 1/(i+1); per head:
    the mean advantages as bars."""
    if "i" not in df.columns:
        return _sink_bars(df)
    hs = _heads(df)
    bos = ("position 0 = the prepended BOS token" if _true(df["bos"].iloc[0])
           else "position 0 = each text's first token")
    attention = df.attrs.get("show") == "attention"
    what = ("attention to key position 0 (dashed: 1/(i+1))" if attention
            else "logit advantage of key position 0 over the others")
    with style.style():
        fig, axes = _grid(df, len(hs), 4, 0.2 * TEXT_IN, f"{what}, {bos}", sharex=True)
        for ax, h in zip(axes.flat, hs):
            rows = df[df["head"] == h]
            if attention:
                ax.plot(rows["i"], rows["attention_to_0"], label="attention to 0")
                ax.plot(rows["i"], rows["uniform"], color="0.5", linestyle="--",
                        linewidth=0.8, label="1/(i+1)")
                ax.set_ylim(0, None)
            else:
                for t in TERM_COLOURS:
                    ax.plot(rows["i"], rows[f"adv_{t}"], color=TERM_COLOURS[t],
                            linewidth=0.8, label=f"$A^{{{t}}}$")
                ax.plot(rows["i"], rows["advantage"], color="black", linewidth=1.0,
                        label="$A$")
                ax.axhline(0, color="0.6", linewidth=0.4)
            mean_att = float(rows["attention_to_0"].mean())
            style.panel_title(ax, f"head {h}: mean α(i→0) {mean_att:.2g}")
        style.top_legend(fig, axes[0, 0])
        _x_labels(axes, "Query position ($i$)")
    return fig


def _true(value) -> bool:
    """A flag of a frame, also as read back from a CSV ("True")."""
    return value is True or str(value).lower() in ("true", "1")


def _sink_bars(df):
    hs = _heads(df)
    with style.style():
        fig, axes = _grid(df, 1, 1, 0.3 * TEXT_IN,
                          "mean logit advantage of key position 0 per term",
                          width=max(COLUMN_IN, min(TEXT_IN, 0.45 * len(hs))))
        ax = axes[0, 0]
        width = 0.8 / len(TERM_COLOURS)
        x = np.arange(len(hs))
        for k, t in enumerate(TERM_COLOURS):
            ax.bar(x + (k - 2.5) * width, df[f"adv_{t}"], width, color=TERM_COLOURS[t],
                   label=f"$A^{{{t}}}$")
        ax.axhline(0, color="0.3", linewidth=0.4)
        ax.set_xticks(x, [f"{h}\n{s}" for h, s in zip(hs, df["sink_term"])])
        ax.set_xlabel("head (and the term that most favours position 0)")
        ax.set_ylabel("mean advantage")
        style.top_legend(fig, ax)
    return fig


def _neuron(df):
    top, bottom = df[df["side"] == "top"], df[df["side"] == "bottom"][::-1]
    both = pd.concat([top, bottom])
    with style.style():
        fig, axes = style.new_figure(0.6 * COLUMN_IN, 0.09 * len(both) + 0.6,
                                     footer=_footer(df, "c_m(x) = ext(x)·W2[:, m]"))
        _bars(axes[0, 0], both["token"], both["contribution"],
              ["C0"] * len(top) + ["C3"] * len(bottom), f"neuron {df.attrs.get('neuron')}")
    return fig


def _ov(df):
    hs = _heads(df)
    with style.style():
        fig, axes = _grid(df, len(hs), 4, 0.3 * TEXT_IN,
                          f"{df['direction'].iloc[0]} of {_shown(df['token'].iloc[0])}")
        for ax, h in zip(axes.flat, hs):
            rows = df[df["head"] == h]
            top, bottom = rows[rows["side"] == "top"], rows[rows["side"] == "bottom"][::-1]
            both = pd.concat([top, bottom])
            _bars(ax, both["other_token"], both["score"],
                  ["C0"] * len(top) + ["C3"] * len(bottom), f"head {h}")
    return fig


# --------------------------------------------------------------------------- comparison


def _compare(df):
    from detokgui.figures.compare import MARKS, draw_similarity

    Ha, Hb = int(df["head_a"].max()) + 1, int(df["head_b"].max()) + 1
    sim = np.full((Ha, Hb), np.nan)
    sim[df["head_a"].to_numpy(int), df["head_b"].to_numpy(int)] = df["similarity"].to_numpy(float)
    chosen = df[df["assigned"] == 1]
    pairs = list(zip(chosen["head_a"].astype(int), chosen["head_b"].astype(int)))
    matched = (chosen["matched"] == 1).tolist() if "matched" in df else None
    rule = [df.attrs["no_match"]] if df.attrs.get("no_match") else []
    with style.style():
        fig, axes = style.new_figure(COLUMN_IN, 0.8 * COLUMN_IN, footer=_footer(
            df, f"B: {df.attrs.get('model_b', '')}", MARKS, *rule))
        draw_similarity(axes[0, 0], fig, sim, pairs, "A", "B", matched)
    return fig


def _compare_metrics(df):
    from detokgui.figures.compare import draw_metric_pairs

    metrics = list(pd.unique(df["metric"]))
    columns = ["head_a", "head_b", "metric", "value_a", "value_b", "difference"]
    columns += ["matched"] if "matched" in df.columns else []  # an older file has none
    rows = list(df[columns].itertuples(index=False, name=None))
    with style.style():
        fig, axes = _grid(df, len(metrics), 4, 0.22 * TEXT_IN,
                          f"B: {df.attrs.get('model_b', '')}",
                          "assigned heads, A against B: a→b matched, a↛b no match")
        draw_metric_pairs(axes.flat, rows, metrics)
    return fig


def _head_metrics(df):
    metrics = list(pd.unique(df["metric"]))
    with style.style():
        fig, axes = _grid(df, len(metrics), 4, 0.2 * TEXT_IN, "per head")
        for ax, m in zip(axes.flat, metrics):
            rows = df[df["metric"] == m]
            ax.bar(rows["head"].astype(int), rows["value"].astype(float), color="C0")
            ax.set_title(m, pad=2, fontsize=style.SMALL_PT)
            ax.set_xticks(rows["head"].astype(int))
            ax.tick_params(labelsize=style.FOOTER_PT + 0.5)
    return fig


# --------------------------------------------------------------------------- layer 1


def _layer1_parts(df) -> list[str]:
    attention = df.attrs.get("layer1_attention")
    return [f"layer 1: {attention}"] if attention else []


def _composition(df):
    from detokgui.figures.composition import ROWS_NOTE, composition_frame_figure

    return composition_frame_figure(df, footer=_footer(df, ROWS_NOTE, *_layer1_parts(df)))


def _behaviour(df):
    from detokgui.figures.composition import behaviour_frame_figure

    return behaviour_frame_figure(df, footer=_footer(df, *_layer1_parts(df)))


# --------------------------------------------------------------------------- window views
# The tables the window's plots export beside those of the analyses above (their CSV is
# the same table): a view's SVG and PDF are these figures.


def _head_panels(df, panel_h: float, *parts, ncols: int = 4, **kw):
    """A grid with one panel per head of `df`: (figure, [(axes, head, the head's rows)])."""
    hs = _heads(df)
    fig, axes = _grid(df, len(hs), ncols, panel_h, *parts, **kw)
    return fig, axes, [(ax, h, df[df["head"] == h]) for ax, h in zip(axes.flat, hs)]


def _x_labels(axes, text: str) -> None:
    for ax in axes[-1]:
        ax.set_xlabel(text)


def _log_y(df, ax) -> None:
    if df.attrs.get("log"):
        ax.set_yscale("log")


def _position_band(df):
    paper = df["convention"].iloc[0] == "paper"
    band = ("band: 95% PI over v of raw / σ(e_v+p_j)" if paper
            else "band: raw / max σ .. raw / min σ over v")
    with style.style():
        fig, axes, panels = _head_panels(df, 0.2 * TEXT_IN, "T_p over every key position",
                                         band, sharex=True)
        for ax, h, rows in panels:
            style.plot_band(ax, rows["j"], rows["t_p_mean"], rows["lower"], rows["upper"],
                            color=SIGMA_COLOURS["mean"])
            style.panel_title(ax, rf"$T^{{\mathrm{{p}}}}_{{j,{h}}}$")
        _x_labels(axes, POSITION_LABEL)
    return fig


BIAS_LINES = {"t_pp": r"$T^{{\mathrm{{pp}}}}_{{{i},j,{h}}}$",
              "total": r"$T^{{\mathrm{{pp}}}}+T^{{\mathrm{{p}}}}$ (head {h})",
              "softmax": r"softmax$_j$ (head {h})"}


def _bias_lines(df, column: str):
    """One of the B3 curves at query position i per head, a line per sigma in the frame
    (SIGMA_COLOURS)."""
    i = int(df["i"].iloc[0])
    sigmas = list(pd.unique(df["sigma"]))
    with style.style():
        fig, axes, panels = _head_panels(df, 0.2 * TEXT_IN, f"i = {i}",
                                         f"σ: {', '.join(sigmas)}", sharex=True)
        for ax, h, rows in panels:
            for sg, t in rows.groupby("sigma", sort=False):
                ax.plot(t["j"], t[column], color=SIGMA_COLOURS.get(sg, "0.3"), label=f"σ {sg}")
            style.panel_title(ax, BIAS_LINES[column].format(i=i, h=h))
        if len(sigmas) > 1:
            style.top_legend(fig, axes[0, 0])
        _x_labels(axes, POSITION_LABEL)
    return fig


def _pattern_lines(df):
    with style.style():
        fig, axes = style.new_figure(COLUMN_IN, 0.6 * COLUMN_IN, footer=_footer(
            df, f"query {_shown(df['query_token'].iloc[0])} at n = {df['n'].iloc[0]}"))
        ax = axes[0, 0]
        for h in _heads(df):
            rows = df[df["head"] == h]
            ax.plot(rows["j"], rows["pattern"], color=f"C{h % 10}", label=f"head {h}")
        _log_y(df, ax)
        ax.set_xlabel(POSITION_LABEL)
        ax.set_ylabel("Attention weight")
        ax.legend(loc="upper left", ncols=4, fontsize=style.FOOTER_PT + 0.5)
    return fig


def _slope_histogram(df):
    h = _heads(df)[0]
    with style.style():
        fig, axes = style.new_figure(COLUMN_IN, 0.5 * COLUMN_IN, footer=_footer(
            df, f"head {h}", "slope of e_u W^QK p_j^T over j, per token u of the vocabulary"))
        ax = axes[0, 0]
        ax.bar(df["left"], df["count"], width=df["right"] - df["left"], align="edge",
               color="C0")
        _log_y(df, ax)
        ax.set_xlabel("Slope per position")
        ax.set_ylabel("Tokens")
    return fig


def _position_curve(df):
    with style.style():
        fig, axes, panels = _head_panels(df, 0.2 * TEXT_IN, "raw e_u W^QK p_j^T and its "
                                         "least-squares line", ncols=2)
        for ax, h, rows in panels:
            ax.plot(rows["j"], rows["raw"], color="C0", label="raw")
            ax.plot(rows["j"], rows["fit"], color="C3", linestyle="--", label="least squares")
            style.panel_title(ax, f"{_shown(rows['token'].iloc[0])}, head {h}")
        style.top_legend(fig, axes[0, 0])
        _x_labels(axes, POSITION_LABEL)
    return fig


def _position_variance(df):
    with style.style():
        fig, axes = style.new_figure(COLUMN_IN, 0.5 * COLUMN_IN, footer=_footer(
            df, "variance over the dimensions k of each position embedding"))
        ax = axes[0, 0]
        ax.plot(df["position"], df["variance"], color="C0")
        _log_y(df, ax)
        ax.set_xlabel("Position ($j$)")
        ax.set_ylabel("Var$_k$ P[j, k]")
    return fig


def _last_positions(df):
    with style.style():
        fig, axes, panels = _head_panels(df, 0.2 * TEXT_IN, "T_pp without LayerNorm",
                                         sharex=True)
        for ax, h, rows in panels:
            for i, t in rows.groupby("i", sort=True):
                ax.plot(t["j"], t["raw_t_pp"], label=f"i = {i}")
            style.panel_title(ax, f"head {h}")
        style.top_legend(fig, axes[0, 0])
        _x_labels(axes, POSITION_LABEL)
    return fig


def _neuron_curves(df):
    with style.style():
        fig, axes = style.new_figure(COLUMN_IN, 0.55 * COLUMN_IN, footer=_footer(
            df, "P[j, k] / mean σ" if df.attrs.get("scaled") else "raw position embedding"))
        ax = axes[0, 0]
        for dim, rows in df.groupby("dim", sort=False):
            ax.plot(rows["position"], rows["value"], label=f"k = {dim}")
        ax.set_xlabel("Position ($j$)")
        ax.set_ylabel("P[j, k]")
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    return fig


def _overlap(df):
    with style.style():
        fig, axes = style.new_figure(COLUMN_IN, 0.5 * COLUMN_IN, footer=_footer(
            df, "share of each SVD direction's squared weight on the position-heavy dims"))
        ax = axes[0, 0]
        ax.bar(df["direction"], df["overlap"], color="C0", width=0.7)
        ax.axhline(float(df["baseline"].iloc[0]), color="0.3", linewidth=0.6, linestyle="--",
                   label="a random direction (m / d)")
        ax.set_xlabel("SVD direction of the token embedding (0: largest)")
        ax.set_ylabel("Share on heavy dims")
        style.top_legend(fig, ax)
    return fig


def _validation(df):
    neurons = [int(m) for m in pd.unique(df["neuron"])]
    with style.style():
        fig, axes = _grid(df, len(neurons), 3, 0.3 * TEXT_IN,
                          "predicted (bag of tokens) against actual (forward pass) "
                          "pre-activation")
        for ax, m in zip(axes.flat, neurons):
            rows = df[df["neuron"] == m]
            ax.scatter(rows["predicted"], rows["actual"], s=2.0, alpha=0.5, linewidths=0)
            ax.axline((0.0, 0.0), slope=1.0, color="0.5", linewidth=0.5, linestyle="--")
            ax.set_title(f"neuron {m}: r = {rows['correlation'].iloc[0]:.2f}", pad=2)
            ax.set_xlabel("Predicted")
            ax.set_ylabel("Actual")
    return fig


def _pattern_pair(df):
    with style.style():
        fig, axes = style.new_figure(COLUMN_IN, 0.55 * COLUMN_IN, footer=_footer(
            df, *([f"B: {df.attrs['model_b']}"] if df.attrs.get("model_b") else [])))
        ax = axes[0, 0]
        for name, rows in df.groupby("model", sort=False):
            ax.plot(rows["key_position"], rows["weight"], label=str(name))
        _log_y(df, ax)
        ax.set_xlabel(POSITION_LABEL)
        ax.set_ylabel("Attention weight")
        ax.legend(loc="upper left")
    return fig


def _score_matrix(df):
    row_side, col_side = df.columns[2].removesuffix("_id"), df.columns[5].removesuffix("_id")
    values = _matrix_of(df, "variance_rank", "score_rank", "t_ee")
    with style.style():
        fig, axes = style.new_figure(COLUMN_IN, 0.8 * COLUMN_IN, footer=_footer(
            df, f"head {_heads(df)[0]}", f"rows: {row_side} tokens by variance rank",
            f"columns: each row's {col_side} tokens by score rank"))
        ax = axes[0, 0]
        im = ax.imshow(values, cmap="viridis", interpolation="nearest", aspect="auto")
        cb = fig.colorbar(im, ax=ax, location="right", fraction=0.05, pad=0.02)
        cb.set_label("$T^{\\mathrm{ee}}$")
        ax.set_xlabel(f"{col_side.capitalize()} rank by score")
        ax.set_ylabel(f"{row_side.capitalize()} by variance rank")
    return fig


def _matrix_of(rows: pd.DataFrame, i: str, j: str, value: str) -> np.ndarray:
    """values at (rank i, rank j), both counted from 1, as a matrix; missing cells NaN."""
    r, c = rows[i].to_numpy(int) - 1, rows[j].to_numpy(int) - 1
    out = np.full((r.max() + 1, c.max() + 1), np.nan)
    out[r, c] = rows[value].to_numpy(float)
    return out


def _roc(df):
    with style.style():
        fig, _, panels = _head_panels(df, 0.3 * TEXT_IN, "keys ranked by T_ee(u, v)",
                                      "positives: the tokens that precede u", ncols=2)
        for ax, h, rows in panels:
            fpr, tpr = rows["fpr"].to_numpy(float), rows["tpr"].to_numpy(float)
            ax.plot(fpr, tpr, color=f"C{h % 10}")
            ax.plot([0, 1], [0, 1], color="0.5", linewidth=0.5, linestyle="--")
            ax.set_title(f"query id {rows['query_id'].iloc[0]}, head {h}: "
                         f"AUROC = {np.trapezoid(tpr, fpr):.3f}", pad=2)
            ax.set_xlabel("False-positive rate")
            ax.set_ylabel("True-positive rate")
    return fig


def _series(df):
    """A panel per metric with values (the corpus metrics of a series without a corpus
    have none: named in the footer), a line per head over the steps."""
    drawn = df[np.isfinite(df["value"].to_numpy(float))]
    metrics = list(pd.unique(drawn["metric"]))
    empty = [m for m in pd.unique(df["metric"]) if m not in metrics]
    with style.style():
        fig, axes = _grid(df, len(metrics), 3, 0.25 * TEXT_IN, "per head over training",
                          *([f"no values: {', '.join(empty)}"] if empty else []))
        for ax, m in zip(axes.flat, metrics):
            rows = drawn[drawn["metric"] == m]
            for h, t in rows.groupby("head", sort=True):
                t = t.sort_values("step")
                ax.plot(t["step"], t["value"], marker="o", markersize=2,
                        color=f"C{int(h) % 10}", label=f"head {h}")
            ax.set_title(m, pad=2, fontsize=style.SMALL_PT, parse_math=False)
            ax.set_xlabel("Training step")
        style.top_legend(fig, axes[0, 0], ncols=min(len(pd.unique(df["head"])), 8))
    return fig


DRAWERS: dict[str, Callable[[pd.DataFrame], Figure]] = {
    "terms": _terms, "sentence": _sentence, "sigma": _sigma, "topk": _topk,
    "heatmap": _heatmap, "neighbours": _neighbours, "bias": _bias, "neurons": _neurons,
    "pattern": _pattern, "head_classes": _head_classes, "slopes": _slopes,
    "counts": _counts, "stats": _stats, "auroc": _auroc, "frequency": _frequency,
    "empirical": _empirical, "kl": _kl, "sinks": _sinks, "neuron": _neuron, "ov": _ov,
    "compare": _compare, "compare_metrics": _compare_metrics, "head_metrics": _head_metrics,
    "series": _series, "composition": _composition, "behaviour": _behaviour,
    # the window's own tables (a view's SVG and PDF export)
    "bias_tp": _position_band,
    "bias_tpp": lambda df: _bias_lines(df, "t_pp"),
    "bias_total": lambda df: _bias_lines(df, "total"),
    "bias_softmax": lambda df: _bias_lines(df, "softmax"),
    "pattern_lines": _pattern_lines, "slope_histogram": _slope_histogram,
    "position_curve": _position_curve, "position_variance": _position_variance,
    "last_positions": _last_positions, "neuron_curves": _neuron_curves,
    "embedding_overlap": _overlap, "validation": _validation, "pattern_pair": _pattern_pair,
    "score_matrix": _score_matrix, "auroc_means": _auroc_means, "roc": _roc,
}
