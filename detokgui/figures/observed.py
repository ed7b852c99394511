"""Fig 3-E's data and panel, shared by `fig03_position_bias` (panel E, with a corpus) and
`fig03e_observed`: the model's layer-0 attention alpha_{i,j,h} at query position i, mean
and 95% percentile interval over the corpus windows longer than i
(`core.text_side.empirical.iter_attention_rows`), against the prediction
softmax_j((T_pp + T_p)/tau) in the paper convention (`core.text_side.empirical.b3_prediction`),
drawn over the last `ZOOM_KEYS` keys j = i-15..i as the paper's panel (485..500)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from detokgui.core.base.progress import Job
from detokgui.core.base.progress import rescaled as _rescaled
from detokgui.core.model.conventions import inverse_sigma_job
from detokgui.core.text_side.empirical import AttentionRows, b3_prediction, iter_attention_rows
from detokgui.figures import style
from detokgui.figures.registry import FigureContext

ZOOM_KEYS = 16
OBSERVED_COLOUR = "red"
PREDICTION_COLOUR = "C0"


@dataclass
class Observed:
    """Fig 3-E's data for heads `heads` at query position i: the per-text rows, their mean
    and 95% percentile interval, and the paper-convention prediction, [h, i+1] each."""

    rows: AttentionRows
    mean: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    pred: np.ndarray

    @property
    def i(self) -> int:
        return self.rows.i


def observed(ctx: FigureContext, hs, i: int) -> Job[Observed]:
    """Fig 3-E's data (the attention rows are read once per export)."""
    layer = ctx.layer
    yield from _rescaled(inverse_sigma_job(layer), 0.0, 0.1)  # the tables of "paper"
    rows = yield from _rescaled(ctx.memo(f"text.rows.{i}.{list(hs)}", lambda: iter_attention_rows(
        layer, ctx.texts(), i, hs)), 0.1, 1.0)
    lo, hi = rows.percentiles(95.0)
    return Observed(rows, rows.mean(), lo, hi, b3_prediction(layer, i, hs, "paper"))


def draw_observed(ax, obs: Observed, r: int, h: int) -> None:
    """One Fig 3-E panel: observed (red, 95% band) and predicted (blue dots), last keys."""
    i = obs.i
    j = np.arange(i + 1)
    begin = max(0, i - ZOOM_KEYS + 1)
    style.plot_band(ax, j[begin:], obs.mean[r, begin:], obs.lo[r, begin:], obs.hi[r, begin:],
                    color=OBSERVED_COLOUR, label="observed")
    ax.plot(j[begin:], obs.pred[r, begin:], color=PREDICTION_COLOUR, marker="o",
            markersize=1.5, label=r"from $T^{\mathrm{pp}}+T^{\mathrm{p}}$")
    ax.set_xlim(begin, i)
    ax.set_ylim(bottom=0)
    style.panel_title(ax, rf"$\alpha_{{{i},j,{h}}}$")
