"""`detokgui export` as a user runs it: a subprocess, real files, exit codes."""

import csv
import math
import subprocess
import sys

import torch
from conftest import SUBPROCESS_ENV

from detokgui.core.model.terms import TERM_NAMES


def run_cli(*args, timeout=300, input=None):
    return subprocess.run(
        [sys.executable, "-m", "detokgui", "export", *args],
        check=False, capture_output=True, text=True, timeout=timeout, env=SUBPROCESS_ENV,
        input=input,
    )


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_export_terms(tiny_ckpt, tiny_layer, tmp_path):
    out = tmp_path / "terms.csv"
    text = " North Korea is in Asia"
    r = run_cli("terms", "--model", str(tiny_ckpt), "--text", text, "--out", str(out))
    assert r.returncode == 0, r.stderr
    rows = read_csv(out)
    ids = tiny_layer.tokenizer.encode(text)
    n, H = len(ids), tiny_layer.n_heads
    assert list(rows[0]) == ["head", "i", "j", "term", "value"]
    assert len(rows) == H * 7 * n * (n + 1) // 2
    assert {r["term"] for r in rows} == set(TERM_NAMES) | {"attention"}
    assert all(int(r["j"]) <= int(r["i"]) for r in rows)
    terms = tiny_layer.six_terms(ids)
    attn = tiny_layer.attention(ids)
    for row in rows[:: max(1, len(rows) // 200)]:
        h, i, j = int(row["head"]), int(row["i"]), int(row["j"])
        t = attn if row["term"] == "attention" else terms[row["term"]]
        assert math.isclose(float(row["value"]), t[h, i, j].item(), rel_tol=1e-6, abs_tol=1e-7)
    per_row = {}
    for row in rows:
        if row["term"] == "attention":
            key = (row["head"], row["i"])
            per_row[key] = per_row.get(key, 0.0) + float(row["value"])
    assert all(abs(s - 1) < 1e-5 for s in per_row.values())


def test_export_sigma(tiny_ckpt, tiny_layer, tmp_path):
    out = tmp_path / "sigma.csv"
    r = run_cli("sigma", "--model", str(tiny_ckpt), "--out", str(out))
    assert r.returncode == 0, r.stderr
    rows = read_csv(out)
    assert list(rows[0]) == ["position", "mean", "min", "max"]
    assert len(rows) == tiny_layer.n_positions
    x = tiny_layer.E[:, None, :] + tiny_layer.P[None, [0, 77], :]  # two columns, direct
    direct = torch.sqrt(x.var(-1, unbiased=False) + tiny_layer.eps)
    for col, j in enumerate((0, 77)):
        row = rows[j]
        assert int(row["position"]) == j
        assert math.isclose(float(row["mean"]), direct[:, col].mean().item(), rel_tol=1e-5)
        assert math.isclose(float(row["min"]), direct[:, col].min().item(), rel_tol=1e-5)
        assert math.isclose(float(row["max"]), direct[:, col].max().item(), rel_tol=1e-5)


def test_export_missing_model_fails_cleanly(tmp_path):
    out = tmp_path / "x.csv"
    r = run_cli("sigma", "--model", str(tmp_path / "missing"), "--out", str(out))
    assert r.returncode != 0
    assert "There is no folder" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_export_bad_inputs_fail_cleanly(tiny_ckpt, tmp_path):
    cases = [
        (["terms", "--text", "   ", "--out", str(tmp_path / "a.csv")], "empty"),
        (["terms", "--text", "x" * 2000, "--out", str(tmp_path / "a.csv")], "positions"),
        (["sigma", "--out", str(tmp_path / "a.txt")], "--out must end in .csv"),
        (["sigma", "--out", str(tmp_path / "nope" / "a.csv")], "does not exist"),
    ]
    for args, message in cases:
        r = run_cli(*args, "--model", str(tiny_ckpt))
        assert r.returncode != 0, args
        assert message in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr
