"""`detokgui export figures --corpus`: the corpus and text figures (Fig 2-C, 2-D, 3-E, 4,
5, 6 left, 11, 13) and the contextual-neuron study are written for a small random
checkpoint with a real BPE tokenizer and the sample corpus; their CSV numbers equal
independent computations (brute-force sigma, scipy's Spearman, the model's own forward
pass); the index names the corpus, the conventions and the text cap; cancelling leaves
nothing behind."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import SAMPLE_CORPUS
from scipy import stats
from test_cli import read_csv, run_cli
from test_export_figures import SUFFIXES, check_files, index_rows

from detokgui.core import Layer0
from detokgui.core.corpus.counts import layer_corpus_counts
from detokgui.core.model.conventions import SigmaChoice
from detokgui.core.position_side.positional import classify_heads
from detokgui.core.text_side.circuits import contextual_circuit, rank_neurons
from detokgui.core.text_side.empirical import (
    TextSource,
    attention_row,
    b3_prediction,
    empirical_attention,
    kl,
    kl_contributions,
)
from detokgui.core.token_side.auroc import bigram_auroc, roc_curve
from detokgui.core.token_side.frequency import frequency_stats
from detokgui.figures import FIGURES, export_figures, figure, iter_export_figures, load_figures

CORPUS_KEYS = ("fig02c_roc", "fig02d_auroc", "fig03e_observed", "fig04_six_terms",
               "fig05_te_frequency", "fig06l_wte_variance", "fig11_te_all_heads",
               "fig13_six_terms_all_heads")
MAX_TEXTS = 12


@pytest.fixture(scope="module")
def layer32(small_vocab_ckpt):
    """The small-vocabulary checkpoint as the CLI loads it (float32)."""
    return Layer0.from_pretrained(str(small_vocab_ckpt), device="cpu")


@pytest.fixture(scope="module")
def corpus_export(small_vocab_ckpt, tmp_path_factory):
    out = tmp_path_factory.mktemp("corpusfigs") / "figures"
    r = run_cli("figures", "--model", str(small_vocab_ckpt), "--device", "cpu", "--out",
                str(out), "--corpus", str(SAMPLE_CORPUS), "--max-texts", str(MAX_TEXTS),
                timeout=600)
    assert r.returncode == 0, r.stderr
    return out, r


@pytest.fixture(scope="module")
def counts(layer32):
    return layer_corpus_counts(layer32, [SAMPLE_CORPUS])


def texts():
    return TextSource.corpus([SAMPLE_CORPUS], max_texts=MAX_TEXTS)


C5 = "study_c5_contextual_neurons"
F2A = "fig02a_topk"
SKIPPED = (C5, F2A)


def test_every_figure_is_written_with_the_corpus(corpus_export, layer32):
    """Every figure, except the contextual-neuron study (B4 finds no contextual head in
    this random checkpoint) and Fig 2-A (none of the paper's words is one token of this
    400-token vocabulary), and the index says why."""
    out, r = corpus_export
    specs = load_figures()
    assert set(CORPUS_KEYS) <= {s.key for s in specs if s.needs_corpus}
    assert all(s.implemented for s in specs)  # nothing is left as a placeholder
    assert "contextual" not in classify_heads(layer32).labels
    built = [s for s in specs if s.key not in SKIPPED]
    for s in built:
        check_files(out, s.key)
    expected = {f"{s.key}.{x}" for s in built for x in (*SUFFIXES, "csv.json")} | {"index.md"}
    assert {p.name for p in out.iterdir()} == expected
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]
    assert f"{len(built)} figures, {len(SKIPPED)} skipped" in r.stdout
    assert "no head of this model is classified contextual" in index_rows(out)[C5][4]
    assert "is one token of this tokenizer" in index_rows(out)[F2A][4]
    for k, s in enumerate(specs, start=1):  # progress on stderr, one line per figure
        assert f"[{k}/{len(specs)}] {s.key}" in r.stderr


def test_index_names_the_corpus_the_conventions_and_the_cap(corpus_export):
    out, _ = corpus_export
    text = (out / "index.md").read_text(encoding="utf-8")
    assert "- corpus: `public-domain-sample.jsonl.gz`" in text
    assert f"read its first {MAX_TEXTS} windows of at most 64 tokens (`--max-texts`)" in text
    rows = index_rows(out)
    for s in load_figures():
        if s.key in SKIPPED:
            continue  # skipped here (see above)
        cells = rows[s.key]  # paper | figure | files | conventions | corpus | notes
        assert cells[0] == s.paper
        assert all(f"[{x}]({s.key}.{x})" in cells[2] for x in SUFFIXES)
        assert cells[3]
        if s.needs_corpus or s.key == "fig03_position_bias":  # Fig 3 gets panel E
            assert cells[4] == "`public-domain-sample.jsonl.gz`", s.key
        else:
            assert cells[4] == "— (weights only)"
    for key in ("fig03e_observed", "fig04_six_terms", "fig13_six_terms_all_heads"):
        assert f"first {MAX_TEXTS} corpus windows (--max-texts)" in rows[key][3], key
    assert "KL(P \\|\\| Q)" in rows["fig04_six_terms"][3]
    assert "E_j[1/σ(e_v+p_j)]" in rows["fig05_te_frequency"][3]
    # 4 heads: the paper's heads 1 and 7 become 1 and 3
    assert rows["fig05_te_frequency"][5].startswith("head 1: ρ = ")
    assert "; head 3: ρ = " in rows["fig05_te_frequency"][5]
    assert rows["fig04_six_terms"][5].startswith("heads 1, 3;")
    assert "E: " in rows["fig03_position_bias"][5]


def test_auroc_figures_are_the_core_numbers(corpus_export, layer32, counts):
    out, _ = corpus_export
    ref = bigram_auroc(layer32, counts, SigmaChoice("mean"), use_cache=False)
    means, used = ref.head_means("skip")
    zero, _ = ref.head_means("zero")
    got = read_csv(out / "fig02d_auroc.csv")
    assert [int(x["head"]) for x in got] == ref.heads
    np.testing.assert_allclose([float(x["mean_auroc"]) for x in got], means, rtol=1e-8)
    np.testing.assert_allclose([float(x["mean_auroc_zero"]) for x in got], zero, rtol=1e-8)
    assert [int(x["tokens"]) for x in got] == used.tolist()
    roc = read_csv(out / "fig02c_roc.csv")
    u = int(roc[0]["query_id"])
    assert ref.positives[u] > 0
    curve = roc_curve(layer32, counts, u, SigmaChoice("mean"), [1, 3])
    for r, h in enumerate(curve.heads):
        pts = [x for x in roc if int(x["head"]) == h]
        np.testing.assert_allclose([float(x["fpr"]) for x in pts], curve.fpr[r], atol=1e-8)
        np.testing.assert_allclose([float(x["tpr"]) for x in pts], curve.tpr[r], atol=1e-8)
        # the curve's area is that token's AUROC of the whole-vocabulary pass
        np.testing.assert_allclose(float(pts[0]["auroc"]), ref.auroc[h, u], rtol=1e-6)


def _brute_t_e(layer, h):
    """b^QK_h e_v^T mean_j 1/sigma(e_v + p_j), sigma from F.layer_norm's definition."""
    E, P = layer.E.double(), layer.P.double()
    x = E[:, None, :] + P[None, :, :]  # [V, L, d]: V = 400, fine here
    sig = torch.sqrt(x.var(-1, unbiased=False) + layer.eps)
    return ((layer.bQK[h].double() @ E.T) * (1 / sig).mean(1)).numpy()


