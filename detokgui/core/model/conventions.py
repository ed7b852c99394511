"""The sigma conventions of every view and the softmax temperature, in one place.

Notation: docs/math/notation.md (the conventions in words: docs/math/sigma.md).
S[v, j] = sigma(e_v + p_j) is the LayerNorm scale of token v at position j
(`sigma.SigmaStats.table`, [V, L]), W^QK_h = Wq_h Wk_h^T, d' the head size.

Temperature. Scores are divided by
    tau = sqrt(d')   (GPT-2, OPT)
    tau = 1          (GPT-Neo, and a GPT-2 trained with scale_attn_weights=False)
before the softmax (`temperature`, `Layer0.temperature`). Every label that shows a softmax
writes "/ tau" and says which tau the loaded model uses (`temperature_label`: "τ = √d′ = 8",
"τ = 1: GPT-Neo does not scale its scores"); text written before a model is known says
`TEMPERATURE_NOTE`.

Token sigma (token-only views: T_ee, top-k, A4-A6; docs/math/sigma.md#token-only-views),
`SigmaChoice`:
    "mean"  s_v = mean_j S[v, j]                            (default; the paper's Table 1)
    "at"    s_u = S[u, i], s_v = S[v, j] for chosen positions (i, j)
    "none"  s = 1: raw e W^QK e^T ("without LayerNorm")

T_e (A6: T_e(v) = b^QK_h e_v^T / s_v; docs/math/sigma.md#self-assertion-of-a-token),
`T_E_CONVENTIONS`:
    "sigma" s_v per the token sigma above                    (default)
    "paper" 1/s_v replaced by E_j[1/S[v, j]]  (the authors' Fig 5, 11;
            `inverse_sigma_per_token`)

Position sigma (position-only views B1-B4, C2; docs/math/sigma.md#position-only-views),
`POSITION_CONVENTIONS` with `POSITION_SIGMAS` picking the vocabulary mean, max or min of
S[., i]:
  "paper"       the authors' figures, the default (their code: utils/ln.py, l0_tp.py,
                l0_tpp.py, l0_tp_tpp.py): every key term is divided by each key token's own
                sigma and averaged over the vocabulary, and the position sigma applies to
                the query side only:
                    T_p(j)     = b^QK_h p_j^T E_v[1/S[v, j]]
                    T_pp(i, j) = p_i W^QK_h p_j^T / S_i  E_v[1/S[v, j]],   S_i = mean/max/min_v S[v, i]
                with the 95% percentile interval over v of the per-token values
                (b^QK_h p_j^T / S[v, j], and p_i W^QK_h p_j^T / (S_i S[v, j])) as the band
                (`sigma.InverseSigmaStats`).
  "mean-sigma"  s_j = mean/max/min_v S[v, j] on BOTH sides:
                    T_p(j) = b^QK_h p_j^T / s_j,   T_pp(i, j) = p_i W^QK_h p_j^T / (s_i s_j)
                (E_v[1/S] differs from 1/E_v[S] by a few per cent; taking max/min on both
                sides instead of the query side alone changes T_pp by tens of per cent.)
and position sigma "none" (s = 1, raw) under either convention. The key weight of B4 and
C2 is w_j = E_v[1/S[v, j]] ("paper") or 1 / mean_v S[v, j] ("mean-sigma")
(`position_key_weights`).

Colour sign (every signed heatmap: T_ee, the six terms, differences of A and B):
`DIVERGING_COLOURS`, the paper's scale (the authors' code draws T_ee with seaborn's
cmap "RdBu" centred on 0): red below 0, white at 0, blue above, the scale symmetric
(-max|v| .. max|v|). The window, the figures and `dg` plots all build their colour map
from this one list, and their colour bars say `COLOUR_SIGN`.

Default query position (B2, B3, B7, C2 and every figure at "i = 500"):
`default_query_position`, the paper's i = 500 (Fig 3-B to 3-E) scaled to the model's
positions when it has fewer than GPT-2's 1024 (`paper_position`).

The tables these need are computed once per layer, each under one key on the layer
(`Layer0.cached_job`): the sigma table ("sigma"), the statistics of 1/S per position
("sigma.inverse") and E_j[1/S[v, j]] per token ("sigma.inverse_per_token"). The first
costs one whole-vocabulary pass (seconds at GPT-2 size): run the `*_job` generators on a
worker when a view needs them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from detokgui.core.base.progress import Job, rescaled, run

if TYPE_CHECKING:  # torch and numpy are imported where they are used: the command line
    import torch  # reads the choices below before it loads anything heavy


def _checks():
    """`core.base.checks`, imported on first use."""
    from detokgui.core.base import checks  # numpy: the command line reads the choices first

    return checks


def _sigma():
    """`core.model.sigma`, imported on first use."""
    from detokgui.core.model import sigma  # torch: the command line reads the choices first

    return sigma


def _check_choice(name: str, value, choices):
    return _checks().check_choice(name, value, choices)


def _check_position(layer, pos) -> int:
    return _checks().check_position(layer, pos, "position")

# --------------------------------------------------------------------------- colour, positions

#: ColorBrewer's 11-class RdBu, low to high (what matplotlib's "RdBu" interpolates): red
#: for negative values, white at 0, blue for positive ones, as in the paper's heatmaps.
DIVERGING_COLOURS = (
    "#67001f", "#b2182b", "#d6604d", "#f4a582", "#fddbc7", "#f7f7f7",
    "#d1e5f0", "#92c5de", "#4393c3", "#2166ac", "#053061",
)
COLOUR_SIGN = "red < 0 < blue"
COLOUR_SIGN_NOTE = "colours: red < 0 < blue, white at 0 (the paper's RdBu)"
#: One colour per term of the six-term decomposition, the same in the window's text views
#: and the figures that draw the terms as lines or bars.
TERM_COLOURS = {"ee": "#d62728", "pp": "#1f77b4", "pe": "#2ca02c", "ep": "#9467bd",
                "e": "#ff7f0e", "p": "#8c564b"}

#: Paper and ink of the window's plots: their background, and their axes, ticks, titles,
#: legends and frames (white and black, as matplotlib draws the figures).
PAPER_COLOUR = "#ffffff"
INK_COLOUR = "#000000"

PAPER_N_POSITIONS = 1024  # GPT-2's, for which the paper's positions are given
PAPER_QUERY_POSITION = 500  # the query position of the paper's Fig 3-B to 3-E


def paper_position(p: int, n_positions: int) -> int:
    """A query position of the paper's GPT-2 figures (1024 positions) for a model with
    `n_positions`: p itself (at most L-1) when the model has 1024 or more, else scaled,
    round(p (L-1) / 1023), so that it sits as far into the context as the paper's."""
    L = int(n_positions)
    if L >= PAPER_N_POSITIONS:
        return min(int(p), L - 1)
    return round(p * (L - 1) / (PAPER_N_POSITIONS - 1))


