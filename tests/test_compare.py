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
from detokgui.core.base.progress import Progress, run
from detokgui.core.compare.head_metrics import HEAD_CLASS_CODES, HEAD_METRICS, iter_head_metrics
from detokgui.core.compare.pair import (
    NULL_ALPHA,
    Pair,
    iter_match_heads,
    match_heads,
    metric_pairs,
    pattern_overlap,
    query_shifts,
    rotated_overlap,
    shifted_agreement,
    top_key_agreement,
)
from detokgui.core.corpus.counts import layer_corpus_counts
from detokgui.core.model.sample import random_token_sample
from detokgui.core.model.sources.demo import (
    demo_model_folder,
    sample_corpus,
    write_random_checkpoint,
)
from detokgui.core.model.tokens import token_string
from detokgui.core.position_side.positional import HEAD_LABELS, positional_pattern
from detokgui.core.token_side.affinity import topk_keys
from detokgui.core.token_side.auroc import bigram_row_sample, iter_sampled_auroc, roc_curve
from detokgui.core.token_side.frequency import frequency_stats
from detokgui.core.token_side.vocab_pass import iter_vocab_pass

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
    assert m.matched == [True] * H and m.matched_pairs == m.assignment  # all above θ
    counts2 = layer_corpus_counts(demo2, [sample_corpus()])
    ma = run(iter_head_metrics(demo, counts=counts, n_queries=Q))
    mb = run(iter_head_metrics(demo2, counts=counts2, n_queries=Q))
    rows = metric_pairs(m, ma, mb)
    assert len(rows) == H * len(HEAD_METRICS)
    assert {r[2] for r in rows} == set(HEAD_METRICS)
    for a, b, metric, va, vb, diff, matched in rows:
        assert np.isfinite(va), metric  # every metric has a value with a corpus
        assert diff == 0.0 and va == vb, (a, b, metric)
        assert matched == 1


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
    assert all(m.matched)
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


# --------------------------------------------------------------------------- no match


def random_layer(folder, seed, **shape):
    return Layer0.from_pretrained(str(write_random_checkpoint(folder, seed=seed, **shape)),
                                  device="cpu")


@pytest.fixture(scope="module")
def demo_shaped_random(tmp_path_factory):
    """Random weights in the demo model's shapes (d = 128, 8 heads, 128 positions)."""
    return random_layer(tmp_path_factory.mktemp("r128"), 21, n_embd=128, n_head=8,
                        n_positions=128)


def test_the_demo_against_random_weights_has_no_match(demo, demo_shaped_random):
    m = match_heads(Pair(demo, demo_shaped_random), n_queries=Q)
    H = demo.n_heads
    assert len(m.assignment) == H  # the assignment pairs every head all the same
    assert m.matched == [False] * H and m.matched_pairs == []
    for a, b in m.assignment:
        assert m.similarity[a, b] <= m.threshold[a, b] and m.p_adjusted[a, b] > NULL_ALPHA
        assert m.verdict(a, b).startswith("no match: S ") and " ≤ θ " in m.verdict(a, b)
        assert m.match_of_a(a) is None and m.match_of_b(b) is None
        assert m.assigned_of_a(a) == b and m.assigned_of_b(b) == a
    assert m.matched_array().sum() == 0 and m.assigned().sum() == H
    assert m.rule().startswith("no match: S ≤ θ") and "α = 0.05" in m.rule()
    assert m.shuffles == demo.n_positions * Q  # every rotation of n + 1 = 128, every shift
    sw = m.swapped()  # the null is symmetric: the same thresholds seen from B
    np.testing.assert_array_equal(sw.threshold, m.threshold.T)
    assert sw.matched == [False] * H


