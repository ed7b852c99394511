"""`detokgui export bias|neurons` against independent computations from the raw
checkpoint tensors (model.safetensors read directly, LayerNorm folded in the test)."""

import json
import math

import pytest
import torch
from safetensors.torch import load_file, save_file
from test_cli import read_csv, run_cli
from test_neurons import designed_positions, reference_stats
from test_positional import direct_position_sigma, fold_qk

from detokgui import cli
from detokgui.core.model.sources.demo import write_random_checkpoint


def raw_checkpoint(folder):
    """Un-prefixed float64 tensors of model.safetensors, n_heads and eps from config.json."""
    t = {k.removeprefix("transformer."): v.double()
         for k, v in load_file(str(folder / "model.safetensors")).items()}
    cfg = json.loads((folder / "config.json").read_text())
    return t, cfg["n_head"], cfg["layer_norm_epsilon"]


def bias_oracle(folder, i, sigma_mean: bool):
    """{(head, j): (t_p, t_pp, total, softmax)} from the raw tensors."""
    t, H, eps = raw_checkpoint(folder)
    Wqk, bqk, _, _ = fold_qk(t, H)
    E, P = t["wte.weight"], t["wpe.weight"]
    if sigma_mean:
        s = direct_position_sigma(E.float(), P.float(), eps, range(i + 1))["mean"]
    else:
        s = torch.ones(i + 1, dtype=torch.float64)
    d_head = P.shape[1] // H
    out = {}
    for h in range(H):
        t_p = (bqk[h] @ P[: i + 1].T) / s
        t_pp = (P[i] @ Wqk[h] @ P[: i + 1].T) / (s[i] * s)
        total = t_p + t_pp
        soft = torch.softmax(total / math.sqrt(d_head), 0)
        for j in range(i + 1):
            out[(h, j)] = (t_p[j].item(), t_pp[j].item(), total[j].item(), soft[j].item())
    return out, H


BIAS_HEADER = ["head", "j", "t_p", "t_pp", "total", "softmax", "t_pp_lo", "t_pp_hi", "t_p_lo",
               "t_p_hi", "convention", "sigma", "temperature"]


def paper_oracle(folder, i, sigma):
    """{(head, j): (t_p, t_pp, total, softmax, t_pp_lo, t_pp_hi, t_p_lo, t_p_hi)} from the raw
    tensors: every per-token value a_j / sigma(e_v + p_j) formed explicitly in float64,
    averaged over v, and numpy's 95% percentile interval over v."""
    import numpy as np

    t, H, eps = raw_checkpoint(folder)
    Wqk, bqk, _, _ = fold_qk(t, H)
    E, P = t["wte.weight"], t["wpe.weight"]
    S = torch.stack([torch.sqrt((E + P[j]).var(dim=1, unbiased=False) + eps)
                     for j in range(i + 1)], 1).numpy()  # [V, i+1]
    s_i = {"mean": S[:, i].mean(), "max": S[:, i].max(), "min": S[:, i].min()}[sigma]
    d_head = P.shape[1] // H
    out = {}
    for h in range(H):
        raw_pp = (P[i] @ Wqk[h] @ P[: i + 1].T).numpy()
        raw_p = (bqk[h] @ P[: i + 1].T).numpy()
        vals_pp, vals_p = raw_pp / (s_i * S), raw_p / S
        t_pp, t_p = vals_pp.mean(0), vals_p.mean(0)
        pp_lo, pp_hi = np.percentile(vals_pp, [2.5, 97.5], axis=0)
        p_lo, p_hi = np.percentile(vals_p, [2.5, 97.5], axis=0)
        soft = torch.softmax(torch.from_numpy(t_pp + t_p) / math.sqrt(d_head), 0).numpy()
        for j in range(i + 1):
            out[(h, j)] = (t_p[j], t_pp[j], t_pp[j] + t_p[j], soft[j], pp_lo[j], pp_hi[j],
                           p_lo[j], p_hi[j])
    return out, H


