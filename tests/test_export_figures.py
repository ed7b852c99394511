"""`detokgui export figures`: every registered figure as PNG/SVG/PDF + CSV with an index,
from a random checkpoint and from the trained demo model with the sample corpus; the
figures' data equal the core's numbers; interrupted exports leave nothing behind."""

import itertools
import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import SAMPLE_CORPUS
from test_cli import read_csv, run_cli

from detokgui import cli
from detokgui.core import Layer0
from detokgui.core.model.conventions import SigmaChoice
from detokgui.core.position_side import positional as pos
from detokgui.core.token_side.affinity import topk_keys
from detokgui.figures import (
    FIGURES,
    Drawn,
    FigureContext,
    export_figures,
    figure,
    load_figures,
    style,
)

DEMO = "demo"
CORPUS = SAMPLE_CORPUS
SUFFIXES = ("png", "svg", "pdf", "csv")


def index_rows(folder):
    """{file stem: the index.md table row (a list of cells)} for built and skipped figures."""
    rows = {}
    for line in (folder / "index.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("| ") or line.startswith(("| paper", "| ---")):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        stems = set(re.findall(r"\((\w+)\.png\)", line)) | set(re.findall(r"`(\w+)`", line))
        assert len(stems) == 1, line
        rows[stems.pop()] = cells
    return rows


def check_files(folder, key):
    png, svg, pdf, csv_ = (folder / f"{key}.{s}" for s in SUFFIXES)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", key
    pdf_bytes = pdf.read_bytes()
    assert pdf_bytes.startswith(b"%PDF")
    # fonts embedded as TrueType (Type 42 / CIDFontType2), never Type 3 bitmaps
    assert b"/FontFile2" in pdf_bytes and b"/Type3" not in pdf_bytes, key
    text = svg.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    assert "<text" not in text, key  # text drawn as paths: no font needed to view it
    rows = read_csv(csv_)
    assert rows and all(v != "" for v in rows[0].values()), key


@pytest.fixture(scope="module")
def random_export(tiny_ckpt, tmp_path_factory):
    """The whole export from the tiny random checkpoint, as a user runs it."""
    out = tmp_path_factory.mktemp("figs") / "figures"
    r = run_cli("figures", "--model", str(tiny_ckpt), "--device", "cpu", "--out", str(out),
                timeout=600)
    assert r.returncode == 0, r.stderr
    return out, r


def test_every_weight_figure_is_written_for_a_random_checkpoint(random_export):
    out, r = random_export
    specs = load_figures()
    built = [s for s in specs if s.implemented and not s.needs_corpus]
    assert len(built) >= 15
    for s in built:
        check_files(out, s.key)
    expected = {f"{s.key}.{x}" for s in built for x in (*SUFFIXES, "csv.json")} | {"index.md"}
    assert {p.name for p in out.iterdir()} == expected  # nothing else, no temporary files
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]
    assert f"{len(built)} figures, {len(specs) - len(built)} skipped" in r.stdout
    # progress on stderr: one line per figure
    for k, s in enumerate(specs, start=1):
        assert f"[{k}/{len(specs)}] {s.key}" in r.stderr


def test_index_lists_every_figure_with_its_convention(random_export, tiny_layer):
    out, _ = random_export
    rows = index_rows(out)
    specs = load_figures()
    assert set(rows) == {s.key for s in specs}
    text = (out / "index.md").read_text(encoding="utf-8")
    assert f"V = {tiny_layer.n_vocab}, L = {tiny_layer.n_positions}" in text
    assert "- corpus: none" in text
    for s in specs:
        cells = rows[s.key]
        assert cells[0] == s.paper.replace("|", "\\|")
        if s.implemented and not s.needs_corpus:  # paper | figure | files | conventions | corpus
            assert all(f"[{x}]({s.key}.{x})" in cells[2] for x in SUFFIXES)
            assert cells[3], s.key
            assert cells[4] == "— (weights only)"
        else:  # paper | figure | stem | conventions | reason
            assert cells[3] == s.convention.replace("|", "\\|")
            assert ("needs a corpus" in cells[4]) if s.needs_corpus else ("not in this" in cells[4])
    paper_position = rows["fig03b_tpp"]
    assert "paper convention" in paper_position[3] and "95% percentile" in paper_position[3]
    assert "i = 62 (the paper's 500 scaled to 128 positions)" in paper_position[5]
    # this checkpoint has 4 heads: the paper's heads 1 and 7 become 1 and 3
    assert rows["fig03_position_bias"][5].startswith("heads 1, 3")