def default_query_position(n_positions: int) -> int:
    """The query position every view, command and figure starts at: the paper's i = 500
    (`paper_position`), e.g. 500 for GPT-2, 62 for a model of 128 positions."""
    return paper_position(PAPER_QUERY_POSITION, n_positions)


def position_text(n_positions: int, p: int = PAPER_QUERY_POSITION) -> str:
    """"i = 500", or "i = 62 (the paper's 500 scaled to 128 positions)"."""
    i = paper_position(p, n_positions)
    if i == p:
        return f"i = {i}"
    return f"i = {i} (the paper's {p} scaled to {n_positions} positions)"


# --------------------------------------------------------------------------- temperature


def temperature(d_head: int, scale_attn_weights: bool = True) -> float:
    """tau = sqrt(d') when the model scales its attention weights, else 1."""
    return math.sqrt(d_head) if scale_attn_weights else 1.0


#: The softmax temperature in words, for help texts written before a model is loaded
#: (TEMPERATURE_NOTE: ASCII, for the command line; TEMPERATURE_HINT: tooltips).
TEMPERATURE_NOTE = ("tau, the model's softmax temperature: sqrt(d') for GPT-2 and OPT, 1 for "
                    "GPT-Neo (it does not scale its scores)")
TEMPERATURE_HINT = ("τ, the model's softmax temperature: √d′ for GPT-2 and OPT, 1 for GPT-Neo "
                    "(it does not scale its scores)")

#: Families whose attention never divides its scores (tau = 1 for every checkpoint).
UNSCALED_FAMILIES = ("gpt_neo",)


