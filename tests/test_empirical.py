"""Layer 0 on real text (C1-C3) against the model's own forward pass and brute force."""

import numpy as np
import pytest
import torch
from conftest import SAMPLE_CORPUS, model_attention

from detokgui.core import InputError, Layer0
from detokgui.core.model.terms import TERM_NAMES
from detokgui.core.position_side.positional import positional_pattern
from detokgui.core.text_side import empirical as em

CORPUS = str(SAMPLE_CORPUS)
DEMO = "demo"  # the trained demo model shipped inside the package


def _ids(layer, n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, layer.n_vocab, (n,), generator=g).tolist()


def _mlp_pre_hook(model, ids):
    """The model's own layer-0 MLP pre-activation (output of c_fc), via a forward hook."""
    seen = {}
    mlp = model.transformer.h[0].mlp.c_fc
    handle = mlp.register_forward_hook(lambda mod, args, out: seen.setdefault("x", out))
    try:
        with torch.no_grad():
            model(torch.tensor([list(ids)]))
    finally:
        handle.remove()
    return seen["x"][0]


@pytest.fixture(scope="module")
def tiny_model(tiny_ckpt, hf_eager):
    return hf_eager(tiny_ckpt)


def test_forward_is_the_models_own(tiny_ckpt, tiny_layer, tiny_model):
    ids = _ids(tiny_layer, 100, seed=1)
    fw = em.forward(tiny_layer, ids)
    assert (fw.attention - model_attention(tiny_model, ids)).abs().max() < 1e-5
    assert (fw.mlp_pre - _mlp_pre_hook(tiny_model, ids)).abs().max() < 1e-4
    row = em.attention_row(tiny_layer, ids, 57)
    assert (row - fw.attention[:, 57, :58]).abs().max() < 1e-6


def test_forward_does_not_use_the_folded_factors(tiny_ckpt):
    """The exactness readout is a real check: spoil a folded factor and it shows."""
    layer = Layer0.from_pretrained(str(tiny_ckpt), device="cpu")
    ids = _ids(layer, 40, seed=2)
    before = em.forward(layer, ids).attention.clone()
    layer.Wq[1].mul_(1.5)
    assert torch.equal(em.forward(layer, ids).attention, before)
    data = em.sentence(layer, ids)
    assert data.max_abs_diff[0] < 1e-5 and data.max_abs_diff[1] > 1e-2


def test_sentence_matches_model(tiny_layer, tiny_model):
    text = " North Korea and South Korea share a border. Albert Einstein was born in Ulm."
    ids = tiny_layer.tokenizer.encode(text)
    n = len(ids)
    data = em.sentence(tiny_layer, ids)
    hf = model_attention(tiny_model, ids).numpy()
    assert data.actual.shape == (4, n, n) and data.heads == [0, 1, 2, 3]
    assert np.abs(data.actual - hf).max() < 1e-5
    assert np.abs(data.predicted - hf).max() < 1e-5
    assert data.max_difference < 1e-5 and data.max_difference == data.max_abs_diff.max()
    terms = tiny_layer.six_terms(ids)
    low = np.tril(np.ones((n, n), dtype=bool))
    for k in TERM_NAMES:
        assert np.allclose(data.terms[k][:, low], terms[k].numpy()[:, low], atol=1e-5)
        assert np.isnan(data.terms[k][:, ~low]).all()
    total = sum(data.terms[k] for k in TERM_NAMES)
    assert np.allclose(data.terms["sum"][:, low], total[:, low], atol=1e-4)
    one = em.sentence(tiny_layer, ids, heads=[2])
    assert one.heads == [2] and np.array_equal(one.actual[0], data.actual[2])


def test_sentence_progress_per_head_and_bad_input(tiny_layer):
    job = em.iter_sentence(tiny_layer, _ids(tiny_layer, 10), heads=[0, 3])
    fractions = []
    while True:
        try:
            fractions.append(next(job).fraction)
        except StopIteration:
            break
    assert fractions == [0.5, 1.0]
    with pytest.raises(InputError, match="more than"):
        em.sentence(tiny_layer, _ids(tiny_layer, tiny_layer.n_positions + 1))
    with pytest.raises(InputError, match="Head 9"):
        em.sentence(tiny_layer, [1, 2], heads=[9])


# --------------------------------------------------------------------------- KL


def _kl_loop(layer64, ids, definition):
    """c^X_{i,h} by a plain loop over heads, positions and terms (float64)."""
    terms = layer64.six_terms(ids)
    n = len(ids)
    tau = layer64.temperature
    out = np.zeros((layer64.n_heads, 6, n))
    for h in range(layer64.n_heads):
        for i in range(n):
            s = sum(terms[k][h, i, : i + 1] for k in TERM_NAMES)
            for x, k in enumerate(TERM_NAMES):
                t = terms[k][h, i, : i + 1]
                if definition == "paper":
                    P = torch.softmax((s - t) / tau, -1)
                    Q = torch.softmax(s / tau, -1)
                    out[h, x, i] = float((P * (P.log() - Q.log())).sum())
                else:  # the authors' script
                    out[h, x, i] = float(torch.nn.functional.kl_div(
                        torch.log_softmax(s - t, -1), torch.softmax(s, -1), reduction="mean"))
    return out


