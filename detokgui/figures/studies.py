"""Key figures of the two layer-0 studies that need only the weights:

- "contextual circuit" (B4): every head's positional pattern
  softmax_{j<=n}((T_ep + T_pp + T_p)/tau), averaged over a seeded sample of query
  tokens at n = 399 (400 keys: a 20 x 20 grid, j row by row, the query bottom right), with
  the head's class from `core.position_side.positional.iter_classify_heads`;
- "layer 0 by hand" (B6): the position embedding's dimensions P[:, k] as curves, grouped
  linear / periodic / other by `core.position_side.neurons`, with the statistics that decide
  the group.
"""

from __future__ import annotations

import numpy as np
from matplotlib.colors import LogNorm

from detokgui.core.base.progress import Job, rescaled
from detokgui.core.position_side import neurons as nr
from detokgui.core.position_side import positional as pos
from detokgui.figures import style
from detokgui.figures.labels import footer, with_temperature
from detokgui.figures.registry import Drawn, FigureContext, FigureSkipped, figure
from detokgui.figures.style import TEXT_IN

PATTERN_FLOOR = 1e-4  # the colour scale's lower end (log scale)
CURVES_PER_GROUP = 4


B4_CONVENTION = ("B4: softmax / τ, query sigma exact, key sigma = vocabulary mean (mean-sigma); "
                 "pattern averaged over the classification's sampled query tokens")


@figure("study_b4_positional_patterns", paper="B4 (contextual circuit)",
        title="Positional pattern of every head at query position 399 as a 20 x 20 grid, "
              "with the head classification",
        convention=B4_CONVENTION)
