"""Position side (B1-B5, B7) against direct computations from the raw layer-0 tensors."""

import math

import numpy as np
import pytest
import torch
from approx import FLOAT32_RTOL

from detokgui.core import InputError
from detokgui.core.position_side import positional as pos

# --------------------------------------------------------------------------- oracles
# Independent of detokgui's folding: LayerNorm is folded here from the raw c_attn/ln_1
# tensors with explicit d x d matrices, in float64.


def raw_tensors(layer):
    return {
        "wte.weight": layer.E, "wpe.weight": layer.P,
        "h.0.ln_1.weight": layer.ln1_weight, "h.0.ln_1.bias": layer.ln1_bias,
        "h.0.attn.c_attn.weight": layer.qkv_weight, "h.0.attn.c_attn.bias": layer.qkv_bias,
    }


def fold_qk(t, n_heads):
    """(W^QK [H, d, d], b^QK [H, d], Wq [H, d, d'], Wk [H, d, d']) in float64."""
    W = t["h.0.attn.c_attn.weight"].double()
    b = t["h.0.attn.c_attn.bias"].double()
    g = t["h.0.ln_1.weight"].double()
    beta = t["h.0.ln_1.bias"].double()
    d = W.shape[0]
    dh = d // n_heads
    C = torch.eye(d, dtype=torch.float64) - 1.0 / d
    CG = C @ torch.diag(g)
    Wqk, bqk, Wqs, Wks = [], [], [], []
    for h in range(n_heads):
        cq = slice(h * dh, (h + 1) * dh)
        ck = slice(d + h * dh, d + (h + 1) * dh)
        Wq, Wk = CG @ W[:, cq], CG @ W[:, ck]
        bq = beta @ W[:, cq] + b[cq]
        Wqk.append(Wq @ Wk.T)
        bqk.append(bq @ Wk.T)
        Wqs.append(Wq)
        Wks.append(Wk)
    return torch.stack(Wqk), torch.stack(bqk), torch.stack(Wqs), torch.stack(Wks)


def direct_sigma(x, eps):
    x = x.double()
    c = x - x.mean(-1, keepdim=True)
    return torch.sqrt((c * c).mean(-1) + eps)