@pytest.mark.filterwarnings("ignore:reduction.*mean:UserWarning")
@pytest.mark.parametrize("definition", ["paper", "code"])
@pytest.mark.parametrize("block", [128, 20])
def test_kl_equals_a_plain_loop(tiny_ckpt, tiny_layer, definition, block, monkeypatch):
    monkeypatch.setattr(em, "KL_BLOCK_ROWS", block)  # 20: three blocks of query rows
    layer64 = Layer0.from_pretrained(str(tiny_ckpt), device="cpu", dtype=torch.float64)
    ids = _ids(tiny_layer, 48, seed=4)
    expect = _kl_loop(layer64, ids, definition)
    got = em.kl_contributions(tiny_layer, ids, definition).numpy()
    assert got.shape == (4, 6, 48)
    assert expect.max() > 1e-2  # the terms matter: a real comparison
    np.testing.assert_allclose(got, expect, rtol=1e-3, atol=2e-6)
    exact = em.kl_contributions(layer64, ids, definition).numpy()
    np.testing.assert_allclose(exact, expect, rtol=1e-9, atol=1e-12)
    sub = em.kl_contributions(layer64, ids, definition, heads=[3, 1]).numpy()
    np.testing.assert_allclose(sub, expect[[3, 1]], rtol=1e-9, atol=1e-12)


def test_kl_averages_over_texts_longer_than_i(tiny_layer):
    windows = [_ids(tiny_layer, n, seed=n) for n in (30, 12, 30, 5)]
    res = em.kl(tiny_layer, em.TextSource.tokens(windows), "code")
    assert res.definition == "code" and "authors' code" in res.label
    assert res.contribution.shape == (4, 6, tiny_layer.n_positions)
    per = [em.kl_contributions(tiny_layer, w, "code").double().numpy() for w in windows]
    for i in (0, 4, 5, 11, 12, 29):
        have = [p[..., i] for p in per if p.shape[-1] > i]
        assert res.texts[i] == len(have)
        np.testing.assert_allclose(res.contribution[..., i], np.mean(have, axis=0), rtol=1e-6)
    assert res.texts[30] == 0 and np.isnan(res.contribution[..., 30:]).all()
    assert res.line(2, "pp").shape == (tiny_layer.n_positions,)
    assert res.n_texts == 4


def test_kl_bad_definition(tiny_layer):
    with pytest.raises(InputError, match="definition"):
        em.kl_contributions(tiny_layer, [1, 2, 3], "other")


# --------------------------------------------------------------------------- C2


def test_empirical_attention_is_the_mean_of_hf_attentions(tiny_layer, tiny_model):
    texts = em.TextSource.corpus(CORPUS, max_texts=25)
    windows = [w.tolist() for w, _ in texts.iterate(tiny_layer)]
    assert len(windows) == 25
    i = 70
    res = em.empirical_attention(tiny_layer, texts, i)
    rows = [model_attention(tiny_model, w)[:, i, : i + 1] for w in windows if len(w) > i]
    assert res.windows == len(rows) > 5 and res.texts == 25
    expect = torch.stack(rows).double().mean(0).numpy()
    assert res.empirical.shape == (4, i + 1)
    assert np.abs(res.empirical - expect).max() < 1e-5
    # the B4 column: the positional pattern of each text's own token at i, averaged
    tokens = [w[i] for w in windows if len(w) > i]
    pats = np.mean([positional_pattern(tiny_layer, t, i, convention="mean-sigma").pattern
                    for t in tokens], axis=0)
    assert np.abs(res.pattern - pats).max() < 1e-5
    assert res.convention == "paper" and "public-domain-sample" in res.source


def test_b3_prediction_conventions(tiny_layer):
    """paper: score_j = (p_i W^QK p_j^T / mean_v S[v,i] + b^QK p_j^T) mean_v 1/S[v,j],
    brute force over the sigma table; mean-sigma: the positional-bias view's softmax."""
    from detokgui.core.position_side.positional import positional_bias

    L, i = tiny_layer, 33
    S = L.sigma_stats().table.double()
    P = L.P.double()
    out = []
    for h in range(L.n_heads):
        WQK = (L.Wq[h] @ L.Wk[h].T).double()
        raw_pp = P[i] @ WQK @ P[: i + 1].T
        raw_p = L.bQK[h].double() @ P[: i + 1].T
        score = ((raw_pp / S[:, i].mean() + raw_p)[None, :] / S[:, : i + 1]).mean(0)
        out.append(torch.softmax(score / L.temperature, -1).numpy())
    np.testing.assert_allclose(em.b3_prediction(L, i), np.array(out), atol=1e-6)
    np.testing.assert_allclose(em.b3_prediction(L, i, [1], "mean-sigma"),
                               positional_bias(L, i, "mean", [1], "mean-sigma").softmax, atol=1e-7)
    with pytest.raises(InputError, match="convention"):
        em.b3_prediction(L, i, convention="exact")


