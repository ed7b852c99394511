"""Tables of the position side (docs/math/position-side.md): positional bias and its
bands, position-embedding neurons and variance, positional patterns and head classes,
key-position slopes."""

from __future__ import annotations

from detokgui.core.base.tables import Table
from detokgui.core.model.conventions import DEFAULT_POSITION_CONVENTION
from detokgui.core.model.tokens import token_string
from detokgui.core.position_side.neurons import neuron_stats, position_curves
from detokgui.core.position_side.positional import (
    position_bias_band,
    position_variance,
    positional_bias,
    raw_pp_last_positions,
    slope_histogram,
    token_position_curve,
)

BIAS_COLUMNS = ["head", "j", "t_p", "t_pp", "total", "softmax", "t_pp_lo", "t_pp_hi", "t_p_lo",
                "t_p_hi", "convention", "sigma", "temperature"]


def bias_table(layer, i: int, sigma: str = "mean",
               convention: str = DEFAULT_POSITION_CONVENTION, heads=None) -> Table:
    """head,j,t_p,t_pp,total,softmax,t_pp_lo,t_pp_hi,t_p_lo,t_p_hi,convention,sigma,
    temperature at query position i for keys j <= i
    (docs/math/position-side.md#b3-positional-bias, `positional.positional_bias` with bands).

    convention "paper" (the authors' figures) or "mean-sigma"; sigma = the vocabulary
    mean/max/min of sigma(e_v + p_i) (query side only under "paper"), or none (raw).
    *_lo/*_hi: the 95% percentile interval over the vocabulary of the per-token values.
    convention and sigma say which convention the row shows ("none" without LayerNorm);
    temperature is the tau the softmax divides by (`Layer0.temperature`). heads: the heads
    written (None: all)."""

    b = positional_bias(layer, i, sigma, heads, convention=convention, bands=True)
    cols = [b.t_p, b.t_pp, b.total, b.softmax, b.t_pp_lo, b.t_pp_hi, b.t_p_lo, b.t_p_hi]
    cols = [c.tolist() for c in cols]

    def rows():
        for r, h in enumerate(b.heads):
            for j in range(b.i + 1):
                yield (h, j, *(float(c[r][j]) for c in cols), b.convention, b.sigma,
                       float(b.temperature))

    return list(BIAS_COLUMNS), rows()

def neurons_table(layer, scaled: bool = False) -> Table:
    """dim,norm,slope,r2,period,group of the position-embedding curves P[:, k]
    (docs/math/position-side.md#b6-position-embedding-neurons);
    slope is per position (least squares over 0..L-1); `scaled` divides P[j] by the
    vocabulary-mean sigma at j."""

    st = neuron_stats(layer, scaled)
    cols = [st.norm.tolist(), st.slope.tolist(), st.r2.tolist(), st.period.tolist()]
    rows = ((k, *(float(c[k]) for c in cols), st.group[k]) for k in range(len(st.group)))
    return ["dim", "norm", "slope", "r2", "period", "group"], rows

def neuron_curves_table(layer, dims, scaled: bool = False) -> Table:
    """dim,position,value: the curves P[:, k] of the given dimensions
    (docs/math/position-side.md#b6-position-embedding-neurons), raw or
    divided by the vocabulary-mean sigma at each position (`scaled`)."""

    dims = [int(k) for k in dims]
    curves = position_curves(layer, scaled)
    cols = {k: curves[:, k].tolist() for k in dims}
    rows = ((k, j, float(v)) for k in dims for j, v in enumerate(cols[k]))
    return ["dim", "position", "value"], rows

def embedding_overlap_table(result) -> Table:
    """direction,singular_value,overlap,baseline of a `neurons.EmbeddingOverlap`: for each
    of the token embedding's top SVD directions (0 = largest singular value), the share of
    its squared weight on the position-heavy dims; baseline = m / d (a random direction)."""
    sv, ov = result.singular_values.tolist(), result.overlap.tolist()
    rows = ((i, float(sv[i]), float(ov[i]), float(result.baseline)) for i in range(len(ov)))
    return ["direction", "singular_value", "overlap", "baseline"], rows

def position_band_table(layer, heads=None,
                        convention: str = DEFAULT_POSITION_CONVENTION) -> Table:
    """head,j,raw,t_p_mean,t_p_sigma_max,t_p_sigma_min,lower,upper,convention: T_p over every
    key position j (docs/math/position-side.md#b1-position-self-assertion) — raw b^QK p_j^T, the
    convention's T_p line ("paper":
    raw E_v[1/sigma(e_v+p_j)], "mean-sigma": raw / mean_v sigma(e_v+p_j)), raw divided by
    the vocabulary max / min sigma, and the convention's band (`PositionBiasBand`); the
    last column names the convention."""

    b = position_bias_band(layer, heads, convention)
    cols = [b.raw, b.mean, b.at_max_sigma, b.at_min_sigma, b.lower, b.upper]
    cols = [c.tolist() for c in cols]

    def rows():
        for r, h in enumerate(b.heads):
            for j in range(b.raw.shape[1]):
                yield (h, j, *(float(c[r][j]) for c in cols), b.convention)

    return ["head", "j", "raw", "t_p_mean", "t_p_sigma_max", "t_p_sigma_min", "lower",
            "upper", "convention"], rows()