def temperature_label(layer, ascii: bool = False, short: bool = False) -> str:
    """Which tau the layer's softmax divides by, in one consistent wording:

        "τ = √d′ = 8"                               tau = sqrt(d') (GPT-2, OPT)
        "τ = 1: GPT-Neo does not scale its scores"  tau = 1 for the whole family
        "τ = 1: this GPT-2 does not scale its scores"  (scale_attn_weights = false)

    `ascii` spells it "tau = sqrt(d') = 8" (command line, CSV); `short` ends tau = 1 at
    "τ = 1 (unscaled)" for narrow titles. Labels write the formula with "/ τ" and append
    this, e.g. "softmax(sum / τ), τ = √d′ = 8"."""
    tau, d_head = float(layer.temperature), int(layer.d_head)
    t, root = ("tau", "sqrt(d')") if ascii else ("τ", "√d′")
    value = f"{tau:.4g}"
    if math.isclose(tau, math.sqrt(d_head)) and d_head != 1:
        return f"{t} = {root} = {value}"
    if tau == 1.0 and short:
        return f"{t} = 1 (unscaled)"
    if tau == 1.0:
        family = getattr(layer, "family", "")
        label = getattr(layer, "family_label", "the model")
        who = label if family in UNSCALED_FAMILIES else f"this {label}"
        return f"{t} = 1: {who} does not scale its scores"
    return f"{t} = {value}"


# --------------------------------------------------------------------------- token sigma

TOKEN_SIGMAS = ("mean", "at", "none")
TOKEN_SIGMA_LABELS = {
    "mean": "sigma = mean over positions",
    "at": "sigma at positions (i, j)",
    "none": "no LayerNorm (raw)",
}


@dataclass(frozen=True)
class SigmaChoice:
    """A token-only sigma convention; `positions` = (query i, key j) for "at"."""

    convention: str = "mean"
    positions: tuple[int, int] = (0, 0)

    def __post_init__(self):
        _check_choice("sigma convention", self.convention, TOKEN_SIGMAS)

    def label(self) -> str:
        if self.convention == "at":
            return f"sigma at positions i={self.positions[0]}, j={self.positions[1]}"
        return TOKEN_SIGMA_LABELS[self.convention]


def token_sigmas(layer, choice: SigmaChoice, side: str) -> torch.Tensor | None:
    """Per-token sigma for the query side ("query") or key side ("key"), [V]; None = raw."""
    if choice.convention == "none":
        return None
    if choice.convention == "mean":
        return layer.sigma_stats().tok_mean
    pos = choice.positions[0] if side == "query" else choice.positions[1]
    return _sigma().tokens_at_position(layer, _check_position(layer, pos))


def token_sigmas_of(layer, choice: SigmaChoice, side: str, ids: torch.Tensor) -> torch.Tensor:
    """`token_sigmas` for a few tokens only (no whole-vocabulary pass unless the convention
    needs it); ones for "none"."""
    import torch

    if choice.convention == "none":
        return torch.ones(ids.shape[0], dtype=layer.dtype, device=layer.device)
    if choice.convention == "mean":
        return layer.sigma_stats().tok_mean[ids]
    pos = choice.positions[0] if side == "query" else choice.positions[1]
    return _sigma().tokens_at_position(layer, _check_position(layer, pos), rows=ids)


# --------------------------------------------------------------------------- T_e

T_E_CONVENTIONS = ("sigma", "paper")
DEFAULT_T_E = "sigma"


def check_t_e(t_e: str) -> str:
    return _check_choice("t_e", t_e, T_E_CONVENTIONS)


# --------------------------------------------------------------------------- position sigma

POSITION_CONVENTIONS = ("paper", "mean-sigma")
#: The default of every position-only view, in core, the CLI and the GUI alike.
DEFAULT_POSITION_CONVENTION = "paper"
POSITION_CONVENTION_LABELS = {
    "paper": "paper convention: key side E_v[1/sigma(e_v+p_j)], query side sigma_i = "
             "vocabulary {sigma} of sigma(e_v+p_i); band = 95% percentile interval over v",
    "mean-sigma": "mean-sigma convention: sigma = vocabulary {sigma} of sigma(e_v+p) at "
                  "both i and j",
    "none": "no LayerNorm (raw)",
}
POSITION_SIGMAS = ("mean", "max", "min", "none")
POSITION_SIGMA_LABELS = {
    "mean": "sigma = vocabulary mean",
    "max": "sigma = vocabulary max",
    "min": "sigma = vocabulary min",
    "none": "no LayerNorm (raw)",
}


def check_position_sigma(which: str) -> str:
    return _check_choice("position sigma", which, POSITION_SIGMAS)


