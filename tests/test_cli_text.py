"""`detokgui export sentence|empirical|kl|neuron` on a random checkpoint and the sample
corpus, checked against the model's own forward pass and independent windowing."""

import gzip
import json
import math

import numpy as np
import pytest
import torch
from conftest import SAMPLE_CORPUS, model_attention
from test_cli import read_csv, run_cli

from detokgui import cli
from detokgui.core.model.terms import TERM_NAMES
from detokgui.core.text_side import circuits as ci
from detokgui.core.text_side import empirical as em

CORPUS = str(SAMPLE_CORPUS)


def first_windows(tokenizer, count, size, eos=None):
    """The first `count` windows of the corpus, cut here without core.corpus.documents."""
    out = []
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        for line in f:
            ids = tokenizer.encode(json.loads(line)["text"])
            step = size - (eos is not None)
            for a in range(0, len(ids), step):
                out.append(([eos] if eos is not None else []) + ids[a:a + step])
                if len(out) == count:
                    return out
    return out


def in_process(capsys, *args):
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def model(tiny_ckpt, hf_eager):
    return hf_eager(tiny_ckpt)


def test_export_sentence(tiny_ckpt, tiny_layer, model, tmp_path):
    text = "It is a truth universally acknowledged, that a single man"
    out = tmp_path / "s.csv"
    r = run_cli("sentence", "--model", str(tiny_ckpt), "--text", text, "--out", str(out))
    assert r.returncode == 0, r.stderr
    ids = tiny_layer.tokenizer.encode(text)
    n = len(ids)
    names = [*TERM_NAMES, "sum", "predicted", "actual"]
    assert r.stdout.strip() == f"wrote {out} ({4 * len(names) * n * (n + 1) // 2} rows)"
    rows = read_csv(out)
    assert list(rows[0]) == ["head", "i", "j", "term", "value"]
    assert {row["term"] for row in rows} == set(names)
    att = model_attention(model, ids)
    got = {(int(x["head"]), int(x["i"]), int(x["j"]), x["term"]): float(x["value"])
           for x in rows}
    for h in range(4):
        for i in range(n):
            for j in range(i + 1):
                ref = att[h, i, j].item()
                assert abs(got[(h, i, j, "actual")] - ref) < 1e-6
                assert abs(got[(h, i, j, "predicted")] - ref) < 1e-5
                total = sum(got[(h, i, j, k)] for k in TERM_NAMES)
                assert math.isclose(got[(h, i, j, "sum")], total, rel_tol=1e-5, abs_tol=1e-4)


def test_export_empirical(tiny_ckpt, tiny_layer, model, tmp_path):
    out = tmp_path / "e.csv"
    i = 40
    r = run_cli("empirical", "--model", str(tiny_ckpt), "--corpus", CORPUS, "--position",
                str(i), "--max-texts", "12", "--out", str(out))
    assert r.returncode == 0, r.stderr
    rows = read_csv(out)
    assert list(rows[0]) == ["head", "j", "empirical", "predicted", "windows", "convention",
                             "temperature"]
    assert len(rows) == 4 * (i + 1)
    windows = [w for w in first_windows(tiny_layer.tokenizer, 12, 128) if len(w) > i]
    expect = torch.stack([model_attention(model, w)[:, i, : i + 1] for w in windows]).mean(0)
    assert {int(x["windows"]) for x in rows} == {len(windows)}
    assert {x["convention"] for x in rows} == {"paper"}
    pred = em.b3_prediction(tiny_layer, i)
    for x in rows:
        h, j = int(x["head"]), int(x["j"])
        assert abs(float(x["empirical"]) - expect[h, j].item()) < 1e-5
        assert abs(float(x["predicted"]) - pred[h, j]) < 1e-6


@pytest.mark.parametrize("definition", ["paper", "code"])
def test_export_kl(tiny_ckpt, tiny_layer, tmp_path, capsys, definition):
    out = tmp_path / "k.csv"
    code, stdout, err = in_process(
        capsys, "kl", "--model", str(tiny_ckpt), "--device", "cpu", "--corpus", CORPUS,
        "--max-texts", "3", "--prepend-eos", "--definition", definition, "--out", str(out))
    assert code == 0, err
    rows = read_csv(out)
    assert list(rows[0]) == ["head", "i", "term", "contribution", "texts", "definition",
                             "temperature"]
    tau = tiny_layer.temperature if definition == "paper" else 1.0
    assert {float(r["temperature"]) for r in rows} == {tau}
    eos = tiny_layer.tokenizer.eos_token_id
    windows = first_windows(tiny_layer.tokenizer, 3, 128, eos=eos)
    per = [em.kl_contributions(tiny_layer, w, definition).double() for w in windows]
    longest = max(map(len, windows))
    assert len(rows) == 4 * 6 * longest and stdout.strip().endswith(f"({len(rows)} rows)")
    for x in rows:
        h, i, t = int(x["head"]), int(x["i"]), TERM_NAMES.index(x["term"])
        have = [p[h, t, i].item() for p in per if p.shape[-1] > i]
        assert int(x["texts"]) == len(have) and x["definition"] == definition
        assert math.isclose(float(x["contribution"]), np.mean(have), rel_tol=1e-6,
                            abs_tol=1e-9)