def b4_patterns(ctx: FigureContext) -> Job[Drawn]:
    res = yield from ctx.memo("b4.classification", lambda: pos.iter_classify_heads(ctx.layer))
    grids = pos.pattern_grid(res.mean_pattern)  # [H, rows, cols]
    H = len(res.heads)
    nrows, ncols = style.grid_shape(H, 4)
    panel = TEXT_IN / ncols
    norm = LogNorm(PATTERN_FLOOR, 1.0)
    rows, cols = grids.shape[1:]
    with style.style():
        fig, axes = style.new_figure(
            TEXT_IN, nrows * panel * rows / cols * 1.02 + 0.15, nrows, ncols,
            footer=footer(ctx, f"n = {res.n}: keys j = 0..{res.n} row by row on {rows} x {cols}, "
                          "the query bottom right", f"mean over {len(res.tokens)} sampled query "
                          "tokens", "query σ exact, key σ = vocabulary mean"))
        im = None
        for ax, (r, h) in zip(axes.flat, enumerate(res.heads)):
            g = np.clip(grids[r], PATTERN_FLOOR, 1.0)
            g[np.isnan(grids[r])] = np.nan
            im = ax.imshow(g, norm=norm, cmap="viridis", interpolation="none")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(f"head {h}: {res.labels[r]}", pad=2)
            for spine in ax.spines.values():
                spine.set_linewidth(0.3)
        style.hide_unused(axes, H)
        cb = fig.colorbar(im, ax=axes, location="right", fraction=0.03, pad=0.01, aspect=30)
        cb.set_label("mean attention weight (log scale)")
        cb.outline.set_linewidth(0.3)

    def table_rows():
        c = grids.shape[2]
        for r, h in enumerate(res.heads):
            for j, v in enumerate(res.mean_pattern[r].tolist()):
                yield (h, res.labels[r], res.n, j, j // c, j % c, float(v), tau)

    tau = float(ctx.layer.temperature)
    header = ["head", "label", "n", "j", "grid_row", "grid_col", "mean_pattern", "temperature"]
    notes = f"n = {res.n}; " + "; ".join(f"{h}: {lab}" for h, lab in zip(res.heads, res.labels))
    return Drawn(fig, (header, table_rows()), notes=notes,
                 convention=with_temperature(ctx, B4_CONVENTION))


@figure("study_b6_pe_neurons", paper="B6 (layer 0 by hand)",
        title="Position-embedding dimensions P[:, k] grouped linear / periodic / other, "
              "with the fit statistics that decide the group",
        convention="raw position embedding (no LayerNorm); groups by "
                   "core.position_side.neurons thresholds")
def b6_neurons(ctx: FigureContext) -> Drawn:
    st = nr.neuron_stats(ctx.layer)
    curves = nr.position_curves(ctx.layer)
    j = np.arange(curves.shape[0])
    with style.style():
        fig, axes = style.new_figure(
            TEXT_IN, 0.42 * TEXT_IN, 2, 2,
            footer=footer(ctx, f"curves: the {CURVES_PER_GROUP} largest-norm dims of each group",
                          f"linear: R² ≥ {nr.LINEAR_MIN_R2}; periodic: ≥ "
                          f"{nr.PERIODIC_MIN_CYCLES} cycles and FFT peak share ≥ "
                          f"{nr.PERIODIC_MIN_PEAK_SHARE}; other: neither", "raw P (no LayerNorm)"))
        for ax, group in zip(axes.flat, nr.NEURON_GROUPS):
            dims = st.dims_in(group)
            for k in dims[:CURVES_PER_GROUP]:
                if group == "linear":
                    what = f"$R^2$ {st.r2[k]:.2f}"
                elif group == "periodic":
                    what = f"period {st.period[k]:.1f}"
                else:
                    what = f"norm {st.norm[k]:.2f}"
                ax.plot(j, curves[:, k], linewidth=0.6, label=f"dim {k}: {what}")
            style.panel_title(ax, f"{group}: {len(dims)} of {len(st.group)} dims")
            if len(dims):
                ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5),
                          fontsize=style.FOOTER_PT + 0.5)
            else:
                ax.text(0.5, 0.5, "none", transform=ax.transAxes, ha="center", va="center",
                        color="0.4")
                ax.set_yticks([])
            ax.set_xlim(0, len(j) - 1)
            ax.set_xlabel("Position ($j$)")
        ax = axes[1, 1]
        colours = {"linear": "C0", "periodic": "C1", "other": "0.6"}
        cycles = np.maximum(st.frequency, 0.8)  # no dominant frequency: drawn at the left edge
        for group in ("other", "periodic", "linear"):  # the rare groups drawn on top
            sel = np.array([g == group for g in st.group])
            ax.scatter(cycles[sel], st.peak_share[sel], s=3, color=colours[group], label=group,
                       linewidths=0)
        ax.set_xscale("log")
        ax.axvline(nr.PERIODIC_MIN_CYCLES, color="0.3", linewidth=0.4, linestyle="--")
        ax.axhline(nr.PERIODIC_MIN_PEAK_SHARE, color="0.3", linewidth=0.4, linestyle="--")
        ax.set_xlabel("Dominant frequency (cycles over the positions)")
        ax.set_ylabel("FFT peak share")
        ax.set_ylim(0, 1.02)
        ax.set_xlim(0.7, max(2.0, len(j) / 2) * 1.4)
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=style.FOOTER_PT + 0.5)
        style.panel_title(ax, "what decides the group")
    cols = [st.norm, st.slope, st.r2, st.frequency, st.period, st.peak_share]
    cols = [np.asarray(c, dtype=np.float64).tolist() for c in cols]
    rows = ((k, *(float(c[k]) for c in cols), st.group[k]) for k in range(len(st.group)))
    header = ["dim", "norm", "slope", "r2", "frequency", "period", "peak_share", "group"]
    counts = {g: st.group.count(g) for g in nr.NEURON_GROUPS}
    return Drawn(fig, (header, rows), notes=", ".join(f"{g}: {n}" for g, n in counts.items()))


NEURONS_SHOWN = 7
NEURON_TOKENS = 5