def direct_position_sigma(E, P, eps, positions):
    """{"mean","max","min"} -> [len(positions)] of sigma(e_v + p_j) over the vocabulary."""
    out = {"mean": [], "max": [], "min": []}
    for j in positions:
        var, _ = torch.var_mean(E + P[j], dim=-1, correction=0)
        s = torch.sqrt(var.double() + eps)
        out["mean"].append(s.mean())
        out["max"].append(s.max())
        out["min"].append(s.min())
    return {k: torch.stack(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def oracle(tiny_layer):
    """Independent folding; per-position sigma summaries computed directly at the positions
    0..40 and L-3..L-1, and taken from the (separately tested) sigma table elsewhere once
    they agree there (a direct pass at every position would cost seconds)."""
    Wqk, bqk, Wq, Wk = fold_qk(raw_tensors(tiny_layer), tiny_layer.n_heads)
    L = tiny_layer.n_positions
    some = [*range(41), L - 3, L - 2, L - 1]
    direct = direct_position_sigma(tiny_layer.E, tiny_layer.P, tiny_layer.eps, some)
    st = tiny_layer.sigma_stats()
    sig = {}
    for k, lib in (("mean", st.pos_mean), ("max", st.pos_max), ("min", st.pos_min)):
        lib = lib.double()
        torch.testing.assert_close(lib[some], direct[k], rtol=1e-5, atol=0)
        lib[some] = direct[k]
        sig[k] = lib
    sig["none"] = torch.ones(L, dtype=torch.float64)
    return {"Wqk": Wqk, "bqk": bqk, "Wq": Wq, "Wk": Wk, "sigma": sig,
            "P": tiny_layer.P.double(), "E": tiny_layer.E.double()}


def close(a, b, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b), rtol=rtol, atol=atol)


# --------------------------------------------------------------------------- B1-B3


@pytest.mark.parametrize("sigma", ["mean", "max", "min", "none"])
def test_positional_bias_matches_direct(tiny_layer, oracle, sigma):
    P, s = oracle["P"], oracle["sigma"][sigma]
    T = tiny_layer.temperature
    assert T == math.sqrt(tiny_layer.d // tiny_layer.n_heads)
    for i in (0, 37, tiny_layer.n_positions - 1):
        b = pos.positional_bias(tiny_layer, i, sigma, convention="mean-sigma")
        assert b.heads == list(range(tiny_layer.n_heads))
        assert b.t_p.shape == b.t_pp.shape == b.softmax.shape == (tiny_layer.n_heads, i + 1)
        assert list(b.j) == list(range(i + 1))
        for h in range(tiny_layer.n_heads):
            t_p = (oracle["bqk"][h] @ P[: i + 1].T) / s[: i + 1]
            t_pp = (P[i] @ oracle["Wqk"][h] @ P[: i + 1].T) / (s[i] * s[: i + 1])
            total = t_p + t_pp
            close(b.t_p[h], t_p)
            close(b.t_pp[h], t_pp)
            close(b.total[h], total)
            close(b.softmax[h], torch.softmax(total / T, 0), atol=1e-6)
        close(b.softmax.sum(1), np.ones(tiny_layer.n_heads), atol=1e-6)


def test_positional_bias_head_subset_keeps_order(tiny_layer):
    full = pos.positional_bias(tiny_layer, 50, "mean")
    sub = pos.positional_bias(tiny_layer, 50, "mean", heads=[3, 1])
    assert sub.heads == [3, 1]
    np.testing.assert_allclose(sub.total, full.total[[3, 1]], rtol=1e-6)
    one = pos.positional_bias(tiny_layer, 50, "none", heads=2)
    assert one.heads == [2] and one.t_pp.shape == (1, 51)


def test_bias_lines(tiny_layer):
    lines = pos.bias_lines(tiny_layer, 20)
    assert set(lines) == {"mean", "max", "min"}
    # larger sigma, smaller |T_pp|
    assert np.all(np.abs(lines["max"].t_pp) <= np.abs(lines["min"].t_pp) + 1e-6)


def test_results_do_not_alias_the_cache(tiny_layer):
    a = pos.positional_bias(tiny_layer, 10, "none")
    a.t_p[:] = 1e9
    a.t_pp[:] = 1e9
    b = pos.positional_bias(tiny_layer, 10, "none")
    assert np.all(b.t_p < 1e8) and np.all(b.t_pp < 1e8)
    assert pos.position_factors(tiny_layer) is pos.position_factors(tiny_layer)


def test_bias_figures_gather_the_lines_b3_and_band(tiny_layer):
    figs = pos.bias_figures(tiny_layer, 20, [3, 1], "max", "mean-sigma", ("mean", "max"))
    assert (figs.i, figs.heads, figs.b3_sigma, figs.convention) == (20, [3, 1], "max",
                                                                     "mean-sigma")
    assert list(figs.lines) == ["mean", "max"] and figs.b3 is figs.lines["max"]
    one = pos.positional_bias(tiny_layer, 20, "max", [3, 1], "mean-sigma", bands=False)
    np.testing.assert_array_equal(figs.b3.softmax, one.softmax)
    assert figs.b3.t_p_lo is None  # no bands
    band = pos.position_bias_band(tiny_layer, [3, 1], "mean-sigma")
    np.testing.assert_array_equal(figs.band.mean, band.mean)
    raw = pos.bias_figures(tiny_layer, 5, [0], "none", line_sigmas=("mean",))
    assert raw.b3.sigma == "none" and raw.b3.convention == "none" and raw.band.heads == [0]


def test_position_bias_band(tiny_layer, oracle):
    band = pos.position_bias_band(tiny_layer, convention="mean-sigma")
    L = tiny_layer.n_positions
    raw = oracle["bqk"] @ oracle["P"].T  # [H, L]
    sig = oracle["sigma"]
    assert band.raw.shape == (tiny_layer.n_heads, L) and list(band.j) == list(range(L))
    close(band.raw, raw)
    close(band.mean, raw / sig["mean"])
    close(band.at_max_sigma, raw / sig["max"])
    close(band.at_min_sigma, raw / sig["min"])
    assert np.all(band.lower <= band.mean + 1e-6) and np.all(band.mean <= band.upper + 1e-6)
    close(band.upper - band.lower, (raw.abs() * (1 / sig["min"] - 1 / sig["max"])))
    sub = pos.position_bias_band(tiny_layer, heads=[1])
    np.testing.assert_allclose(sub.raw[0], band.raw[1])


# --------------------------------------------------------------------------- B4


def test_positional_pattern_matches_direct(tiny_layer, oracle):
    P, E = oracle["P"], oracle["E"]
    s_key = oracle["sigma"]["mean"]
    T = tiny_layer.temperature
    for x, n in ((464, 0), (4881, 63), (50256, tiny_layer.n_positions - 1)):
        r = pos.positional_pattern(tiny_layer, x, n, convention="mean-sigma")
        s_n = direct_sigma(E[x] + P[n], tiny_layer.eps)
        assert math.isclose(r.query_sigma, s_n.item(), rel_tol=1e-5)
        assert r.pattern.shape == (tiny_layer.n_heads, n + 1)
        for h in range(tiny_layer.n_heads):
            W = oracle["Wqk"][h]
            t_ep = (E[x] @ W @ P[: n + 1].T) / (s_n * s_key[: n + 1])
            t_pp = (P[n] @ W @ P[: n + 1].T) / (s_n * s_key[: n + 1])
            t_p = (oracle["bqk"][h] @ P[: n + 1].T) / s_key[: n + 1]
            close(r.t_ep[h], t_ep)
            close(r.t_pp[h], t_pp)
            close(r.t_p[h], t_p)
            close(r.pattern[h], torch.softmax((t_ep + t_pp + t_p) / T, 0), atol=1e-6)
    sub = pos.positional_pattern(tiny_layer, 4881, 63, heads=[2])
    np.testing.assert_allclose(sub.pattern[0], pos.positional_pattern(tiny_layer, 4881, 63).pattern[2],
                               rtol=1e-6)


def test_pattern_grid():
    v = np.arange(400.0)
    g = pos.pattern_grid(v)
    assert g.shape == (20, 20)
    assert g[3, 7] == 3 * 20 + 7 and not np.isnan(g).any()
    g2 = pos.pattern_grid(np.arange(128.0).reshape(1, 128).repeat(2, 0))
    assert g2.shape == (2, 11, 12)  # ceil(sqrt(128)) = 12 columns, ceil(128/12) = 11 rows
    assert g2[1, 10, 7] == 127 and np.isnan(g2[:, 10, 8:]).all()
    assert np.isnan(g2).sum() == 2 * (132 - 128)
    assert pos.pattern_grid([5.0]).shape == (1, 1)
    assert pos.pattern_grid(np.arange(10.0), cols=5).shape == (2, 5)
    with pytest.raises(InputError):
        pos.pattern_grid([])


def test_pattern_grid_image_levels():
    grid = pos.pattern_grid(np.array([0.5, 0.25, 0.25, 1e-40, 0.0]))  # 2 x 3, one blank
    shown, levels = pos.pattern_grid_image(grid)
    assert shown.dtype == np.float32 and np.isnan(shown[1, 2]) and levels == (0.0, 0.5)
    shown, (lo, hi) = pos.pattern_grid_image(grid, log=True)
    assert shown[0, 0] == pytest.approx(np.log10(0.5)) and np.isnan(shown[1, 2])
    assert (lo, hi) == (-30.0, pytest.approx(np.log10(0.5)))
    _, levels = pos.pattern_grid_image(np.zeros((2, 2)))
    assert levels == (0.0, 1.0)


def test_pattern_grid_of_result(tiny_layer):
    r = pos.positional_pattern(tiny_layer, 100, 99)
    assert r.grid().shape == (tiny_layer.n_heads, 10, 10)
    np.testing.assert_allclose(r.grid()[:, 4, 2], r.pattern[:, 42])


def _brute_self_rank(layer, oracle, u, h):
    """(self-rank of u, how many other keys tie with u within float32 tolerance)."""
    s_key = layer.sigma_stats().tok_mean.double()
    E = oracle["E"]
    scores = (E[u] @ oracle["Wq"][h]) @ (E @ oracle["Wk"][h]).T / s_key
    others = torch.cat([scores[:u], scores[u + 1:]])
    ties = (others - scores[u]).abs() <= 2 * FLOAT32_RTOL * scores.abs().max()
    return 1 + int((others > scores[u]).sum()), int(ties.sum())


def test_self_ranks_match_brute_force(tiny_layer, oracle):
    from detokgui.core.base.progress import run

    tokens = [13, 464, 4881, 50256]
    ranks = run(pos.iter_self_ranks(tiny_layer, tokens))
    chunked = run(pos.iter_self_ranks(tiny_layer, tokens, heads=[0, 2], chunk_rows=7000))
    assert ranks.shape == (tiny_layer.n_heads, len(tokens)) and chunked.shape == (2, len(tokens))
    for h in range(tiny_layer.n_heads):
        for c, u in enumerate(tokens):
            rank, ties = _brute_self_rank(tiny_layer, oracle, u, h)
            assert abs(int(ranks[h, c]) - rank) <= 1
            if h in (0, 2):  # another batch shape: exact unless another key ties with u
                assert abs(int(chunked[h // 2, c]) - int(ranks[h, c])) <= ties, (h, u)


def test_classify_heads_reports_measured_criteria(tiny_layer):
    seen = []
    job = pos.iter_classify_heads(tiny_layer, n=60, sample=12, seed=3)
    from detokgui.core.base.progress import run

    c = run(job, seen.append)
    assert seen and seen[-1].fraction == 1.0
    assert all(0 <= p.fraction <= 1 for p in seen)
    H = tiny_layer.n_heads
    assert c.n == 60 and c.heads == list(range(H)) and len(c.tokens) == 12
    for name in ("span", "span_fraction", "mean_distance", "recent_weight", "self_rank_median",
                 "self_top_fraction", "bias_slope"):
        assert getattr(c, name).shape == (H,), name
    pats = np.stack([pos.positional_pattern(tiny_layer, t, 60, convention="mean-sigma").pattern
                     for t in c.tokens])  # [S,H,n+1]
    recent = pats[:, :, 61 - pos.RECENT_WINDOW:].sum(-1).mean(0)
    np.testing.assert_allclose(c.recent_weight, recent, rtol=1e-4, atol=1e-6)
    ent = -(pats * np.log(np.clip(pats, 1e-300, None))).sum(-1)
    np.testing.assert_allclose(c.span, np.exp(ent).mean(0), rtol=1e-4)
    np.testing.assert_allclose(c.span_fraction, c.span / 61, rtol=1e-12)
    np.testing.assert_allclose(c.mean_distance, (pats * np.arange(60, -1, -1)).sum(-1).mean(0),
                               rtol=1e-4)
    band = pos.position_bias_band(tiny_layer, convention="mean-sigma").mean[:, :61]
    np.testing.assert_allclose(c.bias_slope, np.polyfit(np.arange(61), band.T, 1)[0],
                               rtol=1e-3, atol=1e-7)
    for r in range(H):
        label, reason = pos.label_head(c.recent_weight[r], c.self_top_fraction[r],
                                       c.span_fraction[r])
        assert c.labels[r] == label and c.reasons[r] == reason
        assert label in pos.HEAD_LABELS
    rows = c.rows()
    assert [row["head"] for row in rows] == list(range(H)) and rows[0]["label"] == c.labels[0]
    again = pos.classify_heads(tiny_layer, n=60, sample=12, seed=3)
    assert again.tokens == c.tokens and again.labels == c.labels
    default = pos.classify_heads(tiny_layer, sample=4, heads=[1])
    assert default.n == min(pos.CLASSIFY_POSITION, tiny_layer.n_positions - 1)
    assert default.heads == [1]


def test_label_rules():
    assert pos.label_head(0.9, 0.9, 0.9)[0] == "duplicate-token"
    assert pos.label_head(pos.DETOK_MIN_RECENT_WEIGHT, 0.0, 0.9)[0] == "detokenization"
    assert pos.label_head(0.1, 0.0, pos.CONTEXTUAL_MIN_SPAN_FRACTION)[0] == "contextual"
    assert pos.label_head(0.1, 0.1, 0.01) == ("other", "no criterion met")
    label, reason = pos.label_head(0.83, 0.0, 0.01)
    assert label == "detokenization" and "0.83" in reason


# --------------------------------------------------------------------------- B5


def test_position_variance(tiny_layer):
    v = pos.position_variance(tiny_layer)
    P = tiny_layer.P.double().numpy()
    assert v.shape == (tiny_layer.n_positions,)
    np.testing.assert_allclose(v, P.var(axis=1), rtol=1e-5)
    assert v[0] == v.max()  # the demo checkpoint's p_0 is scaled up, like GPT-2's


def test_raw_pp_last_positions(tiny_layer, oracle):
    L = tiny_layer.n_positions
    r = pos.raw_pp_last_positions(tiny_layer)
    assert r.positions == list(range(L - 5, L)) and r.values.shape == (tiny_layer.n_heads, 5, L)
    P = oracle["P"]
    for row, i in enumerate(r.positions):
        assert np.isnan(r.values[:, row, i + 1:]).all()
        for h in range(tiny_layer.n_heads):
            close(r.values[h, row, : i + 1], P[i] @ oracle["Wqk"][h] @ P[: i + 1].T)
    assert pos.raw_pp_last_positions(tiny_layer, count=2 * L).positions == list(range(L))
    with pytest.raises(InputError):
        pos.raw_pp_last_positions(tiny_layer, count=0)


# --------------------------------------------------------------------------- B7


def test_token_position_slopes_match_least_squares(tiny_layer, oracle):
    res = pos.token_position_slopes(tiny_layer)
    V, L, H = tiny_layer.n_vocab, tiny_layer.n_positions, tiny_layer.n_heads
    assert res.slopes.shape == (V, H) and res.heads == list(range(H))
    P, E = oracle["P"], oracle["E"]
    j = torch.arange(L, dtype=torch.float64)
    A = torch.stack([j, torch.ones(L, dtype=torch.float64)], 1)
    for u in (0, 13, 4881, 50256):
        for h in range(H):
            y = E[u] @ oracle["Wqk"][h] @ P.T  # [L]
            fit = np.polyfit(j.numpy(), y.numpy(), 1)[0]
            ls = torch.linalg.lstsq(A, y[:, None]).solution[0, 0].item()
            assert math.isclose(fit, ls, rel_tol=1e-9, abs_tol=1e-12)
            assert math.isclose(res.slopes[u, h], fit, rel_tol=1e-3, abs_tol=1e-6), (u, h)
    sub = pos.token_position_slopes(tiny_layer, heads=[2, 0])
    np.testing.assert_array_equal(sub.slopes, res.slopes[:, [2, 0]])
    np.testing.assert_array_equal(sub.column(0), res.slopes[:, 0])
    with pytest.raises(InputError):
        sub.column(1)


def test_token_position_curve_and_its_fit(tiny_layer, oracle):
    res = pos.token_position_slopes(tiny_layer)
    c = pos.token_position_curve(tiny_layer, 13, heads=[2, 0])
    L = tiny_layer.n_positions
    assert c.token == 13 and c.heads == [2, 0] and c.raw.shape == c.fit.shape == (2, L)
    for r, h in enumerate(c.heads):
        y = (oracle["E"][13] @ oracle["Wqk"][h] @ oracle["P"].T).numpy()
        np.testing.assert_allclose(c.raw[r], y, rtol=1e-3, atol=1e-5)
        slope, intercept = np.polyfit(np.arange(L), c.raw[r], 1)
        np.testing.assert_allclose(c.fit[r], intercept + slope * np.arange(L), atol=1e-6)
        assert math.isclose(slope, res.slopes[13, h], rel_tol=1e-3, abs_tol=1e-6)


def test_slope_extremes_and_histogram(tiny_layer):
    res = pos.token_position_slopes(tiny_layer, heads=[1, 3])
    ex = pos.slope_extremes(res, k=5)
    for r in range(2):
        col = res.slopes[:, r]
        assert list(ex.top_values[r]) == sorted(col, reverse=True)[:5]
        assert list(ex.bottom_values[r]) == sorted(col)[:5]
        np.testing.assert_array_equal(col[ex.top_ids[r]], ex.top_values[r])
        np.testing.assert_array_equal(col[ex.bottom_ids[r]], ex.bottom_values[r])
    counts, edges = pos.slope_histogram(res, 3, bins=40)
    assert counts.sum() == tiny_layer.n_vocab and len(edges) == 41
    assert edges[0] == res.column(3).min() and edges[-1] == res.column(3).max()


# --------------------------------------------------------------------------- errors


def test_slope_overview_of_every_head(tiny_layer):
    ov = pos.slope_overview(tiny_layer, k=3, bins=20)
    H = tiny_layer.n_heads
    assert ov.slopes.heads == ov.extremes.heads == list(range(H))
    assert sorted(ov.hists) == ov.slopes.heads
    counts, _ = ov.hists[1]
    np.testing.assert_array_equal(counts, pos.slope_histogram(ov.slopes, 1, 20)[0])
    rows = ov.extreme_rows(1, "bottom")
    assert [t for t, _, _ in rows] == ov.extremes.bottom_ids[1].tolist()
    assert [v for _, _, v in rows] == sorted(ov.slopes.column(1))[:3]
    assert all(name == pos.display_token(tiny_layer.tokenizer, t) for t, name, _ in rows)


def test_bad_inputs_raise_input_error(tiny_layer):
    L = tiny_layer.n_positions
    for i in (-1, L, 10**9):
        with pytest.raises(InputError, match=rf"outside 0\.\.{L - 1}"):
            pos.positional_bias(tiny_layer, i)
    with pytest.raises(InputError, match="whole number"):
        pos.positional_bias(tiny_layer, 2.5)
    with pytest.raises(InputError, match="whole number"):
        pos.positional_bias(tiny_layer, "3")
    assert pos.positional_bias(tiny_layer, np.int64(3)).i == 3
    with pytest.raises(InputError, match="Head 4 is outside"):
        pos.positional_bias(tiny_layer, 3, heads=[0, 4])
    with pytest.raises(InputError, match="No heads"):
        pos.positional_bias(tiny_layer, 3, heads=[])
    with pytest.raises(InputError, match="mean, max, min, none"):
        pos.positional_bias(tiny_layer, 3, sigma="median")
    with pytest.raises(InputError, match="vocabulary"):
        pos.positional_pattern(tiny_layer, tiny_layer.n_vocab, 3)
    with pytest.raises(InputError, match=rf"outside 0\.\.{L - 1}"):
        pos.positional_pattern(tiny_layer, 5, L)
    with pytest.raises(InputError):
        pos.classify_heads(tiny_layer, n=L)