def check_bias_rows(rows, oracle, H, i, convention="mean-sigma", sigma="mean"):
    assert list(rows[0]) == BIAS_HEADER
    assert {(r["convention"], r["sigma"]) for r in rows} == {(convention, sigma)}
    cols = BIAS_HEADER[2:10]
    assert len(rows) == H * (i + 1)
    assert {(int(r["head"]), int(r["j"])) for r in rows} == set(oracle)
    sums = {}
    for r in rows:
        key = (int(r["head"]), int(r["j"]))
        got = [float(r[c]) for c in cols]
        want = oracle[key]
        if len(want) == 4:  # lo = hi = value where nothing depends on the token
            want = (*want, want[1], want[1], want[0], want[0]) if convention == "none" else want
        for g, w in zip(got, want):
            assert math.isclose(g, w, rel_tol=1e-4, abs_tol=1e-5), (key, got, want)
        sums[key[0]] = sums.get(key[0], 0.0) + got[3]
    assert all(abs(v - 1) < 1e-5 for v in sums.values())


def in_process(capsys, *args):
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def ckpt256(tmp_path_factory):
    """Random GPT-2 with 256 positions whose wpe has planted linear/periodic columns."""
    folder = write_random_checkpoint(tmp_path_factory.mktemp("p256"), n_positions=256, seed=5)
    path = folder / "model.safetensors"
    tensors = load_file(str(path))
    P, want = designed_positions(256, 64, seed=7)
    tensors["transformer.wpe.weight"] = torch.from_numpy(P)
    save_file(tensors, str(path), metadata={"format": "pt"})
    return folder, want


# --------------------------------------------------------------------------- bias