def test_pair_texts_say_how_the_heads_were_paired(demo, demo2, demo_shaped_random):
    from detokgui.core.compare import pair_texts as pt

    assert pt.waiting_text(False, None, 0, None, 8).startswith("Pairing the two models")
    assert pt.waiting_text(True, None, 0, None, 8).startswith("Matching the heads of A and B")
    assert (pt.pair_label(None, 1, 2, "a<b", "c") ==
            "<b>A head 1 ↔ B head 2</b> (chosen) · query a&lt;b (B: c)")
    same = match_heads(Pair(demo, demo2), n_queries=Q)
    assert pt.pair_label(same, 3, 3) == f"<b>A head 3 ↔ B head 3</b> ({same.verdict(3, 3)})"
    mean = np.mean([same.similarity[a][b] for a, b in same.assignment])
    assert pt.matching_title(same) == (
        f"Head similarity, 8 heads of A × 8 of B; {sum(same.matched)} of 8 assigned pairs "
        f"matched (S > θ, θ {same.threshold.min():.2f}–{same.threshold.max():.2f}); "
        f"assignment's mean {mean:.3f}")
    none = match_heads(Pair(demo, demo_shaped_random), n_queries=Q)
    b = none.assigned_of_a(0)
    assert pt.waiting_text(True, none, 0, None, 8).startswith(
        f"A's head 0 has no match in B: the assignment pairs it with B's head {b}, but "
        f"{none.inequality(0, b)}, no more alike")
    assert pt.no_match_label(none, 0) == (
        "<b>A head 0</b>: <span style='color:#b00'>no match in B</span> "
        f"(assigned B head {b}: {none.inequality(0, b)})")
    assert pt.pair_label(none, 0, b, "x", None) == (
        f"<b>A head 0 ↔ B head {b}</b> (chosen; <span style='color:#b00'>"
        f"{none.verdict(0, b)}</span>) · query x (<span style='color:#b00'>missing in B</span>)")


def test_unrelated_random_models_have_no_match_and_each_matches_itself(tmp_path):
    shape = {"n_embd": 48, "n_head": 6, "n_positions": 64}
    a, b = random_layer(tmp_path / "a", 7, **shape), random_layer(tmp_path / "b", 8, **shape)
    m = match_heads(Pair(a, b), n_queries=Q)
    assert len(m.assignment) == 6 and not any(m.matched)
    for layer in (a, b):
        own = match_heads(Pair(layer, layer), n_queries=Q)
        assert own.assignment == [(h, h) for h in range(6)] and all(own.matched)
        np.testing.assert_allclose(np.diag(own.similarity), 1.0, atol=1e-6)
    # a stricter level never matches more; a looser one never fewer
    strict, loose = m.with_alpha(0.001), m.with_alpha(0.5)
    assert (strict.threshold >= m.threshold).all() and (loose.threshold <= m.threshold).all()
    assert m.with_alpha(NULL_ALPHA) is m


def test_the_null_is_the_similarity_made_unrelated(demo, demo_shaped_random):
    """Each part of the null is the observed part with B's pattern rotated over the key
    positions or B's top keys taken from another query token, (0, 0) the observed one;
    threshold, p-value and the family-wise p-value are the min-p method's, computed
    here the slow way."""
    from detokgui.core.token_side.affinity import iter_topk_keys_of

    m = match_heads(Pair(demo, demo_shaped_random), n_queries=Q)
    pa, pb = m.pattern_a, m.pattern_b
    n1 = pa.shape[1]
    rot = rotated_overlap(pa, pb)
    assert rot.shape == (8, 8, n1)
    for s in (0, 1, 5, n1 - 1):
        np.testing.assert_allclose(rot[:, :, s], pattern_overlap(pa, np.roll(pb, -s, 1)))
    np.testing.assert_array_equal(m.null_positional[:, :, 0], m.positional)
    np.testing.assert_array_equal(m.null_affinity[:, :, 0], m.affinity)

    tokens = random_token_sample(demo, 12, seed=4)
    ta = run(iter_topk_keys_of(demo, tokens, 10))
    tb = run(iter_topk_keys_of(demo_shaped_random, tokens, 10))
    ta[0, 0, 0], ta[1, 3, 2] = -1, ta[1, 3, 1]  # a key B lacks; two of A's ids for one key
    tb[2, 4] = ta[0, 5]  # B's head 2 ranks for one query what A's head 0 does for another
    got = shifted_agreement(ta, tb, [0, 1, 7, 11])
    for i, r in enumerate((0, 1, 7, 11)):
        np.testing.assert_allclose(got[:, :, i], top_key_agreement(ta, np.roll(tb, -r, 1)))
    assert got[0, 2, 3] > 0  # shift 11 = -1 pairs query 5 of A with query 4 of B
    assert query_shifts(1).tolist() == [0] and query_shifts(5).tolist() == [0, 1, 2, 3, 4]
    many = query_shifts(1000)
    assert len(many) == 256 and many[0] == 0 and many[1] == 1 and many[-1] == 999

    m = match_heads(Pair(demo, demo_shaped_random), n_queries=6)  # N = 128 x 6 shuffles
    w, N = m.positional_weight, m.shuffles
    assert N == 768
    shuffled = (w * m.null_positional[..., :, None]
                + (1 - w) * m.null_affinity[..., None, :]).reshape(8, 8, N)  # [a, b, g]
    assert shuffled[..., 0].tolist() == m.similarity.tolist()
    counts = (shuffled[..., None, :] >= shuffled[..., :, None]).sum(-1)  # c[a, b](g)
    least = counts.min(axis=(0, 1))
    c_star = np.sort(least)[int(np.floor(m.alpha * N))]
    assert ((least <= c_star).sum() > m.alpha * N) and ((least < c_star).sum() <= m.alpha * N)
    np.testing.assert_array_equal(m.p_value, counts[..., 0] / N)
    np.testing.assert_array_equal(m.p_adjusted,
                                  (least[None, None, :] <= counts[..., :1]).sum(-1) / N)
    np.testing.assert_array_equal(m.threshold, -np.sort(-shuffled, -1)[..., c_star - 1])
    np.testing.assert_array_equal(m.similarity > m.threshold, m.p_adjusted <= m.alpha)


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
    # A (the demo) has 8 heads, B 3: five of A's heads are not assigned; random B is
    # like no head of the demo, so the other three have no match either
    assert sum(m.assigned_of_a(h) is None for h in range(8)) == 5
    assert all(m.assigned_of_b(h) is not None for h in range(3))
    assert not any(m.matched) and all(m.match_of_a(h) is None for h in range(8))
    sw = m.swapped()
    assert sw.similarity.shape == (3, 8)
    assert all(sw.assigned_of_a(b) == a for a, b in m.assignment)


