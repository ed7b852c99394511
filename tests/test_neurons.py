"""Position-embedding neurons (B6) on position embeddings with known columns."""

import math

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from detokgui.core import InputError, Layer0
from detokgui.core.base.progress import run
from detokgui.core.position_side import neurons as nr


def designed_positions(L, d, seed=0):
    """P [L, d] float32 with known columns, and the group each planted column must get.

    Column 8 has by far the largest norm; the filler columns are small noise."""
    g = np.random.default_rng(seed)
    j = np.arange(L, dtype=np.float64)
    P = 0.01 * g.standard_normal((L, d))
    want = {
        0: ("linear", 0.02 * j - 1.0),
        1: ("linear", 0.02 * j + 0.05 * g.standard_normal(L)),
        2: ("periodic", np.sin(2 * np.pi * 5 * j / L)),
        3: ("periodic", 2.0 * np.cos(2 * np.pi * 8 * j / L)),
        4: ("periodic", np.sin(2 * np.pi * 4.5 * j / L)),  # period does not divide L
        5: ("other", np.sin(2 * np.pi * j / L)),  # one cycle: neither linear nor periodic
        6: ("other", np.full(L, 0.7)),  # constant: R^2 undefined, no period
        7: ("other", g.standard_normal(L)),  # white noise
        8: ("linear", 10.0 * j / L + 3.0),
    }
    for k, (_, col) in want.items():
        P[:, k] = col
    return P.astype(np.float32), {k: grp for k, (grp, _) in want.items()}


def synthetic_layer(tiny_ckpt, P, E=None):
    t = {k.removeprefix("transformer."): v for k, v in
         load_file(str(tiny_ckpt / "model.safetensors")).items()}
    t["wpe.weight"] = torch.from_numpy(P)
    if E is not None:
        t["wte.weight"] = torch.from_numpy(E)
    return Layer0.from_tensors(t, n_heads=4, eps=1e-5, device="cpu")


def svd_planted_embedding(V, d, heavy_dim, seed=1):
    """E = U diag(s) Q^T with orthonormal U, Q, distinct s, Q[:, 0] = +-e_heavy_dim."""
    g = np.random.default_rng(seed)
    U, _ = np.linalg.qr(g.standard_normal((V, d)))
    M = g.standard_normal((d, d))
    M[:, 0] = 0.0
    M[heavy_dim, 0] = 1.0
    Q, _ = np.linalg.qr(M)
    s = np.linspace(6.0, 0.5, d)
    return (U * s) @ Q.T, s, Q


@pytest.fixture(scope="module")
def designed(tiny_ckpt):
    P, want = designed_positions(128, 64)
    E, s, Q = svd_planted_embedding(3000, 64, heavy_dim=8)
    return synthetic_layer(tiny_ckpt, P, E.astype(np.float32)), P.astype(np.float64), want, s, Q