def test_empirical_with_prepended_eos_and_too_short_texts(tiny_layer, tiny_model):
    texts = em.TextSource.corpus([CORPUS], prepend_bos=True, max_texts=3)
    windows = [w.tolist() for w, _ in texts.iterate(tiny_layer)]
    assert all(w[0] == tiny_layer.tokenizer.eos_token_id for w in windows)
    res = em.empirical_attention(tiny_layer, texts, 0)
    assert res.windows == 3 and np.allclose(res.empirical, 1.0)
    short = em.TextSource.tokens([[1, 2, 3], [4, 5]])
    with pytest.raises(InputError, match="None of the 2 texts is longer than 3 tokens"):
        em.empirical_attention(tiny_layer, short, 3)
    with pytest.raises(InputError, match="^The only text is not longer than 3 tokens"):
        em.empirical_attention(tiny_layer, em.TextSource.tokens([[1, 2, 3]]), 3)


def test_text_source_checks(tiny_layer, tmp_path):
    with pytest.raises(InputError, match="at least 1"):
        em.TextSource.corpus(CORPUS, max_texts=0)
    with pytest.raises(InputError, match="no such file"):
        list(em.TextSource.corpus(tmp_path / "missing.txt").iterate(tiny_layer))
    with pytest.raises(InputError, match="outside the vocabulary"):
        list(em.TextSource.tokens([[1, 10**9]]).iterate(tiny_layer))
    src = em.TextSource.tokens([[1, 2], [3], [4, 5, 6]], max_texts=2)
    got = list(src.iterate(tiny_layer))
    assert [w.tolist() for w, _ in got] == [[1, 2], [3]] and got[-1][1] == 1.0
    assert "2 texts" in src.label() or "first 2" in src.label()


def test_text_window_is_the_nth_corpus_window(tiny_layer):
    from detokgui.core.corpus.documents import corpus_windows

    windows = corpus_windows([CORPUS], tiny_layer.tokenizer, tiny_layer.n_positions)
    first = [next(windows) for _ in range(3)]
    texts = em.TextSource.corpus(CORPUS)
    assert em.text_window(tiny_layer, texts, 0) == first[0]
    assert em.text_window(tiny_layer, texts, 2) == first[2]
    short = em.TextSource.tokens([[1, 2], [3]])
    assert em.text_window(tiny_layer, short, 1) == [3]
    with pytest.raises(InputError, match="holds 2 texts; choose a number below 2"):
        em.text_window(tiny_layer, short, 2)
    with pytest.raises(InputError, match="first 2 texts"):
        em.text_window(tiny_layer, em.TextSource.corpus(CORPUS, max_texts=2), 5)
    with pytest.raises(InputError, match="0 or more"):
        em.text_window(tiny_layer, texts, -1)


# --------------------------------------------------------------------------- demo model


@pytest.fixture(scope="module")
def demo_layer():
    return Layer0.from_pretrained(DEMO, device="cpu")


def test_demo_model_heads_on_the_sample_corpus(demo_layer):
    """The trained demo's head 7 is a sharp previous-token head and heads 0, 1, 3, 4 are
    broad (its README); the empirical attention shows it and follows the prediction."""
    i = 100
    res = em.empirical_attention(demo_layer, em.TextSource.corpus(CORPUS, max_texts=120), i)
    assert res.windows > 100
    assert res.empirical[7, i - 1] > 0.6
    for h in (0, 1, 3, 4):
        assert res.empirical[h].max() < 0.1
        assert res.empirical[h, : i - 3].sum() > 0.8  # most weight beyond the last 4
    assert np.abs(res.empirical - res.pattern).max() < 0.15
    assert np.abs(res.empirical[7] - res.predicted[7]).sum() < 0.3


def test_jobs_report_progress_and_stop_between_texts(tiny_layer):
    from detokgui.core.text_side import circuits as ci

    for job in (em.iter_kl(tiny_layer, em.TextSource.corpus(CORPUS)),
                em.iter_empirical_attention(tiny_layer, em.TextSource.corpus(CORPUS), 5),
                ci.iter_normalisation(tiny_layer, em.TextSource.corpus(CORPUS), [0])):
        seen = [next(job).fraction for _ in range(12)]
        assert seen == sorted(seen) and 0 < seen[-1] < 0.5
        job.close()  # what a cancelled worker does: the corpus files are closed
        with pytest.raises(StopIteration):
            next(job)