def test_a_pattern_pair_aligns_the_shorter_context(demo, tmp_path):
    from detokgui.core.compare.views import pattern_pair

    short = Layer0.from_pretrained(str(write_random_checkpoint(
        tmp_path / "s", n_embd=48, n_head=3, n_positions=40, seed=4)), device="cpu")
    res = pattern_pair(Pair(demo, short), 262, 50, 1, 2)
    assert res.b.n == 39 and res.offset_b == 11
    curves = res.curves()
    np.testing.assert_array_equal(curves["A"][0], np.arange(51))
    np.testing.assert_array_equal(curves["B"][0], np.arange(11, 51))
    np.testing.assert_array_equal(curves["B"][1], res.b.pattern[0])
    tv = 0.5 * sum(abs(res.a.pattern[0][j + 11] - res.b.pattern[0][j]) for j in range(40))
    assert res.total_variation() == pytest.approx(float(tv))
    header, rows = res.table()
    assert header == ["model", "key_position", "weight"] and len(rows) == 51 + 40
    assert rows[51] == ("B", 11, float(res.b.pattern[0][0]))


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
    from detokgui.core.token_side.affinity import iter_topk_keys_of

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


def test_the_cli_csv_equals_dg_compare(demo, other, tmp_path, capsys):
    from detokgui.cli import main

    folder, b = other
    out = tmp_path / "m.csv"
    assert main(["compare", "--model", "demo", "--compare", str(folder), "--device", "cpu",
                 "--out", str(out), "--queries", "32", "--seed", "3"]) == 0
    rows = read_csv(out)
    df = dg.compare(demo, b, queries=32, seed=3, progress=False)
    assert list(rows[0]) == list(df.columns) == [
        "head_a", "head_b", "similarity", "positional", "affinity", "assigned", "threshold",
        "p_value", "p_adjusted", "matched"]
    assert len(rows) == len(df) == 8 * 6
    for r, (_, want) in zip(rows, df.iterrows()):
        assert (int(r["head_a"]), int(r["head_b"]), int(r["assigned"]), int(r["matched"])) == (
            want["head_a"], want["head_b"], want["assigned"], want["matched"])
        for c in ("similarity", "positional", "affinity", "threshold", "p_value", "p_adjusted"):
            assert float(r[c]) == pytest.approx(want[c], abs=1e-7)
        # matched: an assigned pair above its threshold; random weights: none
        assert want["matched"] == int(want["assigned"] == 1
                                      and want["similarity"] > want["threshold"]) == 0
        assert 0 < want["p_value"] <= want["p_adjusted"] <= 1 and 0 <= want["threshold"] <= 1
    assert sum(int(r["assigned"]) for r in rows) == 6
    assert df.attrs["matched"] == [] and df.attrs["alpha"] == 0.05
    rule = df.attrs["no_match"]
    assert rule.startswith("no match: S ≤ θ") and "here 0." in rule
    said = capsys.readouterr().out
    assert "(no match)" in said and "matched: 0 of 6 assigned pairs; no match: S ≤ θ" in said
    assert df.attrs["assignment"] == [[a, b] for a, b in
                                      sorted((int(r["head_a"]), int(r["head_b"]))
                                             for r in rows if r["assigned"] == "1")]
    pairs = read_csv(tmp_path / "m-metrics.csv")  # the default name beside --out
    dm = dg.compare_metrics(demo, b, queries=32, seed=3, progress=False)
    assert list(pairs[0]) == list(dm.columns)
    assert len(pairs) == len(dm) == 6 * len(HEAD_METRICS)
    assert list(dm.columns)[-1] == "matched" and (dm["matched"] == 0).all()
    for r, (_, want) in zip(pairs, dm.iterrows()):
        assert (int(r["head_a"]), int(r["head_b"]), r["metric"], int(r["matched"])) == (
            want["head_a"], want["head_b"], want["metric"], want["matched"])
        for c in ("value_a", "value_b", "difference"):
            assert float(r[c]) == pytest.approx(want[c], abs=1e-7, nan_ok=True)