def test_figure_data_are_the_core_numbers(random_export, tiny_layer):
    out, _ = random_export
    i = 62
    rows = read_csv(out / "fig03_position_bias.csv")
    assert {r["convention"] for r in rows} == {"paper"}
    assert {r["sigma_i"] for r in rows} == {"mean", "max", "min"}
    for kind in ("mean", "max"):
        b = pos.positional_bias(tiny_layer, i, kind, [1, 3], convention="paper", bands=True)
        for r, h in enumerate(b.heads):
            got = [x for x in rows if x["sigma_i"] == kind and int(x["head"]) == h]
            assert [int(x["j"]) for x in got] == list(range(i + 1))
            for col in ("t_pp", "t_pp_lo", "t_pp_hi", "t_p", "total_lo", "softmax"):
                np.testing.assert_allclose([float(x[col]) for x in got], getattr(b, col)[r],
                                           rtol=1e-6, atol=1e-9)
    top = read_csv(out / "fig02a_topk.csv")
    q = tiny_layer.tokenizer.encode("iens")[-1]
    ref = topk_keys(tiny_layer, q, 5, SigmaChoice("mean"), [2, 3])
    for r, h in enumerate(ref.heads):
        got = [x for x in top if int(x["query_id"]) == q and int(x["head"]) == h]
        assert [int(x["key_id"]) for x in got] == ref.ids[r].tolist()
    var = read_csv(out / "fig06r_wpe_variance.csv")
    np.testing.assert_allclose([float(x["variance"]) for x in var],
                               pos.position_variance(tiny_layer), rtol=1e-6)
    pattern = read_csv(out / "study_b4_positional_patterns.csv")
    classes = pos.classify_heads(tiny_layer)
    assert {int(x["head"]): x["label"] for x in pattern} == dict(enumerate(classes.labels))


def test_demo_model_with_the_sample_corpus(tmp_path):
    """The trained demo model with the corpus: every figure but Fig 2-D, which needs a
    whole-vocabulary AUROC pass (V^2 = 2.5e9 scores per head, minutes on a CPU; it is
    tested on a small vocabulary in test_corpus_figures), the corpus named in the index."""
    out = tmp_path / "demo"
    layer = Layer0.from_pretrained(str(DEMO), device="cpu")
    seen = []
    keys = [s.key for s in load_figures() if s.key != "fig02d_auroc"]
    report = export_figures(layer, out, "png", corpus=[CORPUS], on_progress=seen.append,
                            keys=keys, max_texts=16)
    assert seen[-1].fraction == 1.0
    assert all(a.fraction <= b.fraction for a, b in itertools.pairwise(seen))
    for rec in report.built:
        assert rec.files == [f"{rec.spec.key}.{x}" for x in ("png", "csv", "csv.json")]
        for f in rec.files:
            assert (out / f).stat().st_size > 0
    assert {r.spec.key for r in report.built} >= {"fig03_position_bias", "fig09_tpp_all_heads",
                                                 "study_b4_positional_patterns"}
    assert not report.skipped
    assert [r.spec.key for r in report.built] == keys
    text = (out / "index.md").read_text(encoding="utf-8")
    assert "- corpus: `public-domain-sample.jsonl.gz`" in text
    rows = index_rows(out)
    assert "0: contextual" in rows["study_b4_positional_patterns"][5]
    assert "7: detokenization" in rows["study_b4_positional_patterns"][5]
    # the paper's heads exist in the demo model (8 heads): used as they are
    assert rows["fig02a_topk"][5] == "heads 4, 7"
    assert rows["fig05_te_frequency"][5].startswith("head 1: ρ = ")
    assert "i = 62 (the paper's 500 scaled to 128 positions)" in rows["fig03e_observed"][5]
    assert "heads 0, 1, 3, 4" in rows["study_c5_contextual_neurons"][5]


