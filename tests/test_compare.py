"""Model comparison (issue 20): the token mapping of a Pair, the head matching, the per-head
metrics against the analyses they are read from, the library functions, `export compare`
and the comparison figure of `export figures --compare`."""

import csv
import gzip
import json
import shutil

import numpy as np
import pytest
import torch

import detokgui as dg
from detokgui.core import Layer0
from detokgui.core.affinity import random_token_sample, topk_keys
from detokgui.core.auroc import bigram_row_sample, iter_sampled_auroc, roc_curve
from detokgui.core.compare import Pair, iter_match_heads, match_heads, metric_pairs
from detokgui.core.corpus import layer_corpus_counts
from detokgui.core.demo import demo_model_folder, sample_corpus, write_random_checkpoint
from detokgui.core.frequency import frequency_stats
from detokgui.core.head_metrics import HEAD_CLASS_CODES, HEAD_METRICS, iter_head_metrics
from detokgui.core.positional import HEAD_LABELS, positional_pattern
from detokgui.core.progress import Progress, run
from detokgui.core.tokens import token_string
from detokgui.core.vocab_pass import iter_vocab_pass

Q = 48  # sampled query tokens: enough to tell heads apart, quick on two cores


@pytest.fixture(scope="module")
def demo():
    return Layer0.from_pretrained("demo", device="cpu")


@pytest.fixture(scope="module")
def demo2():
    """The demo model loaded a second time: another object, the same weights."""
    return Layer0.from_pretrained("demo", device="cpu")


@pytest.fixture(scope="module")
def counts(demo):
    return layer_corpus_counts(demo, [sample_corpus()])


# --------------------------------------------------------------------------- a model against itself


def test_a_model_against_itself(demo, demo2, counts):
    pair = Pair(demo, demo2)
    assert pair.same_tokenizer
    assert pair.token_in_b(11) == 11 and pair.token_in_a(50256) == 50256
    m = match_heads(pair, n_queries=Q)
    H = demo.n_heads
    assert m.assignment == [(h, h) for h in range(H)]
    for arr in (m.similarity, m.positional, m.affinity):
        assert arr.shape == (H, H)
        assert ((arr >= 0) & (arr <= 1)).all()
        np.testing.assert_allclose(np.diag(arr), 1.0, atol=1e-6)
    off = m.similarity[~np.eye(H, dtype=bool)]
    assert off.max() < 0.9  # the heads of the demo model differ
    assert [m.match_of_a(h) for h in range(H)] == list(range(H))
    assert [m.match_of_b(h) for h in range(H)] == list(range(H))
    counts2 = layer_corpus_counts(demo2, [sample_corpus()])
    ma = run(iter_head_metrics(demo, counts=counts, n_queries=Q))
    mb = run(iter_head_metrics(demo2, counts=counts2, n_queries=Q))
    rows = metric_pairs(m, ma, mb)
    assert len(rows) == H * len(HEAD_METRICS)
    assert {r[2] for r in rows} == set(HEAD_METRICS)
    for a, b, metric, va, vb, diff in rows:
        assert np.isfinite(va), metric  # every metric has a value with a corpus
        assert diff == 0.0 and va == vb, (a, b, metric)


def permuted_demo(folder, perm):
    """The demo model with layer 0's heads permuted: new head i is old head perm[i]
    (c_attn's q, k and v columns and c_proj's rows moved together); its forward pass
    equals the original's."""
    from transformers import GPT2LMHeadModel

    src = demo_model_folder()
    model = GPT2LMHeadModel.from_pretrained(str(src), attn_implementation="eager").eval()
    ref = GPT2LMHeadModel.from_pretrained(str(src), attn_implementation="eager").eval()
    d, H = model.config.n_embd, model.config.n_head
    dh = d // H
    cols = torch.tensor([p * dh + c for p in perm for c in range(dh)])
    attn = model.transformer.h[0].attn
    with torch.no_grad():
        w, b = attn.c_attn.weight, attn.c_attn.bias  # [d, 3d], [3d]: q | k | v
        for part in range(3):
            idx = part * d + cols
            w[:, part * d : (part + 1) * d] = w[:, idx].clone()
            b[part * d : (part + 1) * d] = b[idx].clone()
        attn.c_proj.weight.copy_(attn.c_proj.weight[cols].clone())  # rows: the heads' outputs
        ids = torch.tensor([[464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13]])
        out, want = model(ids, output_attentions=True), ref(ids, output_attentions=True)
    torch.testing.assert_close(out.logits, want.logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out.attentions[0][0], want.attentions[0][0][perm])
    model.save_pretrained(folder, safe_serialization=True)
    for f in ("vocab.json", "merges.txt", "tokenizer_config.json"):
        shutil.copy(src / f, folder / f)
    return folder