def test_frequency_figures_are_independent_numbers(corpus_export, layer32, counts):
    out, _ = corpus_export
    c = np.asarray(counts.unigrams)
    used = c > 0
    rows = read_csv(out / "fig05_te_frequency.csv")
    for h in (1, 3):
        got = [x for x in rows if int(x["head"]) == h]
        te = _brute_t_e(layer32, h)
        np.testing.assert_allclose([float(x["t_e"]) for x in got], te, rtol=2e-5, atol=1e-6)
        assert [int(x["count"]) for x in got] == c.tolist()
        rho = stats.spearmanr(c[used], te[used]).statistic
        assert float(got[0]["rho"]) == pytest.approx(rho, abs=1e-4)
    fs = frequency_stats(layer32, counts, t_e="paper")
    assert float(rows[0]["rho"]) == pytest.approx(fs.rho_t_e[1], abs=1e-8)
    all_heads = read_csv(out / "fig11_te_all_heads.csv")
    assert {int(x["head"]) for x in all_heads} == {0, 1, 2, 3}
    for h in range(4):
        first = next(x for x in all_heads if int(x["head"]) == h)
        assert float(first["rho"]) == pytest.approx(fs.rho_t_e[h], abs=1e-8)
    var = read_csv(out / "fig06l_wte_variance.csv")
    ref = layer32.E.double().var(-1, unbiased=False).numpy()
    np.testing.assert_allclose([float(x["variance"]) for x in var], ref, rtol=1e-5)
    rho = stats.spearmanr(c[used], ref[used]).statistic
    assert float(var[0]["rho"]) == pytest.approx(rho, abs=1e-4)


