"""Position-only conventions (docs/math/sigma.md#position-only-views) against brute force: the full
sigma table S[v, j] = sigma(e_v + p_j) computed directly in float64, every per-token value
a_j / S[v, j] formed explicitly, then averaged and passed to numpy's percentile (what the
authors' seaborn `errorbar=("pi", 95)` does)."""

import math

import numpy as np
import pytest
import torch
from test_positional import fold_qk, raw_tensors

from detokgui.core import InputError
from detokgui.core.base.progress import run
from detokgui.core.model import sigma as sg
from detokgui.core.model.conventions import POSITION_CONVENTIONS
from detokgui.core.position_side import positional as pos

AGG = {"mean": lambda x: x.mean(0), "max": lambda x: x.max(0), "min": lambda x: x.min(0)}


@pytest.fixture(scope="module")
def brute(tiny_layer):
    """Independent folding and the whole float64 sigma table [V, L], position by position."""
    _, bqk, Wq, Wk = fold_qk(raw_tensors(tiny_layer), tiny_layer.n_heads)
    E, P = tiny_layer.E.double(), tiny_layer.P.double()
    S = torch.empty(E.shape[0], P.shape[0], dtype=torch.float64)
    for j in range(P.shape[0]):
        x = E + P[j]
        S[:, j] = torch.sqrt(x.var(dim=1, unbiased=False) + tiny_layer.eps)
    return {"S": S.numpy(), "P": P, "bqk": bqk, "Wq": Wq, "Wk": Wk}


def raw_terms(b, h, i):
    """(p_i W^QK_h p_j^T, b^QK_h p_j^T) for j <= i, float64 numpy."""
    P = b["P"]
    raw_pp = (P[i] @ b["Wq"][h]) @ (P[: i + 1] @ b["Wk"][h]).T
    raw_p = b["bqk"][h] @ P[: i + 1].T
    return raw_pp.numpy(), raw_p.numpy()


def summary(values):
    """mean and 95% percentile interval over v (axis 0) of per-token values [V, n]."""
    lo, hi = np.percentile(values, [2.5, 97.5], axis=0)
    return values.mean(0), lo, hi


def close(got, want, scale):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=2e-4, atol=2e-5 * scale)


@pytest.mark.parametrize("sigma", ["mean", "max", "min"])
def test_paper_convention_matches_brute_force(tiny_layer, brute, sigma):
    S = brute["S"]
    T = tiny_layer.temperature
    for i in (0, 37, tiny_layer.n_positions - 1):
        got = pos.positional_bias(tiny_layer, i, sigma, convention="paper")
        assert got.convention == "paper" and "paper convention" in got.label()
        assert f"vocabulary {sigma}" in got.label()
        s_i = AGG[sigma](S[:, i])  # applied to the query side only
        for r, h in enumerate(got.heads):
            raw_pp, raw_p = raw_terms(brute, h, i)
            Sj = S[:, : i + 1]
            pp = summary(raw_pp / (s_i * Sj))
            p = summary(raw_p / Sj)
            tot = summary((raw_pp / s_i + raw_p) / Sj)
            scale = np.abs(tot[0]).max()
            for name, want in (("t_pp", pp), ("t_p", p), ("total", tot)):
                close(getattr(got, name)[r], want[0], scale)
                close(getattr(got, f"{name}_lo")[r], want[1], scale)
                close(getattr(got, f"{name}_hi")[r], want[2], scale)
            soft = torch.softmax(torch.from_numpy(pp[0] + p[0]) / T, 0).numpy()
            close(got.softmax[r], soft, 1.0)


@pytest.mark.parametrize("sigma", ["mean", "max", "min"])
def test_mean_sigma_convention_matches_brute_force(tiny_layer, brute, sigma):
    """1 / (vocabulary mean|max|min of sigma) on both sides; bands on request."""
    S = brute["S"]
    i = 61
    s = AGG[sigma](S)  # [L]
    got = pos.positional_bias(tiny_layer, i, sigma, convention="mean-sigma", bands=True)
    plain = pos.positional_bias(tiny_layer, i, sigma, convention="mean-sigma")  # no bands
    assert plain.convention == "mean-sigma" and plain.t_pp_lo is None
    for r, h in enumerate(got.heads):
        raw_pp, raw_p = raw_terms(brute, h, i)
        t_pp = raw_pp / (s[i] * s[: i + 1])
        t_p = raw_p / s[: i + 1]
        scale = np.abs(t_pp + t_p).max()
        close(got.t_pp[r], t_pp, scale)
        close(got.t_p[r], t_p, scale)
        np.testing.assert_array_equal(plain.t_pp[r], got.t_pp[r])
        pp = summary(raw_pp / (s[i] * S[:, : i + 1]))
        p = summary(raw_p / S[:, : i + 1])
        close(got.t_pp_lo[r], pp[1], scale)
        close(got.t_pp_hi[r], pp[2], scale)
        close(got.t_p_lo[r], p[1], scale)
        close(got.t_p_hi[r], p[2], scale)