def test_the_matching_recovers_a_head_permutation(demo, tmp_path):
    perm = [3, 7, 0, 5, 1, 6, 2, 4]
    permuted = Layer0.from_pretrained(str(permuted_demo(tmp_path / "perm", perm)), device="cpu")
    m = match_heads(Pair(demo, permuted), n_queries=Q)
    assert m.assignment == sorted((perm[i], i) for i in range(len(perm)))
    for i, p in enumerate(perm):
        assert m.similarity[p, i] == pytest.approx(1.0, abs=1e-5)
    seen = []
    m2 = run(iter_match_heads(Pair(permuted, demo), n_queries=Q), seen.append)
    assert m2.assignment == [(i, perm[i]) for i in range(len(perm))]
    assert seen and all(isinstance(p, Progress) for p in seen)


def test_a_job_stops_at_a_yield(demo2):
    job = iter_match_heads(Pair(demo2, demo2), n_queries=Q, seed=5)
    next(job)
    job.close()  # cancelled: nothing kept
    again = run(iter_match_heads(Pair(demo2, demo2), n_queries=Q, seed=5))
    assert again.assignment == [(h, h) for h in range(demo2.n_heads)]


# --------------------------------------------------------------------------- other shapes, other tokenizers


def test_different_heads_and_context_lengths(demo, tmp_path):
    other = Layer0.from_pretrained(str(write_random_checkpoint(
        tmp_path / "r", n_embd=48, n_head=3, n_positions=40, seed=4)), device="cpu")
    for pair, shape in ((Pair(other, demo), (3, 8)), (Pair(demo, other), (8, 3))):
        m = match_heads(pair, n_queries=Q)
        assert m.similarity.shape == shape
        assert m.n == 39  # the shorter context's last position
        assert m.pattern_a.shape[1] == m.pattern_b.shape[1] == 40
        assert len(m.assignment) == 3
        assert len({a for a, _ in m.assignment}) == len({b for _, b in m.assignment}) == 3
        assert ((m.similarity >= 0) & (m.similarity <= 1 + 1e-12)).all()
    # A (the demo) has 8 heads, B 3: five of A's heads have no match
    assert sum(m.match_of_a(h) is None for h in range(8)) == 5
    assert all(m.match_of_b(h) is not None for h in range(3))
    sw = m.swapped()
    assert sw.similarity.shape == (3, 8)
    assert all(sw.match_of_a(b) == a for a, b in m.assignment)


