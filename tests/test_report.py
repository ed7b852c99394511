"""`detokgui export report` (issue 45, point 3): the page's parts, its token table against
`export topk`, its size budget, its provenance, and bad input (a folder that is not
writable, an interrupted export: a clear message and nothing written). The page in a real
browser: tests/test_report_browser.py."""

from __future__ import annotations

import base64
import contextlib
import csv
import io
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from detokgui.cli import main as cli_main
from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import Progress
from detokgui.figures.report import (
    CSP,
    DEFAULT_PAGE_MB,
    MIN_TABLE_BYTES,
    PAGE_OVERHEAD_BYTES,
    choose_rows,
    iter_report,
    table_budget,
    table_rows,
    write_report,
)


class Page(HTMLParser):
    """The page's <script> data blocks by id, its tags' attributes, and its <meta>s."""

    def __init__(self, text: str):
        super().__init__()
        self.scripts: dict[str, str] = {}
        self.attrs: list[tuple[str, dict]] = []
        self._in: str | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.attrs.append((tag, a))
        if tag == "script":
            self._in = a.get("id", "")
            self.scripts[self._in] = ""

    def handle_endtag(self, tag):
        if tag == "script":
            self._in = None

    def handle_data(self, data):
        if self._in is not None:
            self.scripts[self._in] += data

    def array(self, name: str, dtype) -> np.ndarray:
        return np.frombuffer(base64.b64decode(self.scripts[name].strip()), dtype=dtype)


def decoded_table(page: Page):
    """(meta, vocabulary, row ids, keys [N, H, k], scores [N, H, k]) as the page's script
    reads them."""
    meta = json.loads(page.scripts["dg-table-meta"])
    vocab = json.loads(page.scripts["dg-vocab"])
    ints = "<u2" if meta["id_bytes"] == 2 else "<u4"
    rows = page.array("dg-rows", ints)
    shape = (rows.size, len(meta["heads"]), meta["k"])
    keys = page.array("dg-keys", ints).reshape(shape)
    scores = page.array("dg-scores", "<f2").astype(np.float64).reshape(shape)
    return meta, vocab, rows, keys, scores


@pytest.fixture(scope="module")
def report(small_vocab_layer, small_corpus, tmp_path_factory):
    """A report of the 400-token model with the small corpus and its figures."""
    out = tmp_path_factory.mktemp("report") / "report.html"
    result = write_report(small_vocab_layer, out, corpus=[small_corpus], k=4)
    return result, out.read_text(encoding="utf-8")