def test_observed_attention_is_the_model_attention(corpus_export, layer32):
    out, _ = corpus_export
    rows = read_csv(out / "fig03e_observed.csv")
    i = 31  # the paper's 500 scaled to 64 positions
    assert {int(x["i"]) for x in rows} == {i}
    per_text = np.stack([attention_row(layer32, ids, i)[[1, 3]].double().numpy()
                         for ids, _ in texts().iterate(layer32) if ids.shape[0] > i])
    assert int(rows[0]["windows"]) == per_text.shape[0]
    lo, hi = np.percentile(per_text, [2.5, 97.5], axis=0)
    pred = b3_prediction(layer32, i, [1, 3], "paper")
    emp = empirical_attention(layer32, texts(), i, [1, 3], "paper")
    for r, h in enumerate((1, 3)):
        got = [x for x in rows if int(x["head"]) == h]
        assert [int(x["j"]) for x in got] == list(range(i + 1))
        for col, ref in (("observed_mean", emp.empirical[r]), ("observed_lo", lo[r]),
                         ("observed_hi", hi[r]), ("predicted", pred[r])):
            np.testing.assert_allclose([float(x[col]) for x in got], ref, rtol=1e-6,
                                       atol=1e-9, err_msg=col)


def test_six_term_figures_are_the_kl_contributions(corpus_export, layer32):
    out, _ = corpus_export
    rows = read_csv(out / "fig04_six_terms.csv")
    ref = kl(layer32, texts(), "paper")
    per_text = [kl_contributions(layer32, ids, "paper").double().numpy()
                for ids, _ in texts().iterate(layer32)]
    L = layer32.n_positions
    assert {x["definition"] for x in rows} == {"paper"}
    for h in (1, 3):
        for x_, term in enumerate(ref.terms):
            got = [x for x in rows if int(x["head"]) == h and x["term"] == term]
            reach = [i for i in range(L) if sum(p.shape[-1] > i for p in per_text)]
            assert [int(x["i"]) for x in got] == reach
            np.testing.assert_allclose([float(x["contribution"]) for x in got],
                                       ref.contribution[h, x_, reach], rtol=1e-8)
            for x in got[1:: 7]:
                i = int(x["i"])
                vals = np.array([p[h, x_, i] for p in per_text if p.shape[-1] > i])
                if len(vals) > 1:
                    se = vals.std(ddof=1) / np.sqrt(len(vals))
                    assert float(x["stderr"]) == pytest.approx(se, rel=1e-5, abs=1e-8)
                    assert float(x["ci_hi"]) == pytest.approx(vals.mean() + 1.96 * se,
                                                              rel=1e-5, abs=1e-8)
    all_heads = read_csv(out / "fig13_six_terms_all_heads.csv")
    assert {int(x["head"]) for x in all_heads} == {0, 1, 2, 3}