def test_paper_and_mean_sigma_differ_as_the_issue_says(tiny_layer):
    """E_v[1/S] >= 1/E_v[S] (Jensen), so paper |T_p| is at least the mean-sigma one; with
    sigma=max only the query side shrinks, so paper |T_pp| exceeds mean-sigma's."""
    L = tiny_layer.n_positions
    a = pos.positional_bias(tiny_layer, L - 1, "mean", convention="paper")
    b = pos.positional_bias(tiny_layer, L - 1, "mean", convention="mean-sigma")
    assert np.all(np.abs(a.t_p) >= np.abs(b.t_p) * (1 - 1e-6))
    a = pos.positional_bias(tiny_layer, L - 1, "max", convention="paper")
    b = pos.positional_bias(tiny_layer, L - 1, "max", convention="mean-sigma")
    assert np.all(np.abs(a.t_pp) >= np.abs(b.t_pp) * (1 - 1e-6))
    assert np.abs(a.t_pp).sum() > 1.01 * np.abs(b.t_pp).sum()


def test_without_layernorm_is_raw_under_both_conventions(tiny_layer, brute):
    for conv in POSITION_CONVENTIONS:
        got = pos.positional_bias(tiny_layer, 20, "none", convention=conv)
        assert got.convention == "none" and got.label() == "no LayerNorm (raw)"
        for r, h in enumerate(got.heads):
            raw_pp, raw_p = raw_terms(brute, h, 20)
            close(got.t_pp[r], raw_pp, np.abs(raw_pp).max())
            close(got.t_p[r], raw_p, np.abs(raw_p).max())
            np.testing.assert_array_equal(got.t_pp_lo[r], got.t_pp[r])
            np.testing.assert_array_equal(got.t_p_hi[r], got.t_p[r])


def test_inverse_sigma_stats_match_numpy(tiny_layer, brute):
    inv = pos.inverse_sigma_stats(tiny_layer)
    assert inv is pos.inverse_sigma_stats(tiny_layer)  # cached on the layer
    I = 1.0 / brute["S"]
    mean, lo, hi = summary(I)
    close(inv.mean, mean, 0.0)
    close(inv.lo, lo, 0.0)
    close(inv.hi, hi, 0.0)
    # chunking does not matter; other intervals follow numpy too
    again = run(sg.iter_inverse_sigma_stats(tiny_layer.sigma_table(), 80.0, cols_per_chunk=7))
    lo80, hi80 = np.percentile(I, [10, 90], axis=0)
    close(again.lo, lo80, 0.0)
    close(again.hi, hi80, 0.0)


@pytest.mark.parametrize("V", [1, 2, 3, 41, 1000])
def test_percentiles_on_small_tables_with_ties(V):
    g = torch.Generator().manual_seed(V)
    T = (torch.randint(1, 6, (V, 9), generator=g).float() / 2)  # many ties
    got = run(sg.iter_inverse_sigma_stats(T, cols_per_chunk=4))
    lo, hi = np.percentile(1.0 / T.double().numpy(), [2.5, 97.5], axis=0)
    np.testing.assert_allclose(got.lo.numpy(), lo, rtol=1e-6)
    np.testing.assert_allclose(got.hi.numpy(), hi, rtol=1e-6)


def test_band_swaps_ends_for_negative_terms():
    inv = sg.InverseSigmaStats(mean=torch.tensor([1.0, 1.0]), lo=torch.tensor([0.5, 0.5]),
                               hi=torch.tensor([2.0, 2.0]))
    lo, hi = inv.band(torch.tensor([3.0, -3.0]))
    assert lo.tolist() == [1.5, -6.0] and hi.tolist() == [6.0, -1.5]


def test_positional_pattern_paper_convention(tiny_layer, brute):
    S = brute["S"]
    x, n = 4242, 50
    got = pos.positional_pattern(tiny_layer, x, n, convention="paper")
    ref = pos.positional_pattern(tiny_layer, x, n, convention="mean-sigma")
    assert got.convention == "paper" and ref.convention == "mean-sigma"
    w_paper = (1.0 / S[:, : n + 1]).mean(0)
    w_mean = 1.0 / S[:, : n + 1].mean(0)
    for r in range(len(got.heads)):
        close(got.scores[r], ref.scores[r] / w_mean * w_paper, np.abs(ref.scores[r]).max())
        assert math.isclose(got.pattern[r].sum(), 1.0, rel_tol=1e-5)


def test_bad_convention(tiny_layer):
    with pytest.raises(InputError, match="convention must be one of paper, mean-sigma"):
        pos.positional_bias(tiny_layer, 3, "mean", convention="authors")
    with pytest.raises(InputError):
        pos.positional_pattern(tiny_layer, 1, 3, convention="x")