def reference_stats(Y):
    """numpy polyfit / fft per column."""
    L, d = Y.shape
    j = np.arange(L)
    out = []
    for k in range(d):
        y = Y[:, k]
        slope, icpt = np.polyfit(j, y, 1)
        ss_tot = ((y - y.mean()) ** 2).sum()
        r2 = 1 - ((y - (slope * j + icpt)) ** 2).sum() / ss_tot if ss_tot > 1e-20 else math.nan
        mag = np.abs(np.fft.fft(y - y.mean()))[1 : L // 2 + 1]
        f = int(mag.argmax()) + 1 if mag.max() > 1e-9 else 0
        out.append({"norm": np.linalg.norm(y), "slope": slope, "intercept": icpt, "r2": r2,
                    "freq": f, "period": L / f if f else math.inf})
    return out


def test_curve_stats_match_numpy(designed):
    layer, P, _, _, _ = designed
    st = nr.neuron_stats(layer)
    assert st.norm.shape == st.slope.shape == st.r2.shape == st.period.shape == (64,)
    assert st.n_positions == 128 and not st.scaled and len(st.group) == 64
    for k, ref in enumerate(reference_stats(P)):
        assert math.isclose(st.norm[k], ref["norm"], rel_tol=1e-6), k
        assert math.isclose(st.slope[k], ref["slope"], rel_tol=1e-6, abs_tol=1e-10), k
        assert math.isclose(st.intercept[k], ref["intercept"], rel_tol=1e-6, abs_tol=1e-8), k
        if math.isnan(ref["r2"]):
            assert math.isnan(st.r2[k]), k
        else:
            assert math.isclose(st.r2[k], ref["r2"], rel_tol=1e-6, abs_tol=1e-9), k
        assert st.frequency[k] == ref["freq"], k
        assert st.period[k] == ref["period"], k


def test_planted_columns_get_their_groups(designed):
    layer, _, want, _, _ = designed
    st = nr.neuron_stats(layer)
    for k, grp in want.items():
        assert st.group[k] == grp, (k, st.group[k], st.r2[k], st.frequency[k], st.peak_share[k])
    assert st.period[2] == pytest.approx(128 / 5) and st.period[3] == 16.0
    assert st.frequency[4] in (4, 5) and st.peak_share[4] >= nr.PERIODIC_MIN_PEAK_SHARE
    assert st.slope[0] == pytest.approx(0.02) and st.r2[0] == pytest.approx(1.0)
    assert math.isnan(st.r2[6]) and st.period[6] == math.inf and st.frequency[6] == 0
    assert st.peak_share[2] == pytest.approx(1.0, abs=1e-9)
    # fillers are noise
    assert all(st.group[k] == "other" for k in range(9, 64))
    assert list(st.dims_in("linear")[:1]) == [8]
    assert set(st.dims_in("periodic")) == {2, 3, 4}
    for k in range(64):
        assert st.group[k] == nr.group_of(st.r2[k], st.frequency[k], st.peak_share[k])


def test_texts_of_the_neuron_table(designed):
    layer, _, _, _, _ = designed
    st = nr.neuron_stats(layer)
    assert nr.period_text(math.inf) == "∞" and nr.period_text(25.6) == "25.6"
    assert nr.slope_text(math.nan) == "" and nr.slope_text(0.02) == "0.02"
    assert nr.slope_text(2e-5) == "2.00e-05" and nr.slope_text(0.0) == "0"
    assert nr.describe_dim(st, 3).splitlines() == [
        f"dim 3: norm {st.norm[3]:.6g}, slope {st.slope[3]:.6g}, R² {st.r2[3]:.4f}",
        (f"period 16.0 positions (f = {int(st.frequency[3])} cycles, peak share "
         f"{st.peak_share[3]:.2f})"),
        "group periodic"]
    counts = " · ".join(f"{g} {st.group.count(g)}" for g in nr.NEURON_GROUPS)
    assert nr.summary_text(st) == f"d = 64 dims · L = 128 positions · {counts} · raw"
    assert f"R² ≥ {nr.LINEAR_MIN_R2:g}" in nr.GROUP_RULES


def test_order(designed):
    layer, P, _, _, _ = designed
    st = nr.neuron_stats(layer)
    np.testing.assert_array_equal(st.order("norm"), np.argsort(-np.linalg.norm(P, axis=0),
                                                               kind="stable"))
    by_r2 = st.order("r2")
    assert by_r2[-1] == 6  # NaN sorts last
    assert st.order("slope", descending=False)[0] == np.argmin(st.slope)
    np.testing.assert_array_equal(nr.position_heavy_dims(st, 3), st.order("norm")[:3])
    with pytest.raises(InputError):
        st.order("colour")
    with pytest.raises(InputError):
        st.dims_in("wavy")
    with pytest.raises(InputError):
        nr.position_heavy_dims(st, 0)
    with pytest.raises(InputError):
        nr.position_heavy_dims(st, 65)


def test_scaled_curves_divide_by_mean_sigma(designed):
    layer, P, _, _, _ = designed
    curves = nr.position_curves(layer, scaled=True)
    E = layer.E
    for j in (0, 50, 127):
        var, _ = torch.var_mean(E + layer.P[j], dim=-1, correction=0)
        s_mean = torch.sqrt(var.double() + layer.eps).mean().item()
        np.testing.assert_allclose(curves[j], P[j] / s_mean, rtol=1e-5)
    st = nr.neuron_stats(layer, scaled=True)
    assert st.scaled
    ref = reference_stats(curves)
    for k in (0, 2, 8, 20):
        assert math.isclose(st.slope[k], ref[k]["slope"], rel_tol=1e-6, abs_tol=1e-12)
    np.testing.assert_array_equal(nr.position_curves(layer), P.astype(np.float32))


def test_curve_stats_edge_cases():
    one = nr.curve_stats(np.array([[1.0, -2.0]]))
    assert list(one.period) == [math.inf, math.inf] and list(one.frequency) == [0, 0]
    assert np.isnan(one.r2).all() and list(one.slope) == [0.0, 0.0]
    assert one.group == ["other", "other"]
    two = nr.curve_stats(np.array([[0.0], [1.0]]))
    assert two.slope[0] == 1.0 and two.r2[0] == pytest.approx(1.0) and two.period[0] == 2.0
    with pytest.raises(InputError):
        nr.curve_stats(np.zeros((0, 3)))
    with pytest.raises(InputError):
        nr.curve_stats(np.zeros(5))


def test_embedding_overlap_with_planted_direction(designed):
    layer, P, _, s, _ = designed
    ov = nr.embedding_overlap(layer, r=5, m=1)
    assert list(ov.dims) == [8] and ov.baseline == pytest.approx(1 / 64)
    np.testing.assert_allclose(ov.singular_values, s[:5], rtol=1e-5)
    assert ov.overlap[0] == pytest.approx(1.0, abs=1e-5)  # top direction is e_8
    np.testing.assert_allclose(ov.overlap[1:], 0.0, atol=1e-5)
    assert ov.loadings.shape == (5, 1) and ov.dim_norms[0] == pytest.approx(np.linalg.norm(P[:, 8]))


def test_embedding_overlap_matches_numpy_svd(designed):
    layer = designed[0]
    E = layer.E.double().numpy()
    P = layer.P.double().numpy()
    seen = []
    ov = run(nr.iter_embedding_overlap(layer, r=4, m=6), seen.append)
    assert seen and seen[-1].fraction == 1.0
    dims = np.argsort(-np.linalg.norm(P, axis=0), kind="stable")[:6]
    np.testing.assert_array_equal(ov.dims, dims)
    for centre in (False, True):
        ov = nr.embedding_overlap(layer, r=4, m=6, centre=centre)
        X = E - E.mean(0) if centre else E
        _, sv, Vt = np.linalg.svd(X, full_matrices=False)
        np.testing.assert_allclose(ov.singular_values, sv[:4], rtol=1e-5)
        np.testing.assert_allclose(ov.loadings, Vt[:4, dims] ** 2, atol=1e-4)
        np.testing.assert_allclose(ov.overlap, (Vt[:4, dims] ** 2).sum(1), atol=1e-4)
        assert ov.centred == centre
    with pytest.raises(InputError):
        nr.token_directions(layer, 0)


def test_overlap_title_and_note():
    from types import SimpleNamespace as NS

    res = NS(dims=np.array([7, 3, 9, 1, 4]), overlap=np.array([0.25, 0.75]), baseline=0.125,
             scaled=True, centred=False)
    assert nr.overlap_title(res) == "SVD directions of E on the 5 heaviest dims of P (scaled)"
    text, tip = nr.overlap_note(res)
    assert text == "mean overlap 0.5\nheavy dims 7, 3, 9, 1, …"
    assert tip == ("The mean overlap of the 2 directions (random: m/d = 0.125).\n"
                   "All position-heavy dims: 7, 3, 9, 1, 4")
