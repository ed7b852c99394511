"""The position side (`detokgui export bias|neurons` and the GUI's position panels;
docs/math/position-side.md): positional bias, position-embedding neurons, the B4
positional pattern and head classes, the B7 token-position slopes."""

from __future__ import annotations

from detokgui.api.arguments import heads_of, single_token
from detokgui.api.frames import analysis, tabled
from detokgui.api.jobs import ProgressArg, run_job, sigma_tables
from detokgui.core.model.conventions import DEFAULT_POSITION_CONVENTION


@analysis("bias")
def bias(layer, i: int | None = None, *, sigma: str = "mean",
         convention: str = DEFAULT_POSITION_CONVENTION, heads=None,
         progress: ProgressArg = True):
    """The positional bias at query position i over keys j <= i (`export bias --position
    i`; default: `conventions.default_query_position`, the paper's 500 scaled to the
    model; docs/math/position-side.md#b3-positional-bias): head,j,t_p,t_pp,total,softmax,
    t_pp_lo,t_pp_hi,t_p_lo,t_p_hi,convention,sigma,temperature.

    convention: "paper" (the authors' figures: key side E_v[1/sigma(e_v+p_j)], `sigma` on
    the query side only) or "mean-sigma" (1/sigma on both sides). sigma: the vocabulary
    "mean" (default), "max" or "min" of sigma(e_v + p), or "none" (without LayerNorm).
    heads: a head, a list of heads, or None (all)."""
    from detokgui.core.base.checks import check_position
    from detokgui.core.model.conventions import convention_label, default_query_position
    from detokgui.core.position_side.tables import bias_table

    i = default_query_position(layer.n_positions) if i is None else check_position(layer, i)
    hs = heads_of(layer, heads)
    sigma_tables(layer, progress, inverse=True)  # the bands are over 1/S[v, j]
    return tabled(bias_table(layer, i, sigma, convention, hs),
                  i=i, convention=convention, sigma=sigma, heads=hs,
                  convention_label=convention_label(convention, sigma))


@analysis("neurons")
def neurons(layer, *, scaled: bool = False, progress: ProgressArg = True):
    """The position-embedding dimensions P[:, k] (`export neurons`;
    docs/math/position-side.md#b6-position-embedding-neurons): dim,norm,slope,r2,period,
    group. `scaled` divides P[j] by the vocabulary-mean sigma at j."""
    from detokgui.core.position_side.tables import neurons_table

    if scaled:
        sigma_tables(layer, progress)
    return tabled(neurons_table(layer, scaled=scaled), scaled=bool(scaled))


@analysis("pattern")
def pattern(layer, token, n: int, *, heads=None, convention: str = DEFAULT_POSITION_CONVENTION,
            cols: int | None = None, progress: ProgressArg = True):
    """The B4 positional pattern softmax_{j<=n}((T_ep + T_pp + T_p) / temperature) of the
    query token `token` (an id or a single-token text) at position n, per head (the GUI's
    positional pattern panel; docs/math/position-side.md#b4-positional-pattern):
    head,query_id,query_token,n,j,grid_row,grid_col,t_ep,t_pp,t_p,score,pattern,
    convention. grid_row/grid_col place j on a grid of `cols` columns (default
    ceil(sqrt(n+1)))."""
    from detokgui.core.position_side.positional import positional_pattern
    from detokgui.core.position_side.tables import pattern_table

    x = single_token(layer, token)
    sigma_tables(layer, progress, inverse=convention == "paper")
    res = positional_pattern(layer, x, n, heads_of(layer, heads), convention)
    return tabled(pattern_table(layer, res, cols=cols),
                  token_id=x, n=res.n, heads=res.heads, convention=res.convention,
                  query_sigma=float(res.query_sigma))


@analysis("head_classes")
def head_classes(layer, *, n: int | None = None, sample: int | None = None, seed: int = 0,
                 heads=None, progress: ProgressArg = True):
    """Each head's B4 class (duplicate-token, detokenization, contextual, other) and the
    measured criteria that decide it (`core.position_side.positional.HeadClassification`):
    head,label,span,span_fraction,mean_distance,recent_weight,self_rank_median,
    self_top_fraction,bias_slope,n,sample,reason. n: the query position (default
    min(399, L-1)); `sample` query tokens drawn with `seed`. One pass over the vocabulary
    for the self-ranks (a progress bar; Ctrl+C stops it)."""
    from detokgui.core.position_side.positional import CLASSIFY_SAMPLE, iter_classify_heads
    from detokgui.core.position_side.tables import head_classification_table

    sample = CLASSIFY_SAMPLE if sample is None else sample
    res = run_job(iter_classify_heads(layer, n, sample, seed, heads_of(layer, heads)),
                  "head classes", progress)
    return tabled(head_classification_table(res),
                  n=res.n, sample=len(res.tokens), seed=seed, heads=res.heads)


@analysis("slopes")
def slopes(layer, k: int = 10, *, heads=None):
    """The tokens whose query-token x key-position term e_u W^QK_h p_j^T rises (side
    "top") or falls ("bottom") most steeply over the key positions j, per head (the GUI's
    key-position panel; docs/math/position-side.md#b7-key-position-components):
    head,side,rank,token_id,token,slope (least-squares slope per position)."""
    from detokgui.core.base.checks import check_count
    from detokgui.core.position_side.positional import slope_extremes, token_position_slopes
    from detokgui.core.position_side.tables import slope_extremes_table

    k = check_count(k, "k")
    res = token_position_slopes(layer, heads_of(layer, heads))
    return tabled(slope_extremes_table(layer, slope_extremes(res, k)), k=k, heads=list(res.heads))
