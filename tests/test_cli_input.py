"""How texts and option values reach `detokgui export`: files, standard input, several
anchors, both top-k directions, and checks that fail before the model loads."""

import csv
import subprocess
import sys

import pytest
import torch
from approx import assert_rows_close
from conftest import SUBPROCESS_ENV
from test_cli import read_csv, run_cli
from test_cli_tokens import brute_force_tee

from detokgui import cli
from detokgui.core.token_side.affinity import MAX_HEATMAP_TOKENS


def test_text_from_file_and_stdin_equal_text_argument(tiny_ckpt, tmp_path):
    text = " North Korea is in Asia.\nSeoul is in the South."
    (tmp_path / "in.txt").write_text(text, encoding="utf-8")
    outs = []
    for source, stdin in ((["--text", text], None), (["--text-file", str(tmp_path / "in.txt")],
                                                     None),
                          (["--text", "-"], text), (["--text-file", "-"], text)):
        out = tmp_path / f"terms{len(outs)}.csv"
        r = run_cli("terms", "--model", str(tiny_ckpt), *source, "--out", str(out), input=stdin)
        assert r.returncode == 0, r.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] == outs[2] == outs[3]


def test_heatmap_tokens_file(tiny_ckpt, tiny_layer, tmp_path):
    text = " North Korea and South Korea"
    (tmp_path / "t.txt").write_text(text, encoding="utf-8")
    r = run_cli("heatmap", "--model", str(tiny_ckpt), "--tokens-file", str(tmp_path / "t.txt"),
                "--out", str(tmp_path / "hm.csv"))
    assert r.returncode == 0, r.stderr
    n = len(tiny_layer.tokenizer.encode(text))
    rows = read_csv(tmp_path / "hm.csv")
    assert len(rows) == n * n
    assert rows[0]["query_token"] == " North" and "\u2423" not in "".join(
        r["key_token"] for r in rows)


def test_topk_queries_for_a_key_matches_brute_force(tiny_ckpt, tiny_layer, tmp_path):
    out = tmp_path / "q.csv"
    r = run_cli("topk", "--model", str(tiny_ckpt), "--direction", "queries", "--key", " North",
                "--k", "5", "--out", str(out))
    assert r.returncode == 0, r.stderr
    rows = read_csv(out)
    assert list(rows[0]) == ["key_id", "key_token", "head", "rank", "query_id", "query_token",
                             "score"]
    v = tiny_layer.tokenizer.encode(" North")[0]
    scores = brute_force_tee(tiny_ckpt, v=v)
    for h in range(scores.shape[0]):
        mine = [r for r in rows if int(r["head"]) == h]
        vals, ids = torch.topk(scores[h], 5)
        assert [int(r["query_id"]) for r in mine] == ids.tolist()
        assert all(int(r["key_id"]) == v and r["key_token"] == " North" for r in mine)
        for r_, val in zip(mine, vals.tolist()):
            assert abs(float(r_["score"]) - val) < 1e-4 * max(1, abs(val))