def test_contextual_neurons_are_the_core_ranking(tiny_layer, tmp_path):
    """The tiny checkpoint has a contextual head (B4): the study's CSV is the ranking of
    the core for the circuit of exactly those heads."""
    labels = classify_heads(tiny_layer).labels
    hs = [h for h, lab in enumerate(labels) if lab == "contextual"]
    assert hs
    report = export_figures(tiny_layer, tmp_path / "o", "png", keys=[C5])
    assert [r.spec.key for r in report.built] == [C5]
    assert f"heads {', '.join(map(str, hs))}" in report.built[0].notes
    ref = rank_neurons(tiny_layer, contextual_circuit(tiny_layer, heads=hs), top=7, k=5)
    rows = read_csv(tmp_path / "o" / f"{C5}.csv")
    assert [int(x["neuron"]) for x in rows] == ref.order.tolist()
    np.testing.assert_allclose([float(x["size"]) for x in rows], ref.size[ref.order], rtol=1e-6)
    shown = [x for x in rows if x["top_tokens"]]
    assert [int(x["neuron"]) for x in shown] == ref.top_neurons.tolist()
    assert all(x["top_tokens"].count("|") == 4 for x in shown)  # five tokens each


def test_corpus_figures_without_a_corpus_are_skipped_with_the_reason(tiny_layer, tmp_path):
    report = export_figures(tiny_layer, tmp_path / "o", "png", keys=list(CORPUS_KEYS))
    assert not report.built
    assert {r.spec.key for r in report.skipped} == set(CORPUS_KEYS)
    rows = index_rows(tmp_path / "o")
    for key in CORPUS_KEYS:
        assert rows[key][4] == "needs a corpus: give --corpus FILE"
        assert rows[key][3] == FIGURES[key].convention.replace("|", "\\|")
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["index.md"]


def test_shared_computations_run_once(layer32, tmp_path, monkeypatch):
    """Fig 4 and 13 share one KL pass; Fig 5, 6 left and 11 one frequency computation."""
    from detokgui.figures import corpus as corpus_figs
    from detokgui.figures import text as text_figs

    calls = []
    real_kl, real_fs = text_figs.iter_kl, corpus_figs.frequency_stats

    def counting_kl(*a, **k):
        calls.append("kl")
        return (yield from real_kl(*a, **k))

    def counting_fs(*a, **k):
        calls.append("frequency")
        return real_fs(*a, **k)

    monkeypatch.setattr(text_figs, "iter_kl", counting_kl)
    monkeypatch.setattr(corpus_figs, "frequency_stats", counting_fs)
    export_figures(layer32, tmp_path / "o", "png", corpus=[SAMPLE_CORPUS], max_texts=3,
                   keys=["fig04_six_terms", "fig13_six_terms_all_heads", "fig05_te_frequency",
                         "fig06l_wte_variance", "fig11_te_all_heads"])
    assert sorted(calls) == ["frequency", "kl"]