def test_export_neuron(tiny_ckpt, tiny_layer, tmp_path, capsys):
    out = tmp_path / "n.csv"
    code, stdout, err = in_process(
        capsys, "neuron", "--model", str(tiny_ckpt), "--device", "cpu", "--neuron", "17",
        "--k", "6", "--heads", "0", "2", "--out", str(out))
    assert code == 0, err
    assert "heads 0, 2" in stdout and "vocabulary mean" in stdout
    rows = read_csv(out)
    assert list(rows[0]) == ["rank", "token_id", "token", "contribution", "side"]
    assert [(x["side"], int(x["rank"])) for x in rows] == (
        [("top", k) for k in range(1, 7)] + [("bottom", k) for k in range(1, 7)])
    c = ci.neuron_contributions(tiny_layer, ci.contextual_circuit(tiny_layer, [0, 2]), 17)
    want = np.argsort(-c)[:6].tolist() + np.argsort(c)[:6].tolist()
    assert [int(x["token_id"]) for x in rows] == want
    tok = tiny_layer.tokenizer
    for x in rows:
        assert x["token"] == tok.decode([int(x["token_id"])])
        assert math.isclose(float(x["contribution"]), c[int(x["token_id"])], rel_tol=1e-5,
                            abs_tol=1e-7)
    assert "\u2423" not in out.read_text(encoding="utf-8")


def test_export_neuron_with_measured_normalisation(tiny_ckpt, tiny_layer, tmp_path, capsys):
    out = tmp_path / "n.csv"
    code, stdout, err = in_process(
        capsys, "neuron", "--model", str(tiny_ckpt), "--device", "cpu", "--neuron", "3",
        "--k", "2", "--corpus", CORPUS, "--max-texts", "2", "--out", str(out))
    assert code == 0, err
    heads = ci.contextual_heads(tiny_layer)
    texts = em.TextSource.corpus(CORPUS, max_texts=2)
    norms = ci.normalisation(tiny_layer, texts, heads).norm
    c = ci.neuron_contributions(tiny_layer, ci.contextual_circuit(tiny_layer, heads, norms), 3)
    rows = read_csv(out)
    assert [int(x["token_id"]) for x in rows] == (
        np.argsort(-c)[:2].tolist() + np.argsort(c)[:2].tolist())
    assert "public-domain-sample" in stdout


@pytest.mark.parametrize("args, message", [
    (["empirical", "--corpus", CORPUS, "--position", "128"], "outside 0..127"),
    (["empirical", "--corpus", CORPUS, "--position", "5", "--max-texts", "0"], "at least 1"),
    (["empirical", "--corpus", "/nonexistent/c.txt", "--position", "5"], "no such file"),
    (["kl", "--corpus", __file__], "unsupported file type"),
    (["neuron", "--neuron", "256"], "outside 0..255"),
    (["neuron", "--neuron", "1", "--heads", "4"], "Head 4 is outside"),
    (["neuron", "--neuron", "1", "--k", "0"], "--k must be at least 1"),
    (["neuron", "--neuron", "1", "--max-texts", "3"], "need --corpus"),
    (["sentence", "--text", "word " * 200], "more than the model's 128 positions"),
    (["sentence", "--text", " "], "empty"),
])
def test_bad_input_is_one_line(tiny_ckpt, tmp_path, capsys, args, message):
    out = tmp_path / "x.csv"
    code, _, err = in_process(capsys, *args, "--model", str(tiny_ckpt), "--device", "cpu",
                              "--out", str(out))
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_texts_shorter_than_the_position(tiny_ckpt, tmp_path, capsys):
    corpus = tmp_path / "short.txt"
    corpus.write_text("A short text.\n<|endoftext|>\nAnd another one, a little longer.\n")
    out = tmp_path / "e.csv"
    code, _, err = in_process(capsys, "empirical", "--model", str(tiny_ckpt), "--corpus",
                              str(corpus), "--position", "10", "--prepend-eos", "--out", str(out))
    assert code == 2 and not out.exists()
    assert "None of the 2 texts is longer than 10 tokens" in err
    code, _, err = in_process(capsys, "empirical", "--model", str(tiny_ckpt), "--corpus",
                              str(corpus), "--position", "9", "--prepend-eos", "--out", str(out))
    assert code == 0, err
    assert {r["windows"] for r in read_csv(out)} == {"1"}