# --------------------------------------------------------------------------- writing


@pytest.fixture
def interrupting_figure():
    """A registered figure that raises KeyboardInterrupt (Ctrl+C) while it is drawn."""

    @figure("zz_interrupt", paper="test", title="interrupt", convention="none")
    def build(ctx):
        raise KeyboardInterrupt

    yield "zz_interrupt"
    FIGURES.pop("zz_interrupt")


def test_ctrl_c_leaves_no_new_folder(tiny_layer, tmp_path, interrupting_figure):
    out = tmp_path / "new"
    with pytest.raises(KeyboardInterrupt):
        export_figures(tiny_layer, out, keys=["fig06r_wpe_variance", interrupting_figure])
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_leaves_an_existing_folder_as_it_was(tiny_layer, tmp_path, interrupting_figure):
    out = tmp_path / "figs"
    out.mkdir()
    (out / "fig06r_wpe_variance.png").write_bytes(b"old")
    (out / "notes.txt").write_text("mine")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(KeyboardInterrupt):
        export_figures(tiny_layer, out, keys=["fig06r_wpe_variance", interrupting_figure])
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["figs"]


def test_reexport_replaces_figures_and_keeps_other_files(tiny_layer, tmp_path):
    out = tmp_path / "figs"
    out.mkdir()
    (out / "fig02c_roc.png").write_bytes(b"stale")  # a figure this export skips
    (out / "fig06r_wpe_variance.png").write_bytes(b"old")
    (out / "notes.txt").write_text("mine")
    report = export_figures(tiny_layer, out, "png", keys=["fig06r_wpe_variance", "fig02c_roc"])
    assert [r.spec.key for r in report.built] == ["fig06r_wpe_variance"]
    names = {p.name for p in out.iterdir()}
    assert names == {"fig06r_wpe_variance.png", "fig06r_wpe_variance.csv",
                     "fig06r_wpe_variance.csv.json", "index.md", "notes.txt"}
    assert (out / "fig06r_wpe_variance.png").read_bytes()[:4] == b"\x89PNG"
    assert [p.name for p in tmp_path.iterdir()] == ["figs"]


def test_cancelling_the_generator_cleans_up(tiny_layer, tmp_path):
    """A GUI worker stops a job by closing the generator between two progress reports."""
    from detokgui.figures import iter_export_figures

    out = tmp_path / "x"
    job = iter_export_figures(tiny_layer, out, "png", keys=["fig06r_wpe_variance", "fig07_raw_tpp_last"])
    next(job)
    next(job)
    job.close()
    assert list(tmp_path.iterdir()) == []


def test_a_builder_may_skip_itself(tiny_layer, tmp_path):
    from detokgui.figures import FigureSkipped

    @figure("zz_skip", paper="test", title="t", convention="c")
    def build(ctx):
        raise FigureSkipped("no tokenizer here")

    try:
        report = export_figures(tiny_layer, tmp_path / "o", "png", keys=["zz_skip"])
    finally:
        FIGURES.pop("zz_skip")
    assert report.skipped[0].skipped == "no tokenizer here"
    assert "| no tokenizer here |" in (tmp_path / "o" / "index.md").read_text()