def bias_lines_table(layer, i: int, sigmas=("mean", "max", "min"), heads=None,
                     convention: str = DEFAULT_POSITION_CONVENTION) -> Table:
    """head,i,sigma,j,t_p,t_pp,total,softmax,convention,temperature:
    `positional.positional_bias` at
    query position i for each position sigma in `sigmas`
    (docs/math/position-side.md#b2-position-position-term, B3), only the rows
    of `heads`, under `convention` ("paper" or "mean-sigma"; "none" in the last column
    for sigma "none"; temperature = the tau of the softmax)."""

    results = [positional_bias(layer, i, s, heads, convention, bands=False) for s in sigmas]

    def rows():
        for b in results:
            cols = [b.t_p.tolist(), b.t_pp.tolist(), b.total.tolist(), b.softmax.tolist()]
            for r, h in enumerate(b.heads):
                for j in range(b.i + 1):
                    yield (h, b.i, b.sigma, j, *(float(c[r][j]) for c in cols), b.convention,
                           float(b.temperature))

    return ["head", "i", "sigma", "j", "t_p", "t_pp", "total", "softmax", "convention",
            "temperature"], rows()

def position_variance_table(layer) -> Table:
    """position,variance: Var_k P[j, k] of each position embedding
    (docs/math/position-side.md#b5-position-embedding-statistics)."""

    var = position_variance(layer).tolist()
    return ["position", "variance"], ((j, float(v)) for j, v in enumerate(var))

def last_positions_table(layer, count: int = 5, heads=None) -> Table:
    """head,i,j,raw_t_pp: T_pp without LayerNorm for the last `count` query positions i,
    keys j <= i (docs/math/position-side.md#b5-position-embedding-statistics)."""

    res = raw_pp_last_positions(layer, count, heads)

    def rows():
        for r, h in enumerate(res.heads):
            for k, i in enumerate(res.positions):
                vals = res.values[r, k, : i + 1].tolist()
                for j, v in enumerate(vals):
                    yield (h, i, j, float(v))

    return ["head", "i", "j", "raw_t_pp"], rows()

def pattern_table(layer, result, heads=None, cols: int | None = None) -> Table:
    """head,query_id,query_token,n,j,grid_row,grid_col,t_ep,t_pp,t_p,score,pattern,convention,
    temperature for a `positional.PositionalPattern` (docs/math/position-side.md#b4-positional-pattern);
    grid_row/grid_col place j on the grid of
    `positional.pattern_grid` with `cols` columns (default ceil(sqrt(n+1))); convention
    names the key-sigma convention, temperature the tau the pattern's softmax divides by."""
    import math

    m = result.n + 1
    c = int(cols) if cols else math.isqrt(m - 1) + 1
    keep = list(result.heads) if heads is None else [int(h) for h in heads]
    token = token_string(layer.tokenizer, result.token)
    arrays = [result.t_ep, result.t_pp, result.t_p, result.scores, result.pattern]

    def rows():
        for h in keep:
            r = result.heads.index(h)
            vals = [a[r].tolist() for a in arrays]
            for j in range(m):
                yield (h, result.token, token, result.n, j, j // c, j % c,
                       *(float(v[j]) for v in vals), result.convention, tau)

    tau = float(layer.temperature)
    return ["head", "query_id", "query_token", "n", "j", "grid_row", "grid_col", "t_ep",
            "t_pp", "t_p", "score", "pattern", "convention", "temperature"], rows()

def head_classification_table(result) -> Table:
    """head,label,span,span_fraction,mean_distance,recent_weight,self_rank_median,
    self_top_fraction,bias_slope,n,sample,reason for a `positional.HeadClassification`."""
    keys = ["span", "span_fraction", "mean_distance", "recent_weight", "self_rank_median",
            "self_top_fraction", "bias_slope"]
    rows = ((d["head"], d["label"], *(d[k] for k in keys), result.n, len(result.tokens),
             d["reason"]) for d in result.rows())
    return ["head", "label", *keys, "n", "sample", "reason"], rows

def slope_histogram_table(result, head: int, bins: int = 60) -> Table:
    """head,bin,left,right,count: the histogram of one head's token-position slopes over
    the vocabulary (docs/math/position-side.md#b7-key-position-components,
    `positional.slope_histogram`)."""

    counts, edges = slope_histogram(result, head, bins)
    e = edges.tolist()
    rows = ((int(head), b, float(e[b]), float(e[b + 1]), int(n))
            for b, n in enumerate(counts.tolist()))
    return ["head", "bin", "left", "right", "count"], rows

def slope_extremes_table(layer, extremes) -> Table:
    """head,side,rank,token_id,token,slope for a `positional.SlopeExtremes`; side is
    `top` (most positive slopes) or `bottom` (most negative)."""
    tok = layer.tokenizer

    def rows():
        for r, h in enumerate(extremes.heads):
            for side, ids, vals in (("top", extremes.top_ids, extremes.top_values),
                                    ("bottom", extremes.bottom_ids, extremes.bottom_values)):
                for rank, (t, v) in enumerate(zip(ids[r].tolist(), vals[r].tolist()), start=1):
                    yield (h, side, rank, t, token_string(tok, t), float(v))

    return ["head", "side", "rank", "token_id", "token", "slope"], rows()

def token_position_curve_table(layer, token: int, heads=None) -> Table:
    """head,token_id,token,j,raw,fit: the raw query-token x key-position term
    e_u W^QK_h p_j^T over every key position j
    (docs/math/position-side.md#b7-key-position-components) and its least-squares line, whose
    slope is `positional.token_position_slopes` for token u."""

    c = token_position_curve(layer, token, heads)
    name = token_string(layer.tokenizer, c.token)

    def rows():
        for r, h in enumerate(c.heads):
            for j, (raw, fit) in enumerate(zip(c.raw[r].tolist(), c.fit[r].tolist())):
                yield (h, c.token, name, j, raw, fit)

    return ["head", "token_id", "token", "j", "raw", "fit"], rows()