def test_the_cli_refuses_bad_options(tmp_path, capsys):
    from detokgui.cli import main

    out = str(tmp_path / "m.csv")
    assert main(["compare", "--model", "demo", "--compare", "demo", "--out", out,
                 "--queries", "0"]) == 2
    assert main(["compare", "--model", "demo", "--compare", "demo", "--out", out,
                 "--metrics-out", out]) == 2
    assert main(["compare", "--model", "demo", "--compare", "demo", "--out", out,
                 "--alpha", "1.5"]) == 2
    err = capsys.readouterr().err
    assert "--queries must be at least 1" in err and "must differ from --out" in err
    assert "--alpha must be between 0 and 1, not 1.5" in err
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


def test_the_figures_mark_assigned_pairs_without_a_match(demo, other):
    from matplotlib.colors import to_rgba
    from matplotlib.patches import Rectangle

    from detokgui.figures.compare import MATCHED_COLOR, NO_MATCH_COLOR

    def squares(fig):
        edges = [p.get_edgecolor() for ax in fig.axes for p in ax.patches
                 if isinstance(p, Rectangle)]
        return (sum(e == to_rgba(MATCHED_COLOR) for e in edges),
                sum(e == to_rgba(NO_MATCH_COLOR) for e in edges))

    def text(fig):
        return " ".join(t.get_text() for t in fig.texts)

    _, b = other
    fig = dg.compare(demo, b, queries=32, seed=3, progress=False).dg.plot()
    assert squares(fig) == (0, 6)  # random weights: six assigned pairs, none matched
    assert "grey dashed: assigned, no match" in text(fig) and "no match: S ≤ θ" in text(fig)
    fig = dg.compare(demo, demo, queries=16, progress=False).dg.plot()
    assert squares(fig) == (8, 0)


def test_library_input_and_figure(demo, other):
    from matplotlib.figure import Figure

    from detokgui.core.base.errors import InputError

    _, b = other
    with pytest.raises(InputError, match="loaded model"):
        dg.compare(demo, "demo", progress=False)
    with pytest.raises(InputError, match="k must be at least 1|k"):
        dg.compare(demo, b, k=0, progress=False)
    with pytest.raises(InputError, match="needs a model B"):
        dg.figure(demo, "study_compare_heads", progress=False)
    fig = dg.figure(demo, "study_compare_heads", compare=b, progress=False)
    assert isinstance(fig, Figure)
    with pytest.raises(InputError, match="alpha must be between 0 and 1"):
        dg.compare(demo, b, alpha=0, progress=False)
    m = run(iter_head_metrics(demo, n_queries=16))
    m["bqk_norm"][:] = -1  # a copy: what is kept on the layer stays
    assert (run(iter_head_metrics(demo, n_queries=16))["bqk_norm"] > 0).all()