def small_bpe_tokenizer(folder):
    """A byte-level BPE of 400 tokens trained on the sample corpus: a vocabulary that
    differs from GPT-2's (other ids, far fewer tokens, '</s>' as its special)."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    with gzip.open(sample_corpus(), "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"][:2000] for _, line in zip(range(300), f)]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=400, min_frequency=2, special_tokens=["</s>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="</s>",
                                  bos_token="</s>")
    tok.save_pretrained(folder)
    return tok


def test_an_opt_model_with_another_tokenizer(demo, tmp_path):
    from family_models import write

    folder = tmp_path / "opt"
    folder.mkdir()
    tok = small_bpe_tokenizer(folder)
    write(folder, "opt", tokenizer=False, vocab_size=len(tok) + 8)
    small_bpe_tokenizer(folder)
    opt = Layer0.from_pretrained(str(folder), device="cpu")
    assert opt.family == "opt" and opt.n_vocab == len(tok)
    pair = Pair(opt, demo)
    assert not pair.same_tokenizer
    gpt2 = demo.tokenizer
    korea = gpt2.encode(" Korea")[0]
    assert pair.token_in_a(korea) is None  # GPT-2's ' Korea' is missing from the small BPE
    assert pair.token_in_a(gpt2.convert_tokens_to_ids("<|endoftext|>")) is None
    assert pair.token_in_b(tok.convert_tokens_to_ids("</s>")) is None
    the = tok.convert_tokens_to_ids("Ġthe")
    assert pair.token_in_b(the) == gpt2.encode(" the")[0]
    shared = [i for i in range(opt.n_vocab) if pair.token_in_b(i) is not None]
    assert 100 < len(shared) < opt.n_vocab
    for i in shared:
        assert token_string(tok, i) == token_string(gpt2, pair.token_in_b(i))
    sample = pair.shared_query_sample(32, seed=1)
    assert sample == pair.shared_query_sample(32, seed=1)
    assert len(sample.a) == len(sample.b) == 32
    assert [pair.token_in_b(a) for a in sample.a] == sample.b
    m = match_heads(pair, n_queries=32, seed=1)
    assert m.similarity.shape == (5, 8) and len(m.assignment) == 5
    assert m.n == min(opt.n_positions, demo.n_positions) - 1
    assert ((m.affinity >= 0) & (m.affinity <= 1)).all()


def test_top_keys_of_a_sample_equal_the_top_k_view(demo):
    from detokgui.core.affinity import iter_topk_keys_of

    tokens = random_token_sample(demo, 6, seed=3)
    top = run(iter_topk_keys_of(demo, tokens, 10, chunk_rows=4))
    for s, u in enumerate(tokens):
        ref = topk_keys(demo, u, 12)  # two more: keys tied with the 10th may swap in
        for h in range(demo.n_heads):
            ids, scores = ref.ids[h].tolist(), ref.scores[h].tolist()
            swapped = set(top[h, s]) ^ set(ids[:10])
            tenth = scores[9]
            assert all(k in ids and abs(scores[ids.index(k)] - tenth) <= 1e-5 * max(1.0, abs(tenth))
                       for k in swapped), (u, h, swapped)


# --------------------------------------------------------------------------- head metrics


def test_head_metrics_equal_the_analyses(demo, counts):
    m = run(iter_head_metrics(demo, counts=counts, n_queries=Q, seed=2))
    H, n = demo.n_heads, min(399, demo.n_positions - 1)
    assert list(m) == list(HEAD_METRICS) and all(v.shape == (H,) for v in m.values())
    # the B4 pattern view, token by token (key sigma = vocabulary mean)
    tokens = random_token_sample(demo, Q, 2)
    pats = np.mean([positional_pattern(demo, u, n, convention="mean-sigma").pattern
                    for u in tokens], axis=0)
    np.testing.assert_allclose(m["prev_token_mass"], pats[:, n - 1], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(m["recent4_mass"], pats[:, n - 3 :].sum(1), rtol=1e-5)
    assert m["prev_token_mass"].argmax() == 7  # the demo's previous-token head
    assert [HEAD_LABELS[int(c)] for c in m["head_class"]] == m.labels
    assert HEAD_CLASS_CODES[m.labels[7]] == m["head_class"][7]
    # self-ranks of the whole-vocabulary pass (A4), at the sampled rows
    st = run(iter_vocab_pass(demo, rows=tokens)).stats
    lower_median = np.sort(st.self_rank[:, tokens], axis=1)[:, (Q - 1) // 2]
    np.testing.assert_allclose(m["median_self_rank"], lower_median, rtol=1e-3)
    # Spearman rho(T_e, count) of the frequency view (A6)
    np.testing.assert_allclose(m["spearman_te_count"], frequency_stats(demo, counts).rho_t_e)
    np.testing.assert_allclose(m["bqk_norm"], demo.bQK.norm(dim=1).numpy(), rtol=1e-6)
    # the sampled AUROC: each row as the one-token ROC (A5), the mean over the sample
    rows = bigram_row_sample(counts, Q, 2)
    assert len(rows) == Q and (np.diff(counts.by_next().indptr)[rows] > 0).all()
    res = run(iter_sampled_auroc(demo, counts, Q, 2))
    visited = np.isfinite(res.auroc).any(0)
    assert set(np.flatnonzero(visited)) <= set(rows.tolist())
    ref = np.array([roc_curve(demo, counts, int(u)).auroc for u in rows]).T  # [H, Q]
    # two paths to the float32 scores: keys whose scores tie within rounding may swap
    np.testing.assert_allclose(res.auroc[:, rows], ref, atol=1e-4)
    np.testing.assert_allclose(m["mean_bigram_auroc"], np.nanmean(ref, axis=1), atol=1e-5)


def test_head_metrics_without_a_corpus(demo):
    m = run(iter_head_metrics(demo, n_queries=16))
    assert np.isnan(m["mean_bigram_auroc"]).all() and np.isnan(m["spearman_te_count"]).all()
    assert np.isfinite(m["bqk_norm"]).all()


# --------------------------------------------------------------------------- library, CLI, figure


@pytest.fixture(scope="module")
def other(tmp_path_factory):
    folder = write_random_checkpoint(tmp_path_factory.mktemp("b"), n_embd=48, n_head=6,
                                     n_positions=64, seed=7)
    return folder, Layer0.from_pretrained(str(folder), device="cpu")


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_the_cli_csv_equals_dg_compare(demo, other, tmp_path):
    from detokgui.cli import main

    folder, b = other
    out = tmp_path / "m.csv"
    assert main(["compare", "--model", "demo", "--compare", str(folder), "--device", "cpu",
                 "--out", str(out), "--queries", "32", "--seed", "3"]) == 0
    rows = read_csv(out)
    df = dg.compare(demo, b, queries=32, seed=3, progress=False)
    assert list(rows[0]) == list(df.columns) == ["head_a", "head_b", "similarity",
                                                  "positional", "affinity", "assigned"]
    assert len(rows) == len(df) == 8 * 6
    for r, (_, want) in zip(rows, df.iterrows()):
        assert (int(r["head_a"]), int(r["head_b"]), int(r["assigned"])) == (
            want["head_a"], want["head_b"], want["assigned"])
        for c in ("similarity", "positional", "affinity"):
            assert float(r[c]) == pytest.approx(want[c], abs=1e-7)
    assert sum(int(r["assigned"]) for r in rows) == 6
    assert df.attrs["assignment"] == [[a, b] for a, b in
                                      sorted((int(r["head_a"]), int(r["head_b"]))
                                             for r in rows if r["assigned"] == "1")]
    pairs = read_csv(tmp_path / "m-metrics.csv")  # the default name beside --out
    dm = dg.compare_metrics(demo, b, queries=32, seed=3, progress=False)
    assert list(pairs[0]) == list(dm.columns)
    assert len(pairs) == len(dm) == 6 * len(HEAD_METRICS)
    for r, (_, want) in zip(pairs, dm.iterrows()):
        assert (int(r["head_a"]), int(r["head_b"]), r["metric"]) == (
            want["head_a"], want["head_b"], want["metric"])
        for c in ("value_a", "value_b", "difference"):
            assert float(r[c]) == pytest.approx(want[c], abs=1e-7, nan_ok=True)


def test_the_cli_refuses_bad_options(tmp_path, capsys):
    from detokgui.cli import main

    out = str(tmp_path / "m.csv")
    assert main(["compare", "--model", "demo", "--compare", "demo", "--out", out,
                 "--queries", "0"]) == 2
    assert main(["compare", "--model", "demo", "--compare", "demo", "--out", out,
                 "--metrics-out", out]) == 2
    err = capsys.readouterr().err
    assert "--queries must be at least 1" in err and "must differ from --out" in err
    assert not (tmp_path / "m.csv").exists()


def test_head_metrics_frame(demo):
    df = dg.head_metrics(demo, queries=16, progress=False)
    assert list(df.columns) == ["head", "metric", "value", "label"]
    assert len(df) == demo.n_heads * len(HEAD_METRICS)
    cls = df[df["metric"] == "head_class"]
    assert [HEAD_LABELS[int(v)] for v in cls["value"]] == list(cls["label"])


def test_export_figures_with_compare(demo, other, tmp_path):
    from detokgui.cli import main
    from detokgui.figures import load_figures

    assert "study_compare_heads" not in {s.key for s in load_figures()}
    assert "study_compare_heads" in {s.key for s in load_figures(("compare",))}
    folder, _ = other
    out = tmp_path / "figs"
    assert main(["figures", "--model", "demo", "--compare", str(folder), "--device", "cpu",
                 "--out", str(out), "--format", "png", "--only", "study_compare_heads"]) == 0
    assert (out / "study_compare_heads.png").stat().st_size > 10_000
    data = read_csv(out / "study_compare_heads.csv")
    assert len(data) == 6 * len(HEAD_METRICS)
    index = (out / "index.md").read_text(encoding="utf-8")
    assert "compared with" in index and "study_compare_heads.png" in index
    assert main(["figures", "--model", "demo", "--out", str(tmp_path / "f2"), "--only",
                 "study_compare_heads"]) == 2  # needs --compare


def test_library_input_and_figure(demo, other):
    from matplotlib.figure import Figure

    from detokgui.core.errors import InputError

    _, b = other
    with pytest.raises(InputError, match="loaded model"):
        dg.compare(demo, "demo", progress=False)
    with pytest.raises(InputError, match="k must be at least 1|k"):
        dg.compare(demo, b, k=0, progress=False)
    with pytest.raises(InputError, match="needs a model B"):
        dg.figure(demo, "study_compare_heads", progress=False)
    fig = dg.figure(demo, "study_compare_heads", compare=b, progress=False)
    assert isinstance(fig, Figure)
    m = run(iter_head_metrics(demo, n_queries=16))
    m["bqk_norm"][:] = -1  # a copy: what is kept on the layer stays
    assert (run(iter_head_metrics(demo, n_queries=16))["bqk_norm"] > 0).all()