@figure("study_c5_contextual_neurons", paper="C5 (contextual circuit)",
        title="Top contextual neurons: the tokens that push each neuron up or down through "
              "the contextual heads' OV circuits",
        convention="contextual heads from the B4 classification; content factor at the mean "
                   "query position; norm_h = vocabulary mean of f_h (weight-only); c_m(x) = "
                   "ext(x) · W2[:, m] without ln_2's scale; neurons ranked by the std of c_m "
                   "over the vocabulary")
def c5_neurons(ctx: FigureContext) -> Job[Drawn]:
    from detokgui.core.model.tokens import display_token
    from detokgui.core.text_side.circuits import iter_contextual_circuit, iter_rank_neurons
    from detokgui.core.text_side.tables import neuron_ranking_table

    layer = ctx.layer
    res = yield from rescaled(ctx.memo("b4.classification",
                                            lambda: pos.iter_classify_heads(layer)), 0.0, 0.4)
    hs = [h for h, lab in zip(res.heads, res.labels) if lab == "contextual"]
    if not hs:
        raise FigureSkipped("no head of this model is classified contextual (B4), so there "
                            "is no contextual circuit")
    circuit = yield from rescaled(iter_contextual_circuit(layer, heads=hs), 0.4, 0.5)
    rank = yield from rescaled(
        iter_rank_neurons(layer, circuit, top=NEURONS_SHOWN, k=NEURON_TOKENS), 0.5, 1.0)
    tok = layer.tokenizer
    with style.style():
        fig, axes = style.new_figure(
            TEXT_IN, 0.5 * TEXT_IN, 2, 4,
            footer=footer(ctx, f"contextual heads {', '.join(map(str, hs))} (B4)",
                          "c_m(x) = ext(x)·W2[:, m], ln_2 scale left out",
                          "norm_h: vocabulary mean of f_h (weight-only)"))
        ax = axes[-1, 0]  # bottom left: its x label sits with the bars' labels
        size = np.sort(rank.size)[::-1]
        ax.plot(np.arange(1, len(size) + 1), size, linewidth=0.8)
        ax.scatter(np.arange(1, NEURONS_SHOWN + 1), size[:NEURONS_SHOWN], s=4, color="C3",
                   zorder=3)
        ax.set_xscale("log")
        ax.set_xlabel("Neuron rank")
        ax.set_ylabel("std over tokens of $c_m$")
        ax.set_ylim(0, size[0] * 1.08)
        ax.set_title("contextual component per neuron", pad=2)
        bars = [a for a in axes.flat if a is not axes[-1, 0]]
        for ax, r in zip(bars, range(len(rank.top_neurons))):
            m = int(rank.top_neurons[r])
            top, bottom = rank.top_values[r], rank.bottom_values[r]
            names = ([display_token(tok, int(t)) for t in rank.top_ids[r]]
                     + [display_token(tok, int(t)) for t in rank.bottom_ids[r]][::-1])
            values = np.concatenate([top, bottom[::-1]])
            y = np.arange(len(values))[::-1]
            ax.barh(y, values, color=["C0"] * len(top) + ["C3"] * len(bottom), height=0.7)
            ax.set_yticks(y, [n if len(n) <= 12 else n[:11] + "…" for n in names],
                          fontsize=style.FOOTER_PT + 0.5)
            ax.axvline(0, color="0.3", linewidth=0.4)
            ax.set_xmargin(0.06)
            ax.tick_params(axis="x", labelsize=style.FOOTER_PT + 0.5)
            ax.set_title(f"neuron {m}", pad=2)
        for ax in bars[len(rank.top_neurons):]:
            ax.set_visible(False)
        for ax in axes[-1, 1:]:
            ax.set_xlabel("$c_m(x)$")
    notes = (f"heads {', '.join(map(str, hs))}; top neurons "
             f"{', '.join(str(int(m)) for m in rank.top_neurons)}")
    return Drawn(fig, neuron_ranking_table(layer, rank), notes=notes)