def test_page_is_self_contained(report):
    """No attribute of the page points anywhere but into the page (the SVG namespaces are
    names, not requests), and the CSP refuses every request."""
    result, text = report
    page = Page(text)
    outside = [(tag, k, v) for tag, a in page.attrs for k, v in a.items()
               if k in ("src", "href", "xlink:href", "action", "data", "poster")
               and not (v or "").startswith(("#", "data:"))]
    assert not outside, outside[:5]
    csp = [a["content"] for tag, a in page.attrs
           if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp == [CSP] and "default-src 'none'" in CSP
    assert not re.search(r"url\((?!#|data:)", text)
    assert result.bytes == len(text.encode("utf-8"))


def test_page_parts(report, small_vocab_layer):
    """The model card, a card per head with its class, the figures (the corpus ones
    too) as inline SVG with their captions, and the provenance record in <head>."""
    result, text = report
    layer = small_vocab_layer
    assert f"V = {layer.n_vocab:,} tokens, L = {layer.n_positions} positions" in text
    for h in range(layer.n_heads):
        assert f"id='head-{h}'" in text
    svgs = re.findall(r"<figure id='fig-([\w]+)'><svg", text)
    assert svgs == result.figures and "fig02d_auroc" in svgs and "fig03a_tp" in svgs
    ids = re.findall(r'\bid="([^"]+)"', text)
    assert len(ids) == len(set(ids)), "the inline figures share element ids"
    head = text[: text.index("</head>")]
    record = json.loads(Page(head).scripts["dg-provenance"])
    assert record["analysis"] == "report" and record["model"]["name"] == str(layer.name)
    assert record["model"]["layer0_sha256"] and record["options"]["k"] == 4
    assert record["corpus"]["tokens"] > 0


def test_table_agrees_with_export_topk(report, small_vocab_ckpt, tmp_path):
    """The page's table holds, for its tokens, the keys and scores `export topk` writes."""
    _, text = report
    meta, vocab, rows, keys, scores = decoded_table(Page(text))
    assert meta["k"] == 4 and meta["heads"] == [0, 1, 2, 3]
    assert rows.size == len(vocab)  # 400 tokens fit the default budget: all of them
    out = tmp_path / "topk.csv"
    words = [int(t) for t in rows if re.fullmatch("\u2423?[a-z]{2,}", vocab[t])]
    queries = [words[0], words[len(words) // 2], words[-1]]
    args = ["topk", "--model", str(small_vocab_ckpt), "--k", "4", "--out", str(out)]
    for q in queries:
        args += ["--query", vocab[q].replace("\u2423", " ")]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert cli_main(args) == 0
    row_of = {int(t): r for r, t in enumerate(rows)}
    with open(out, newline="", encoding="utf-8") as f:
        lines = list(csv.DictReader(f))
    assert len(lines) == len(queries) * 4 * 4
    for line in lines:
        r, h, k = row_of[int(line["query_id"])], int(line["head"]), int(line["rank"]) - 1
        assert keys[r, h, k] == int(line["key_id"]), line
        assert scores[r, h, k] == pytest.approx(float(line["score"]), rel=2e-3, abs=1e-3)


def test_budget_picks_the_most_frequent(small_vocab_layer, small_corpus, tmp_path):
    """Under a small budget the table holds the N most frequent tokens of the corpus, and
    the page says so; its size stays within the budget."""
    budget_mb = 0.002
    n = table_rows(small_vocab_layer.n_vocab, small_vocab_layer.n_heads, 3, budget_mb * 1e6)
    assert 1 < n < small_vocab_layer.n_vocab
    out = tmp_path / "small.html"
    result = write_report(small_vocab_layer, out, corpus=[small_corpus], k=3,
                          table_mb=budget_mb, figures=False)
    page = Page(out.read_text(encoding="utf-8"))
    meta, _, rows, keys, _ = decoded_table(page)
    assert rows.size == n == result.table.rows.size and keys.shape == (n, 4, 3)
    assert f"the {n:,} most frequent" in meta["rows_text"]
    stored = sum(len(page.scripts[k].strip()) for k in ("dg-rows", "dg-keys", "dg-scores"))
    assert stored <= budget_mb * 1e6
    from detokgui.core.corpus.counts import corpus_counts

    counts = corpus_counts([str(small_corpus)], small_vocab_layer.tokenizer,
                           small_vocab_layer.n_vocab)
    c = counts.unigrams[rows]
    assert (np.diff(c) <= 0).all() and c.min() >= np.sort(counts.unigrams)[::-1][n - 1]


def test_gpt2_small_budget():
    """GPT-2 small's 12 heads at k = 5 take 322 bytes a token in the page; in the default
    15 MB page, beside the figures (4.97 MB measured without a corpus, 8.64 MB with the
    sample corpus) and the vocabulary (0.54 MB), that is 28,485 or 17,104 of its 50,257
    tokens, the lowest ids without a corpus."""
    vocab = 540_460
    n = [table_rows(50257, 12, 5, table_budget(DEFAULT_PAGE_MB, figures + vocab))
         for figures in (4_968_274, 8_640_493)]
    assert n == [28_485, 17_104]
    assert table_budget(DEFAULT_PAGE_MB, 20_000_000) == MIN_TABLE_BYTES

    class Shape:
        n_vocab = 50257

    rows, text = choose_rows(Shape(), n[0])
    assert (rows == np.arange(n[0])).all() and "lowest token ids" in text
    rows, text = choose_rows(Shape(), 60000)
    assert rows.size == 50257 and text.startswith("all 50,257 tokens")


def test_page_budget_is_kept(tiny_layer, tmp_path):
    """Without --table-mb the table fills what the page's budget leaves: the page stays
    within it, and says why the table holds only some tokens."""
    out = tmp_path / "r.html"
    result = write_report(tiny_layer, out, figures=False, page_mb=1.5)
    meta, vocab, rows, _, _ = decoded_table(Page(out.read_text(encoding="utf-8")))
    assert result.bytes <= 1.5e6 and 1.5e6 - result.bytes < PAGE_OVERHEAD_BYTES + 1000
    assert 0 < rows.size < len(vocab) and "the page's 1.5 MB budget leaves" in meta["rows_text"]


@pytest.fixture
def unwritable_folder(tmp_path):
    """A folder this user cannot create files in: a read-only one, or for root (whom
    permission bits do not stop) /proc/self."""
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        yield folder if not os.access(folder, os.W_OK) else Path("/proc/self")
    finally:
        folder.chmod(0o755)


def test_folder_not_writable(small_vocab_layer, unwritable_folder):
    with pytest.raises(InputError, match="is not writable"):
        write_report(small_vocab_layer, unwritable_folder / "r.html", figures=False)
    assert not (unwritable_folder / "r.html").exists()


def test_folder_not_writable_cli(small_vocab_ckpt, unwritable_folder, capsys):
    """One line, before the model loads."""
    rc = cli_main(["report", "--model", str(small_vocab_ckpt), "--out",
                   str(unwritable_folder / "r.html")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "is not writable" in err[0], err


def test_cli_refuses_bad_output_in_one_line(small_vocab_ckpt, tmp_path, capsys):
    """A folder that does not exist, an output that is not HTML, a folder given as the
    file: one line each, before the model loads, nothing written."""
    (tmp_path / "d.html").mkdir()
    for out, said in [(tmp_path / "missing" / "r.html", "does not exist"),
                      (tmp_path / "r.txt", "must end in .html"),
                      (tmp_path / "d.html", "is a folder")]:
        rc = cli_main(["report", "--model", str(small_vocab_ckpt), "--out", str(out)])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and said in err[0], err
    assert os.listdir(tmp_path) == ["d.html"] and not os.listdir(tmp_path / "d.html")


@pytest.mark.parametrize("when", [0.3, 0.97])
def test_interrupted_export_writes_nothing(small_vocab_layer, tmp_path, when):
    """Ctrl+C during the computation or at its last step (the page built, not yet
    written), or the job closed there (the window's Cancel): no report, no temporary
    file; an existing report is kept as it was (the write itself is atomic:
    core.base.atomic and its tests)."""
    out = tmp_path / "r.html"
    out.write_text("previous report")

    def interrupt(p: Progress):
        if p.fraction >= when:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_report(small_vocab_layer, out, on_progress=interrupt, figures=False)
    assert out.read_text() == "previous report" and os.listdir(tmp_path) == ["r.html"]
    job = iter_report(small_vocab_layer, out, figures=False)
    for p in job:
        if p.fraction >= when:
            job.close()
            break
    assert out.read_text() == "previous report" and os.listdir(tmp_path) == ["r.html"]


def test_cli_writes_the_report(small_vocab_ckpt, tmp_path, capsys):
    out = tmp_path / "r.html"
    rc = cli_main(["report", "--model", str(small_vocab_ckpt), "--model-b",
                   str(small_vocab_ckpt), "--no-figures", "--k", "2", "--out", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert f"wrote {out}" in captured.out and "token table: all 400 tokens" in captured.err
    text = out.read_text(encoding="utf-8")
    assert "Model B" in text and "matched: S 1.000" in text
    record = json.loads(Page(text[: text.index("</head>")]).scripts["dg-provenance"])
    assert record["model_b"]["layer0_sha256"] == record["model"]["layer0_sha256"]


def test_head_cards_name_composition_partners(tmp_path, small_vocab_layer):
    """A two-layer model's head cards list the layer-1 heads each head composes with above
    the random baseline (core.composition's scores); a one-layer model's say why not."""
    from detokgui.core import Layer0
    from detokgui.core.base.progress import run
    from detokgui.core.composition.scores import composition_job
    from detokgui.core.model.sources.demo import write_random_checkpoint

    folder = write_random_checkpoint(tmp_path / "two", n_layer=2, seed=4)
    layer = Layer0.from_pretrained(str(folder), device="cpu")
    out = tmp_path / "r.html"
    write_report(layer, out, figures=False, table_mb=0.05)
    text = out.read_text(encoding="utf-8")
    comp = run(composition_job(layer))
    assert (comp.scores > comp.baseline_hi).any() and "L1H" in text
    for h in range(layer.n_heads):
        card = text[text.index(f"id='head-{h}'"):]
        line = re.search(r"composition partners \(layer-1 head, score\): ([^<]*)<", card)[1]
        for kind, part in zip("QKV", line.split("; "), strict=True):
            row = comp.of(kind)[h]
            above = [g for g in np.argsort(-row)[:3] if row[g] > comp.baseline_hi]
            listed = [int(g) for g in re.findall(r"L1H(\d+)", part)]
            assert part.startswith(f"{kind}: ") and listed == above, (h, part)
    assert f"{comp.baseline_hi:.3f} of random matrices" in text
    one = tmp_path / "one.html"
    write_report(small_vocab_layer, one, figures=False)
    assert "not computed: " in one.read_text(encoding="utf-8")
    assert "has a single layer" in one.read_text(encoding="utf-8")


def absolute_points(d: str) -> list[tuple[str, float, float]]:
    """(command, x, y) of every point of SVG path data with M/L/Q/C/Z in either case (a
    small reader of the SVG path grammar: implicit repeats, relative coordinates)."""
    tokens = re.findall(r"[A-Za-z]|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", d)
    arity = {"m": 1, "l": 1, "q": 2, "c": 3}
    out, x, y, sx, sy, cmd, k = [], 0.0, 0.0, 0.0, 0.0, "", 0
    while k < len(tokens):
        if tokens[k].isalpha():
            cmd = tokens[k]
            k += 1
            if cmd in "zZ":
                x, y = sx, sy
                out.append(("z", x, y))
            continue
        n = arity[cmd.lower()]
        vals = [float(v) for v in tokens[k:k + 2 * n]]
        k += 2 * n
        base = (x, y) if cmd.islower() else (0.0, 0.0)
        for j in range(n):
            out.append((cmd.upper(), base[0] + vals[2 * j], base[1] + vals[2 * j + 1]))
        x, y = out[-1][1], out[-1][2]
        if cmd in "mM":
            sx, sy = x, y
            cmd = "l" if cmd == "m" else "L"  # pairs after a moveto are linetos
    return out


def test_compact_paths_keep_every_point():
    """`compact_path` on a real figure's paths (lines, a band, markers with curves, an
    axis frame): the same commands and points to 0.01 pt, in fewer characters."""
    from matplotlib.figure import Figure

    from detokgui.figures.report import compact_path

    rng = np.random.default_rng(0)
    fig = Figure(figsize=(4, 3))
    ax = fig.subplots()
    x = np.arange(1024)
    y = np.cumsum(rng.normal(size=1024))
    ax.plot(x, y)
    ax.fill_between(x, y - 1, y + 1, alpha=0.3)
    ax.plot(x[::50], y[::50], "o")
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    paths = re.findall(r' d="([^"]*)"', buf.getvalue())
    assert any("C" in p for p in paths) and any("z" in p for p in paths)
    before = after = 0
    for d in paths:
        short = compact_path(d)
        want, got = absolute_points(d), absolute_points(short)
        assert [c for c, *_ in got] == [c for c, *_ in want], d[:80]
        err = max((max(abs(a[1] - b[1]), abs(a[2] - b[2])) for a, b in zip(want, got,
                                                                            strict=True)),
                  default=0.0)
        assert err <= 0.005 + 1e-9, (err, d[:80])
        before, after = before + len(d), after + len(short)
    assert after < 0.6 * before


def test_head_cards_name_the_sink_term(small_vocab_layer, tmp_path):
    """Each card's sink line is core.text_side.sinks' profile of the seeded sequences."""
    from detokgui.core.text_side.sinks import SampleTexts, sinks

    out = tmp_path / "r.html"
    write_report(small_vocab_layer, out, figures=False)
    text = out.read_text(encoding="utf-8")
    profile = sinks(small_vocab_layer, SampleTexts())
    for h in profile.heads:
        card = text[text.index(f"id='head-{h}'"):]
        line = re.search(r"sink: attention to position 0 ([\d.]+) \(uniform ([\d.]+)\); "
                         r"(?:sink term T_(\w+)|no term)", card)
        r = profile.heads.index(h)
        assert float(line[1]) == pytest.approx(profile.head_attention[r], abs=6e-4)
        assert float(line[2]) == pytest.approx(profile.uniform, abs=6e-4)
        if line[3]:
            assert line[3] == profile.sink_term(h)
    assert profile.source in text and "sink term T_" in text


def test_ctrl_c_in_the_cli_writes_nothing(small_vocab_ckpt, small_corpus, tmp_path):
    """Ctrl+C (SIGINT to the process group, as a terminal sends it) while `export report`
    draws its figures: 'interrupted' in one line, exit 130, the previous report kept, no
    temporary file."""
    import signal
    import subprocess
    import sys

    from conftest import SUBPROCESS_ENV

    out = tmp_path / "r.html"
    out.write_text("previous report")
    proc = subprocess.Popen([sys.executable, "-m", "detokgui", "export", "report", "--model",
                             str(small_vocab_ckpt), "--corpus", str(small_corpus), "--out",
                             str(out)], env=SUBPROCESS_ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        lines = []
        while not any("figure" in line for line in lines):
            line = proc.stderr.readline()
            assert line, ("the report ended before Ctrl+C", lines)
            lines.append(line)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "detokgui export report: interrupted", err
    assert "Traceback" not in err
    assert out.read_text() == "previous report" and os.listdir(tmp_path) == ["r.html"]


def test_detokgui_provenance_reads_the_report(report, tmp_path, capsys):
    """`detokgui provenance REPORT.html` prints the page's record; a page without one is
    said to have none (exit 1), a file that is not HTML is refused in one line (exit 2)."""
    from detokgui.app import main as app_main
    from detokgui.core.base.provenance import read_provenance

    result, text = report
    record = read_provenance(result.out)
    assert record == json.loads(Page(text[: text.index("</head>")]).scripts["dg-provenance"])
    assert app_main(["provenance", "--json", str(result.out)]) == 0
    assert json.loads(capsys.readouterr().out) == record
    bare = tmp_path / "bare.html"
    bare.write_text("<!DOCTYPE html><html><head></head><body></body></html>")
    assert app_main(["provenance", str(bare)]) == 1
    assert "no detokgui provenance record" in capsys.readouterr().out
    fake = tmp_path / "fake.html"
    fake.write_bytes(b"\x89PNG\r\n")
    assert app_main(["provenance", str(fake)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not an HTML page" in err[0]