def test_bad_max_texts_is_one_line(small_vocab_ckpt, tmp_path, capsys):
    from detokgui import cli

    out = tmp_path / "figs"
    code = cli.main(["figures", "--model", str(small_vocab_ckpt), "--device", "cpu", "--out",
                     str(out), "--max-texts", "0"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "at least 1" in err
    assert not out.exists()


# --------------------------------------------------------------------------- cancelling


@pytest.fixture
def interrupting_figure():
    @figure("zz_interrupt_corpus", paper="test", title="interrupt", convention="none",
            needs_corpus=True)
    def build(ctx):
        raise KeyboardInterrupt

    yield "zz_interrupt_corpus"
    FIGURES.pop("zz_interrupt_corpus")


def test_ctrl_c_after_corpus_figures_leaves_nothing(layer32, tmp_path, interrupting_figure):
    out = tmp_path / "new"
    with pytest.raises(KeyboardInterrupt):
        export_figures(layer32, out, corpus=[SAMPLE_CORPUS], max_texts=2,
                       keys=["fig04_six_terms", "fig05_te_frequency", interrupting_figure])
    assert list(tmp_path.iterdir()) == []


def test_cancelling_inside_a_corpus_figure_leaves_the_folder_as_it_was(layer32, tmp_path):
    """A GUI worker closes the generator while the KL pass reads texts."""
    out = tmp_path / "figs"
    out.mkdir()
    (out / "fig04_six_terms.png").write_bytes(b"old")
    job = iter_export_figures(layer32, out, "png", corpus=[SAMPLE_CORPUS], max_texts=8,
                              keys=["fig06l_wte_variance", "fig04_six_terms"])
    for p in job:
        if "KL contributions" in p.message:
            break
    else:
        pytest.fail("the KL pass reported no progress")
    job.close()
    assert [p.name for p in tmp_path.iterdir()] == ["figs"]
    assert [p.name for p in out.iterdir()] == ["fig04_six_terms.png"]
    assert (out / "fig04_six_terms.png").read_bytes() == b"old"


def test_layer_norm_reference_matches_torch(layer32):
    """The brute-force sigma above is LayerNorm's: checked once against F.layer_norm."""
    x = (layer32.E[:5, None, :] + layer32.P[None, :3, :]).double()
    sig = torch.sqrt(x.var(-1, unbiased=False) + layer32.eps)
    ln = F.layer_norm(x, (layer32.d,), eps=layer32.eps)
    torch.testing.assert_close((x - x.mean(-1, keepdim=True)) / sig[..., None], ln)


def test_png_resolution_and_no_data(tiny_layer, tmp_path):
    import struct

    from detokgui.core.base.errors import InputError
    from detokgui.figures.style import COLUMN_IN

    out = tmp_path / "o"
    report = export_figures(tiny_layer, out, "png", keys=["fig06r_wpe_variance"], dpi=60,
                            data=False)
    assert report.built[0].files == ["fig06r_wpe_variance.png"]
    assert sorted(p.name for p in out.iterdir()) == ["fig06r_wpe_variance.png", "index.md"]
    width = struct.unpack(">I", (out / "fig06r_wpe_variance.png").read_bytes()[16:20])[0]
    assert width == int(0.5 * COLUMN_IN * 60)  # printed width x dpi (matplotlib truncates)
    assert "(no CSV data: `--no-data`)" in (out / "index.md").read_text(encoding="utf-8")
    with pytest.raises(InputError, match="20 to 1200 dpi"):
        export_figures(tiny_layer, tmp_path / "p", "png", dpi=5)
    assert not (tmp_path / "p").exists()


def test_t_e_convention_is_checked(layer32, counts):
    from detokgui.core.base.errors import InputError

    with pytest.raises(InputError, match="t_e must be one of sigma, paper"):
        frequency_stats(layer32, counts, t_e="mean")


def test_control_characters_are_escaped_in_token_labels(layer32):
    """Byte tokens 0x00-0x1f are drawn as \\xNN (the figures' fonts have no glyph for them)."""
    from detokgui.core.model.tokens import display_token

    tok = layer32.tokenizer
    shown = [display_token(tok, t) for t in range(len(tok))]
    assert not [s for s in shown if any(ord(c) < 32 or ord(c) == 127 for c in s)]
    piece = next(t for t in range(len(tok)) if tok.convert_ids_to_tokens(t) == "Ĝ")  # byte 0x1c
    assert display_token(tok, piece) == "\\x1c"


def test_corpus_sample_names_the_shipped_corpus(tiny_ckpt, tmp_path, capsys):
    from detokgui import cli

    out = tmp_path / "figs"
    code = cli.main(["figures", "--model", str(tiny_ckpt), "--device", "cpu", "--out", str(out),
                     "--corpus", "sample", "--format", "png", "--only", "fig06l_wte_variance"])
    assert code == 0, capsys.readouterr().err
    assert index_rows(out)["fig06l_wte_variance"][4] == "`public-domain-sample.jsonl.gz`"