def test_export_bias_default_is_the_paper_convention(tiny_ckpt, tmp_path):
    out = tmp_path / "bias.csv"
    r = run_cli("bias", "--model", str(tiny_ckpt), "--position", "25", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert f"wrote {out} (" in r.stdout
    assert "convention: paper convention: key side E_v[1/sigma(e_v+p_j)]" in r.stdout
    oracle, H = paper_oracle(tiny_ckpt, 25, "mean")
    check_bias_rows(read_csv(out), oracle, H, 25, "paper", "mean")


@pytest.mark.parametrize("sigma", ["max", "min"])
def test_export_bias_paper_query_sigma(tiny_ckpt, tmp_path, capsys, sigma):
    out = tmp_path / f"paper-{sigma}.csv"
    code, stdout, err = in_process(capsys, "bias", "--model", str(tiny_ckpt), "--device", "cpu",
                                   "--position", "40", "--convention", "paper", "--sigma", sigma,
                                   "--out", str(out))
    assert code == 0, err
    assert f"query side sigma_i = vocabulary {sigma}" in stdout
    assert "softmax / tau, tau = sqrt(d') = 4" in stdout  # d' = 16
    oracle, H = paper_oracle(tiny_ckpt, 40, sigma)
    check_bias_rows(read_csv(out), oracle, H, 40, "paper", sigma)


def test_export_bias_mean_sigma_matches_raw_checkpoint(tiny_ckpt, tmp_path, capsys):
    out = tmp_path / "bias.csv"
    code, stdout, err = in_process(capsys, "bias", "--model", str(tiny_ckpt), "--device", "cpu",
                                   "--position", "25", "--convention", "mean-sigma",
                                   "--out", str(out))
    assert code == 0, err
    assert "mean-sigma convention" in stdout
    oracle, H = bias_oracle(tiny_ckpt, 25, sigma_mean=True)
    rows = read_csv(out)
    # bands: the same per-token 95% interval as the paper's, around 1/mean-sigma values
    paper, _ = paper_oracle(tiny_ckpt, 25, "mean")
    full = {k: (*v, *paper[k][4:]) for k, v in oracle.items()}
    check_bias_rows(rows, full, H, 25, "mean-sigma", "mean")


@pytest.mark.parametrize("i", [0, 127])
def test_export_bias_without_layernorm(tiny_ckpt, tmp_path, capsys, i):
    out = tmp_path / f"raw{i}.csv"
    code, _, err = in_process(capsys, "bias", "--model", str(tiny_ckpt), "--device", "cpu",
                                   "--position", str(i), "--sigma", "none", "--out", str(out))
    assert code == 0, err
    oracle, H = bias_oracle(tiny_ckpt, i, sigma_mean=False)
    check_bias_rows(read_csv(out), oracle, H, i, "none", "none")


@pytest.mark.parametrize("position", ["-1", "128"])
def test_export_bias_position_out_of_range(tiny_ckpt, tmp_path, capsys, position):
    out = tmp_path / "x.csv"
    code, _, err = in_process(capsys, "bias", "--model", str(tiny_ckpt),
                              "--position", position, "--out", str(out))
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "outside 0..127" in err
    assert err.startswith("detokgui export bias: error:")
    assert not out.exists()


def test_export_bias_bad_arguments(tiny_ckpt, tmp_path, capsys):
    code, _, err = in_process(capsys, "bias", "--model", str(tiny_ckpt), "--position", "3",
                              "--out", str(tmp_path / "x.txt"))
    assert code == 2 and "--out must end in .csv" in err
    for bad in (["--position", "3", "--sigma", "median"], ["--position", "three"],
                ["--head", "one"], ["--position", "3", "--convention", "authors"]):
        with pytest.raises(SystemExit) as exc:
            cli.main(["bias", "--model", str(tiny_ckpt), *bad, "--out", str(tmp_path / "y.csv")])
        assert exc.value.code == 2
        capsys.readouterr()
    assert not (tmp_path / "y.csv").exists()


# --------------------------------------------------------------------------- neurons


def check_neuron_rows(rows, curves):
    assert list(rows[0]) == ["dim", "norm", "slope", "r2", "period", "group"]
    assert [int(r["dim"]) for r in rows] == list(range(curves.shape[1]))
    for r, ref in zip(rows, reference_stats(curves)):
        k = int(r["dim"])
        assert math.isclose(float(r["norm"]), ref["norm"], rel_tol=1e-5), k
        assert math.isclose(float(r["slope"]), ref["slope"], rel_tol=1e-4, abs_tol=1e-9), k
        if math.isnan(ref["r2"]):
            assert r["r2"] == "nan", k
        else:
            assert math.isclose(float(r["r2"]), ref["r2"], rel_tol=1e-4, abs_tol=1e-7), k
        assert float(r["period"]) == pytest.approx(ref["period"]), k
        assert r["group"] in ("linear", "periodic", "other")


def test_export_neurons_matches_raw_checkpoint(ckpt256, tmp_path):
    folder, want = ckpt256
    out = tmp_path / "neurons.csv"
    r = run_cli("neurons", "--model", str(folder), "--out", str(out))
    assert r.returncode == 0, r.stderr
    rows = read_csv(out)
    t, _, _ = raw_checkpoint(folder)
    P = t["wpe.weight"].numpy()
    check_neuron_rows(rows, P)
    for k, grp in want.items():
        assert rows[k]["group"] == grp, (k, rows[k])
    assert rows[6]["period"] == "inf" and rows[6]["r2"] == "nan"  # the constant column
    assert float(rows[3]["period"]) == 256 / 8


def test_export_neurons_scaled(tiny_ckpt, tiny_layer, tmp_path, capsys):
    out = tmp_path / "scaled.csv"
    code, _, err = in_process(capsys, "neurons", "--model", str(tiny_ckpt), "--scaled",
                              "--out", str(out))
    assert code == 0, err
    t, _, eps = raw_checkpoint(tiny_ckpt)
    E, P = t["wte.weight"].float(), t["wpe.weight"]
    # the vocabulary-mean sigma: direct at a few positions, the (tested) table elsewhere
    s = tiny_layer.sigma_stats().pos_mean.double()
    few = [0, 1, 64, 127]
    direct = direct_position_sigma(E, P.float(), eps, few)["mean"]
    torch.testing.assert_close(s[few], direct, rtol=1e-5, atol=0)
    check_neuron_rows(read_csv(out), (P / s[:, None]).numpy())


# --------------------------------------------------------------------------- 256 positions


def test_256_positions_end_to_end(ckpt256, tmp_path, capsys):
    folder, _ = ckpt256
    out = tmp_path / "b255.csv"
    r = run_cli("bias", "--model", str(folder), "--position", "255", "--sigma", "none",
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    oracle, H = bias_oracle(folder, 255, sigma_mean=False)
    check_bias_rows(read_csv(out), oracle, H, 255, "none", "none")
    bad = tmp_path / "b256.csv"
    code, _, err = in_process(capsys, "bias", "--model", str(folder), "--position", "256",
                              "--out", str(bad))
    assert code == 2
    assert err.strip().splitlines() == [
        ("detokgui export bias: error: The query position 256 is outside 0..255 "
         "(the model has 256 positions).")
    ]
    assert not bad.exists()