def test_several_queries_in_one_call(tiny_ckpt, tiny_layer, tmp_path):
    tok = tiny_layer.tokenizer
    single = {}
    for q in (" Korea", " North", "\n"):
        out = tmp_path / f"one{len(single)}.csv"
        r = run_cli("topk", "--model", str(tiny_ckpt), "--query", q, "--k", "3", "--out",
                    str(out))
        assert r.returncode == 0, r.stderr
        single[tok.encode(q)[-1]] = read_csv(out)
    both = tmp_path / "both.csv"
    r = run_cli("topk", "--model", str(tiny_ckpt), "--query", " Korea", "--query", " North",
                "--query", "\n", "--k", "3", "--out", str(both))
    assert r.returncode == 0, r.stderr
    (tmp_path / "queries.txt").write_text(" Korea\n North\n\n", encoding="utf-8")
    from_file = tmp_path / "file.csv"
    r = run_cli("topk", "--model", str(tiny_ckpt), "--queries-file", str(tmp_path / "queries.txt"),
                "--k", "3", "--out", str(from_file))
    assert r.returncode == 0, r.stderr
    # one call and three calls may round differently (another batch shape): scores within
    # float32 tolerance, ids and ranks exactly up to ties
    ranked = ("score", "rank", ("key_id", "key_token"))
    rows = read_csv(both)
    assert_rows_close(rows, [row for rows_ in single.values() for row in rows_], ["score"],
                      ranked=ranked)
    # the file has one query per line: the newline query cannot be one of its lines
    assert_rows_close(read_csv(from_file),
                      [row for q, rs in single.items() if q != 198 for row in rs], ["score"],
                      ranked=ranked)
    # the newline token is written as a real newline, quoted by the csv module
    with open(both, newline="", encoding="utf-8") as f:
        newline_rows = [r for r in csv.reader(f) if r[0] == "198"]
    assert newline_rows and all(r[1] == "\n" for r in newline_rows)


def test_heatmap_token_cap(tiny_ckpt, tmp_path):
    text = " a" * (MAX_HEATMAP_TOKENS + 1)
    out = tmp_path / "big.csv"
    r = run_cli("heatmap", "--model", str(tiny_ckpt), "--tokens", text, "--out", str(out))
    assert r.returncode == 2 and f"at most {MAX_HEATMAP_TOKENS}" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not out.exists()


def test_non_utf8_text_argument_is_refused(tiny_ckpt, tmp_path):
    out = tmp_path / "x.csv"
    r = subprocess.run([sys.executable.encode(), b"-m", b"detokgui", b"export", b"terms",
                        b"--model", str(tiny_ckpt).encode(), b"--text", b"caf\xe9 \xff",
                        b"--out", str(out).encode()],
                       check=False, capture_output=True, timeout=300, env=SUBPROCESS_ENV)
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 2 and "not valid UTF-8" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


@pytest.fixture
def no_model_load(monkeypatch):
    """Fail the test if the command gets as far as loading the model."""

    def refuse(args):
        raise AssertionError("the model was loaded before the bad option was noticed")

    monkeypatch.setattr(cli, "load_layer", refuse)


@pytest.mark.parametrize("args, message", [
    (["bias", "--position", "128"], "outside 0..127"),
    (["bias", "--position", "-1"], "outside 0..127"),
    (["topk", "--query", "x", "--k", "0"], "--k must be at least 1"),
    (["topk", "--query", "x", "--head", "4"], "--head 4 is outside 0..3"),
    (["topk", "--key", "x"], "give it with --query"),
    (["topk", "--direction", "queries", "--query", "x"], "give it with --key"),
    (["heatmap", "--tokens", "x", "--head", "-1"], "--head -1 is outside"),
    (["heatmap", "--tokens", "   "], "empty"),
    (["terms", "--text", "caf\udce9"],
     "error: The text of --text is not valid UTF-8 (at character 4); give the text in UTF-8."),
    (["terms", "--text-file", "/nonexistent/text.txt"], "cannot read /nonexistent/text.txt"),
    (["topk", "--queries-file", "/nonexistent/q.txt"], "cannot read"),
    (["terms", "--text", "x", "--out", "nowhere/x.csv"], "does not exist"),
])
def test_bad_options_fail_before_the_model_loads(tiny_ckpt, tmp_path, capsys, no_model_load,
                                                 args, message):
    argv = [*args, "--model", str(tiny_ckpt)]
    if "--out" not in argv:
        argv += ["--out", str(tmp_path / "x.csv")]
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1


def test_non_utf8_text_file_fails_before_load(tiny_ckpt, tmp_path, capsys, no_model_load):
    (tmp_path / "latin1.txt").write_bytes("café".encode("latin-1"))
    code = cli.main(["terms", "--model", str(tiny_ckpt), "--text-file",
                     str(tmp_path / "latin1.txt"), "--out", str(tmp_path / "x.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "is not UTF-8 text" in err
