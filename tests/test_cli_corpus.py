"""`detokgui export counts|stats|auroc|frequency|neighbours` on random checkpoints and the
shared sample corpus, checked against direct and brute-force computation."""

import gzip
import itertools
import json
import re
from collections import Counter

import numpy as np
import pytest
from brute_vocab import raw_model, te_matrix, tee_matrix, weighted_auroc
from conftest import SAMPLE_CORPUS
from scipy import stats
from test_cli import read_csv, run_cli

from detokgui.cli import main

S = str(SAMPLE_CORPUS)


@pytest.fixture(scope="module")
def sample_docs():
    with gzip.open(SAMPLE_CORPUS, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


@pytest.fixture(scope="module")
def direct(small_vocab_layer, sample_docs):
    """Unigram and bigram counts of the sample corpus with the 400-token tokenizer."""
    tok = small_vocab_layer.tokenizer
    uni, bi = Counter(), Counter()
    for ids in tok(sample_docs, add_special_tokens=False)["input_ids"]:
        uni.update(ids)
        bi.update(itertools.pairwise(ids))
    return uni, bi


def assert_token_text(tok, t, text):
    """The CSV holds the token's real text (leading space and all); a token that is part
    of a multi-byte character shows its bytes as \\xNN instead of U+FFFD."""
    decoded = tok.decode([t])
    if "\ufffd" in decoded:
        assert "\\x" in text and "\ufffd" not in text, (t, text)
    else:
        assert text == decoded


def export(capsys, *args):
    """Run `detokgui export ...` in this process: (exit status, stdout lines, stderr)."""
    rc = main([str(a) for a in args])
    out = capsys.readouterr()
    return rc, out.out.splitlines(), out.err


def test_counts_and_bigrams(small_vocab_ckpt, small_vocab_layer, direct, tmp_path, capsys):
    uni, bi = direct
    out = tmp_path / "counts.csv"
    rc, lines, err = export(capsys, "counts", "--model", small_vocab_ckpt, "--corpus", S,
                            "--out", out)
    assert rc == 0, err
    assert lines == [f"wrote {out} (400 rows)"]
    rows = read_csv(out)
    assert list(rows[0]) == ["token_id", "token", "count"]
    tok = small_vocab_layer.tokenizer
    for r in rows:
        t = int(r["token_id"])
        assert int(r["count"]) == uni.get(t, 0)
        assert_token_text(tok, t, r["token"])
    assert any(r["token"].startswith(" ") for r in rows)
    rc, lines, err = export(capsys, "counts", "--model", small_vocab_ckpt, "--corpus", S,
                            "--bigrams", "--out", out)
    assert rc == 0, err
    rows = read_csv(out)
    assert list(rows[0]) == ["prev_id", "next_id", "count"]
    assert {(int(r["prev_id"]), int(r["next_id"])): int(r["count"]) for r in rows} == dict(bi)
    assert lines == [f"wrote {out} ({len(bi)} rows)"]


def near_tie(row, a, b, tol=1e-5):
    return abs(row[a] - row[b]) <= tol * max(1.0, abs(row[a]))


def test_stats(small_vocab_ckpt, tmp_path, capsys):
    out = tmp_path / "stats.csv"
    rc, lines, err = export(capsys, "stats", "--model", small_vocab_ckpt, "--out", out)
    assert rc == 0, err
    rows = read_csv(out)
    assert list(rows[0]) == ["head", "query_id", "query_token", "self_rank", "variance",
                             "top1_id", "top1_token", "top1_score"]
    assert len(rows) == 4 * 400 and lines == [f"wrote {out} (1600 rows)"]
    full = tee_matrix(raw_model(small_vocab_ckpt))
    for r in rows:
        h, u = int(r["head"]), int(r["query_id"])
        row = full[h, u]
        rank = 1 + np.sum(np.delete(row > row[u], u))
        if int(r["self_rank"]) != rank:  # float32 vs float64: only at a near tie
            assert np.any([near_tie(row, u, v) for v in range(400) if v != u])
        assert abs(float(r["variance"]) - row.var()) <= 1e-4 * row.var()
        best = int(np.argmax(row))
        assert int(r["top1_id"]) == best or near_tie(row, best, int(r["top1_id"]))
        assert abs(float(r["top1_score"]) - row.max()) <= 1e-5 * max(1, abs(row.max()))
    rc, _, err = export(capsys, "stats", "--model", small_vocab_ckpt, "--head", 2,
                        "--sigma", "none", "--out", out)
    assert rc == 0, err
    rows = read_csv(out)
    raw = tee_matrix(raw_model(small_vocab_ckpt), "none")[2]
    assert {r["head"] for r in rows} == {"2"} and len(rows) == 400
    for r in rows[::37]:
        u = int(r["query_id"])
        assert abs(float(r["variance"]) - raw[u].var()) <= 1e-4 * raw[u].var()


SUMMARY = re.compile(r"head (\d+): mean AUROC ([0-9.]+) over (\d+) query tokens")


@pytest.mark.parametrize("no_bigram", ["skip", "zero"])
def test_auroc(small_vocab_ckpt, direct, tmp_path, capsys, no_bigram):
    _, bi = direct
    out = tmp_path / "auroc.csv"
    rc, lines, err = export(capsys, "auroc", "--model", small_vocab_ckpt, "--corpus", S,
                            "--no-bigram", no_bigram, "--out", out)
    assert rc == 0, err
    rows = read_csv(out)
    assert list(rows[0]) == ["head", "query_id", "query_token", "auroc", "positives",
                             "negatives"]
    dense = np.zeros((400, 400))
    for (v, u), c in bi.items():
        dense[v, u] = c
    has = dense.sum(axis=0) > 0
    assert len(rows) == 4 * (has.sum() if no_bigram == "skip" else 400)
    assert lines[-1] == f"wrote {out} ({len(rows)} rows)"
    full = tee_matrix(raw_model(small_vocab_ckpt))
    for r in rows[:: 7]:
        h, u = int(r["head"]), int(r["query_id"])
        assert int(r["positives"]) == np.count_nonzero(dense[:, u])
        assert int(r["negatives"]) == 400 - int(r["positives"])
        want = weighted_auroc(full[h, u], dense[:, u]) if has[u] else 0.0
        assert abs(float(r["auroc"]) - want) < 1e-4
    summaries = [SUMMARY.fullmatch(line) for line in lines[:4]]
    for h, m in enumerate(summaries):
        assert m and int(m[1]) == h
        mine = [float(r["auroc"]) for r in rows if int(r["head"]) == h]
        assert int(m[3]) == len(mine)
        assert abs(float(m[2]) - np.mean(mine)) < 1e-6
    assert ("authors' convention" in lines[4]) == (no_bigram == "zero")


def test_frequency(small_vocab_ckpt, direct, tmp_path, capsys):
    uni, _ = direct
    out = tmp_path / "freq.csv"
    rc, lines, err = export(capsys, "frequency", "--model", small_vocab_ckpt, "--corpus", S,
                            "--out", out)
    assert rc == 0, err
    rows = read_csv(out)
    assert list(rows[0]) == ["head", "token_id", "token", "count", "t_e"]
    assert len(rows) == 1600
    te = te_matrix(raw_model(small_vocab_ckpt))
    counts = np.array([uni.get(t, 0) for t in range(400)])
    for r in rows:
        h, v = int(r["head"]), int(r["token_id"])
        assert int(r["count"]) == counts[v]
        assert abs(float(r["t_e"]) - te[h, v]) <= 1e-5 * max(1, abs(te[h, v]))
    seen = counts > 0
    for h in range(4):
        m = re.fullmatch(r"head (\d+): Spearman rho\(count, T_e\) (-?[0-9.]+) over (\d+) tokens",
                         lines[h])
        assert m and int(m[1]) == h and int(m[3]) == seen.sum()
        assert abs(float(m[2]) - stats.spearmanr(counts[seen], te[h, seen]).statistic) < 1e-5
    assert lines[4].startswith("token-embedding variance: Spearman rho(count, Var(e))")
    assert lines[-1] == f"wrote {out} (1600 rows)"


def test_neighbours_with_the_gpt2_tokenizer(tiny_ckpt, tiny_layer, tmp_path, capsys):
    out = tmp_path / "nb.csv"
    rc, lines, err = export(capsys, "neighbours", "--model", tiny_ckpt, "--token", " Korea",
                            "--k", 6, "--out", out)
    assert rc == 0 and lines == [f"wrote {out} (6 rows)"], err
    rows = read_csv(out)
    assert list(rows[0]) == ["rank", "token_id", "token", "cosine"]
    E = tiny_layer.E.double().numpy()
    u = tiny_layer.tokenizer.encode(" Korea")[0]
    cos = (E @ E[u]) / (np.linalg.norm(E, axis=1) * np.linalg.norm(E[u]))
    cos[u] = -np.inf
    assert [int(r["token_id"]) for r in rows] == np.argsort(-cos)[:6].tolist()
    assert [int(r["rank"]) for r in rows] == list(range(1, 7))
    for r in rows:
        assert abs(float(r["cosine"]) - cos[int(r["token_id"])]) < 1e-5
        assert_token_text(tiny_layer.tokenizer, int(r["token_id"]), r["token"])
    rc, _, err = export(capsys, "neighbours", "--model", tiny_ckpt, "--token", " king",
                        "--minus", " man", "--plus", " woman", "--centred", "--out", out)
    assert rc == 0, err
    ids = [tiny_layer.tokenizer.encode(t)[0] for t in (" king", " man", " woman")]
    assert not set(ids) & {int(r["token_id"]) for r in read_csv(out)}


def test_counts_with_the_gpt2_tokenizer_on_the_sample(tiny_ckpt, tiny_layer, sample_docs,
                                                      tmp_path):
    """End to end as a user runs it: a subprocess, the real GPT-2 tokenizer."""
    out = tmp_path / "counts.csv"
    r = run_cli("counts", "--model", str(tiny_ckpt), "--corpus", S, "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"wrote {out} (50257 rows)"
    rows = read_csv(out)
    uni = Counter()
    for ids in tiny_layer.tokenizer(sample_docs, add_special_tokens=False)["input_ids"]:
        uni.update(ids)
    assert [int(x["count"]) for x in rows] == [uni.get(t, 0) for t in range(50257)]
    assert next(x for x in rows if x["token"] == " the")["count"] == str(uni[262])


@pytest.mark.parametrize("case,expected", [
    ("missing", "no such file or folder"),
    ("empty", "is empty"),
    ("binary", "NUL byte"),
])
def test_bad_corpus_exit_2_one_line(small_vocab_ckpt, tmp_path, capsys, case, expected):
    f = tmp_path / "c.jsonl"
    if case == "empty":
        f.write_bytes(b"")
    elif case == "binary":
        f.write_bytes(b'{"text": "a b c"}\n\x00\x01')
    for what in ("counts", "auroc", "frequency"):
        out = tmp_path / "x.csv"
        rc, lines, err = export(capsys, what, "--model", small_vocab_ckpt, "--corpus", f,
                                "--out", out)
        assert rc == 2 and lines == [] and not out.exists()
        assert err.count("\n") == 1 and expected in err and err.startswith(f"detokgui export {what}")


def test_single_token_corpus_unigram_counts_only(small_vocab_ckpt, small_vocab_layer,
                                                 tmp_path, capsys):
    """Documents of one token each: `export counts` writes the unigram counts (and frequency
    works on them); --bigrams and auroc refuse in one line (issue 16, item 3)."""
    tok = small_vocab_layer.tokenizer
    a, b = tok.encode("a"), tok.encode("b")
    assert len(a) == len(b) == 1 and a != b
    f = tmp_path / "single.jsonl"
    f.write_text('{"text": "a"}\n{"text": "b"}\n{"text": "a"}\n')
    out = tmp_path / "counts.csv"
    rc, lines, err = export(capsys, "counts", "--model", small_vocab_ckpt, "--corpus", f,
                            "--out", out)
    assert rc == 0 and err == "" and lines == [f"wrote {out} (400 rows)"]
    counts = {int(r["token_id"]): int(r["count"]) for r in read_csv(out)}
    assert counts[a[0]] == 2 and counts[b[0]] == 1 and sum(counts.values()) == 3
    for args in (["counts", "--bigrams"], ["auroc"]):
        bad = tmp_path / "bigrams.csv"
        rc, lines, err = export(capsys, *args, "--model", small_vocab_ckpt, "--corpus", f,
                                "--out", bad)
        assert rc == 2 and lines == [] and not bad.exists()
        assert err.count("\n") == 1 and "no bigrams (every document is a single token)" in err
    rc, lines, err = export(capsys, "frequency", "--model", small_vocab_ckpt, "--corpus", f,
                            "--out", tmp_path / "f.csv")
    assert rc == 0 and "over 2 tokens" in lines[0]


def test_bad_arguments_exit_2_one_line(small_vocab_ckpt, tiny_ckpt, tmp_path, capsys):
    out = tmp_path / "x.csv"
    cases = [
        (["neighbours", "--model", tiny_ckpt, "--token", " North Korea"], "is 2 tokens"),
        (["neighbours", "--model", tiny_ckpt, "--token", " king", "--minus", " man"],
         "needs both --minus and --plus"),
        (["neighbours", "--model", tiny_ckpt, "--token", " king", "--k", "0"], "--k must be"),
        (["stats", "--model", small_vocab_ckpt, "--head", "4"], "--head 4 is outside 0..3"),
        (["auroc", "--model", small_vocab_ckpt, "--corpus", S, "--head", "9"], "--head 9"),
    ]
    for args, expected in cases:
        rc, lines, err = export(capsys, *args, "--out", out)
        assert rc == 2 and lines == [] and not out.exists(), (args, err)
        assert err.count("\n") == 1 and expected in err, err
    rc, _, err = export(capsys, "stats", "--model", small_vocab_ckpt, "--out", tmp_path / "x.txt")
    assert rc == 2 and "--out must end in .csv" in err


def test_model_without_tokenizer(tmp_path, capsys):
    from detokgui.core.model.sources.demo import write_random_checkpoint

    folder = write_random_checkpoint(tmp_path / "m", vocab_size=50, n_embd=16, n_head=2,
                                     n_positions=16, tokenizer=False)
    capsys.readouterr()
    rc, _, err = export(capsys, "counts", "--model", folder, "--corpus", S, "--out",
                        tmp_path / "c.csv")
    assert rc == 2 and "no tokenizer" in err and err.count("\n") == 1
    rc, _, err = export(capsys, "stats", "--model", folder, "--out", tmp_path / "s.csv")
    assert rc == 0, err
    rows = read_csv(tmp_path / "s.csv")
    assert len(rows) == 100 and rows[0]["query_token"] == ""