def test_generator_builders_report_progress_and_share_results(tiny_layer, tmp_path):
    from detokgui.core.base.progress import Progress

    calls = []

    def job():
        calls.append(1)
        yield Progress(0.5, "half way")
        return 42

    def build(ctx):
        a = yield from ctx.memo("shared", job)
        b = yield from ctx.memo("shared", job)
        fig, _ = style.new_figure(1.0, 1.0)
        return Drawn(fig, (["a", "b"], [(a, b)]))

    figure("zz_gen1", paper="t", title="t", convention="c")(build)
    figure("zz_gen2", paper="t", title="t", convention="c")(build)
    seen = []
    try:
        export_figures(tiny_layer, tmp_path / "o", "svg", keys=["zz_gen1", "zz_gen2"],
                       on_progress=seen.append)
    finally:
        FIGURES.pop("zz_gen1")
        FIGURES.pop("zz_gen2")
    assert calls == [1]  # computed once per export
    assert [p.fraction for p in seen if p.message == "half way"] == [0.25]
    assert read_csv(tmp_path / "o" / "zz_gen2.csv") == [{"a": "42", "b": "42"}]


# --------------------------------------------------------------------------- pieces


def test_paper_heads_and_positions(tiny_layer):
    ctx = FigureContext(tiny_layer)  # 4 heads, 128 positions
    assert ctx.paper_heads((1, 7)) == [1, 3]
    assert ctx.paper_heads((4, 7)) == [2, 3]
    assert ctx.paper_heads((0,)) == [0]
    assert [ctx.paper_position(p) for p in (50, 500, 1000)] == [6, 62, 124]
    assert FigureContext(tiny_layer, heads=(2,)).paper_heads((1, 7)) == [2]


def test_footer_wraps_to_the_figure_width():
    lines = style.wrap_parts(["detokgui", "a" * 30, "b" * 30, "word " * 40], 1.5)
    assert len(lines) >= 3
    assert all(style.text_width_in(x, style.FOOTER_PT) <= 1.45 for x in lines)


@pytest.mark.parametrize("args, message", [
    (["--format", "gif"], "Unknown figure format 'gif'"),
    (["--corpus", "/nonexistent/corpus.txt"], "corpus file /nonexistent/corpus.txt does not exist"),
    (["--only", "fig99"], "Unknown figure 'fig99'"),
    (["--heads", "9"], "Head 9 is outside 0..3"),
])
def test_bad_arguments_are_one_line(tiny_ckpt, tmp_path, capsys, args, message):
    out = tmp_path / "figs"
    code = cli.main(["figures", "--model", str(tiny_ckpt), "--device", "cpu", "--out", str(out),
                     *args])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert not out.exists()


def test_out_must_be_a_folder(tiny_ckpt, tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    code = cli.main(["figures", "--model", str(tiny_ckpt), "--out", str(f)])
    assert code == 2 and "is not a folder" in capsys.readouterr().err
    assert f.read_text() == "x"


def test_figures_never_import_qt():
    code = ("import sys, detokgui.figures as f; f.load_figures(); "
            "import detokgui.cli.figures; "
            "sys.exit(any(m.startswith(('PySide6', 'pyqtgraph')) for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_fig2a_leaves_out_words_that_are_not_one_token(small_vocab_ckpt, tmp_path):
    """Another tokenizer may split the paper's words: such a word is left out and the
    index says so, never ranked as its last piece."""
    from detokgui.core import Layer0
    from detokgui.core.base.errors import InputError
    from detokgui.core.model.tokens import resolve_token
    from detokgui.figures.export import export_figures
    from detokgui.figures.paper import TOPK_WORDS

    layer = Layer0.from_pretrained(str(small_vocab_ckpt), device="cpu")
    split = []
    for w in TOPK_WORDS:
        try:
            resolve_token(layer.tokenizer, w)
        except InputError:
            split.append(w)
    assert split, "the 400-token vocabulary should split at least one of the words"
    report = export_figures(layer, tmp_path, "png", keys=["fig02a_topk"], dpi=40)
    (rec,) = report.records
    if len(split) == len(TOPK_WORDS):
        assert "is one token" in rec.skipped
    else:
        assert not rec.skipped and all(repr(w) in rec.notes for w in split)
        kept = {r["query_token"] for r in read_csv(tmp_path / "fig02a_topk.csv")}
        assert len(kept) == len(TOPK_WORDS) - len(split)