def check_position_convention(convention: str) -> str:
    return _check_choice("position convention", convention, POSITION_CONVENTIONS)


def convention_label(convention: str, sigma: str = "mean") -> str:
    """One line saying which convention a result shows (for plot titles and CSV exports)."""
    if sigma == "none":
        return POSITION_CONVENTION_LABELS["none"]
    return POSITION_CONVENTION_LABELS[check_position_convention(convention)].format(
        sigma=check_position_sigma(sigma))


# --------------------------------------------------------------------------- tables

SIGMA_KEY = "sigma"
INVERSE_KEY = "sigma.inverse"
INVERSE_PER_TOKEN_KEY = "sigma.inverse_per_token"


def sigma_stats_job(layer) -> Job:
    """Generator job returning `layer.sigma_stats()` (`sigma.SigmaStats`), computing it
    (with progress, so it can be cancelled between chunks) when it is not cached yet."""
    return (yield from layer.cached_job(SIGMA_KEY, lambda: _sigma().iter_sigma_stats(layer)))


def inverse_sigma_job(layer) -> Job:
    """Generator job returning the cached `sigma.InverseSigmaStats` of the layer (per
    position j: E_v[1/S[v, j]] and the 95% percentile interval of 1/S[., j]), computing
    the sigma table first when needed. About twice the sigma table's cost, once."""
    def compute():
        st = yield from rescaled(sigma_stats_job(layer), 0.0, 0.5)
        return (yield from rescaled(_sigma().iter_inverse_sigma_stats(st.table), 0.5, 1.0))

    return (yield from layer.cached_job(INVERSE_KEY, compute))


def inverse_sigma_stats(layer):
    """`inverse_sigma_job` run to completion."""
    return run(inverse_sigma_job(layer))


def position_sigma(layer, which: str = "mean") -> torch.Tensor | None:
    """Per-position sigma s_j = mean/max/min_v S[v, j], [L], or None for "none" (s = 1).

    "mean"/"max"/"min" need the sigma table; "none" never triggers it."""
    which = check_position_sigma(which)
    if which == "none":
        return None
    return layer.sigma_stats().position_sigma(which)


def position_key_weights(layer, convention: str, n: int | None = None) -> torch.Tensor:
    """The key weight w_j of the position-only views for j = 0..n-1 (all L by default):
    E_v[1/S[v, j]] for "paper", 1 / mean_v S[v, j] for "mean-sigma"."""
    if check_position_convention(convention) == "paper":
        w = inverse_sigma_stats(layer).mean
    else:
        w = 1.0 / layer.sigma_stats().pos_mean
    return w if n is None else w[:n]


def inverse_sigma_per_token(layer) -> torch.Tensor:
    """E_j[1/S[v, j]] for every token v, [V]: the mean over positions of the reciprocal
    sigma table (the authors' per-token factor of T_e). Needs the sigma table; cached."""

    import torch

    rows_per_chunk = 4096

    @torch.no_grad()
    def compute() -> torch.Tensor:
        table = layer.sigma_stats().table  # [V, L]
        out = torch.empty(table.shape[0], dtype=layer.dtype, device=table.device)
        for a in range(0, table.shape[0], rows_per_chunk):
            out[a:a + rows_per_chunk] = table[a:a + rows_per_chunk].reciprocal().mean(
                1, dtype=torch.float64).to(layer.dtype)
        return out

    return layer.cached(INVERSE_PER_TOKEN_KEY, compute)


__all__ = [
    "DEFAULT_POSITION_CONVENTION",
    "DEFAULT_T_E",
    "POSITION_CONVENTIONS",
    "POSITION_CONVENTION_LABELS",
    "POSITION_SIGMAS",
    "POSITION_SIGMA_LABELS",
    "TEMPERATURE_HINT",
    "TEMPERATURE_NOTE",
    "TOKEN_SIGMAS",
    "TOKEN_SIGMA_LABELS",
    "T_E_CONVENTIONS",
    "SigmaChoice",
    "check_position_convention",
    "check_position_sigma",
    "check_t_e",
    "convention_label",
    "inverse_sigma_job",
    "inverse_sigma_per_token",
    "inverse_sigma_stats",
    "position_key_weights",
    "position_sigma",
    "sigma_stats_job",
    "temperature",
    "temperature_label",
    "token_sigmas",
    "token_sigmas_of",
]
