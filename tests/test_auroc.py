"""Bigram AUROC (A5) against the brute-force weighted pairwise definition."""


import numpy as np
import pytest
import torch
from brute_vocab import raw_model, tee_matrix, weighted_auroc
from scipy import sparse
from test_vocab_stats import integer_layer

import detokgui.core.token_side.auroc as A
from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import run
from detokgui.core.corpus.counts import CorpusCounts, layer_corpus_counts
from detokgui.core.model.conventions import SigmaChoice
from detokgui.core.token_side.vocab_stats import head_stats


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DETOKGUI_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def brute_auroc(scores, dense_counts):
    """[H, V] AUROC by pairs; dense_counts[v, u] = c(v, u)."""
    H, V, _ = scores.shape
    return np.array([[weighted_auroc(scores[h, u], dense_counts[:, u]) for u in range(V)]
                     for h in range(H)])


def assert_means(res, brute, dense):
    """"skip": mean over tokens with an AUROC; "zero": tokens without any bigram count as 0
    (a token preceded by every token has no negatives and no AUROC in either)."""
    skip, n_skip = res.head_means("skip")
    np.testing.assert_allclose(skip, np.nanmean(brute, axis=1), rtol=1e-12)
    assert n_skip.tolist() == (~np.isnan(brute)).sum(axis=1).tolist()
    zeroed = np.where(dense.sum(axis=0) == 0, 0.0, brute)
    zero, n_zero = res.head_means("zero")
    np.testing.assert_allclose(zero, np.nanmean(zeroed, axis=1), rtol=1e-12)
    assert n_zero.tolist() == (~np.isnan(zeroed)).sum(axis=1).tolist()


@pytest.mark.parametrize("small_max", [None, 0, 10**9])  # mixed, all sorted, all swept
def test_auroc_equals_brute_force_on_a_real_corpus(small_vocab_ckpt, small_vocab_layer,
                                                   small_corpus, cache, monkeypatch,
                                                   small_max):
    layer = small_vocab_layer
    if small_max is not None:
        monkeypatch.setitem(A.SMALL_MAX, "cpu", small_max)
    counts = layer_corpus_counts(layer, small_corpus)
    dense = counts.bigrams.toarray()
    assert (dense.sum(axis=0) == 0).any()  # some tokens have no bigram
    res = A.bigram_auroc(layer, counts, use_cache=False, budget_bytes=400 * 8 * 4 * 24)
    brute = brute_auroc(tee_matrix(raw_model(small_vocab_ckpt)), dense)
    np.testing.assert_allclose(res.auroc, brute, rtol=1e-12, atol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(res.positives, (dense > 0).sum(axis=0))
    np.testing.assert_array_equal(res.weight, dense.sum(axis=0))
    np.testing.assert_array_equal(res.negatives, 400 - (dense > 0).sum(axis=0))
    np.testing.assert_allclose(res.values("zero"), np.where(np.isnan(brute), 0, brute),
                               rtol=1e-12, atol=1e-12)
    assert_means(res, brute, dense)


def synthetic_counts(V, seed=0):
    """Bigram counts with every kind of query: none, one, a few and many positives, and
    one query preceded by every token (no negatives)."""
    rng = np.random.default_rng(seed)
    dense = np.zeros((V, V), dtype=np.int64)
    for u in range(1, V - 1):
        m = rng.choice([0, 1, 2, 3, 7, V // 2])
        dense[rng.choice(V, m, replace=False), u] = rng.integers(1, 6, m)
    dense[:, V - 1] = 2
    dense[5, 9] = 3  # 5 and 7 tie everywhere: a positive tied with a negative
    dense[7, 9] = 0
    csr = sparse.csr_array(dense)
    return CorpusCounts(dense.sum(axis=0), csr, int(dense.sum()), 1, (), f"synthetic{seed}"), dense


@pytest.mark.parametrize("small_max", [None, 2])
def test_ties_and_conventions_with_exact_scores(cache, monkeypatch, small_max):
    layer = integer_layer(V=40)
    if small_max is not None:
        monkeypatch.setitem(A.SMALL_MAX, "cpu", small_max)
    counts, dense = synthetic_counts(40)
    with torch.inference_mode():
        scores = torch.einsum("hud,hvd->huv", layer.E @ layer.Wq, layer.E @ layer.Wk)
    scores = scores.double().numpy()
    assert scores[0, 9, 5] == scores[0, 9, 7]
    res = A.bigram_auroc(layer, counts, SigmaChoice("none"), use_cache=False)
    brute = brute_auroc(scores, dense)
    np.testing.assert_allclose(res.auroc, brute, rtol=1e-12, equal_nan=True)
    assert np.isnan(res.auroc[:, 0]).all() and np.isnan(res.auroc[:, 39]).all()
    assert_means(res, brute, dense)


def test_roc_curve_area_is_the_auroc(small_vocab_layer, small_corpus, cache):
    layer = small_vocab_layer
    counts = layer_corpus_counts(layer, small_corpus)
    res = A.bigram_auroc(layer, counts)
    for u in np.flatnonzero(counts.unigrams)[:8]:
        if res.positives[u] == 0:
            continue
        roc = A.roc_curve(layer, counts, int(u))
        assert roc.positives == res.positives[u] and roc.weight == res.weight[u]
        np.testing.assert_allclose(roc.auroc, res.auroc[:, u], rtol=1e-9)
        for fpr, tpr in zip(roc.fpr, roc.tpr):
            assert fpr[0] == tpr[0] == 0 and abs(fpr[-1] - 1) < 1e-12
            assert abs(tpr[-1] - 1) < 1e-12
            assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    without = int(np.flatnonzero(res.positives == 0)[0])
    with pytest.raises(InputError, match="no bigram"):
        A.roc_curve(layer, counts, without)


def test_corpus_jobs_and_their_tables(small_vocab_layer, small_corpus, cache):
    layer = small_vocab_layer
    counts = layer_corpus_counts(layer, small_corpus)
    res = run(A.iter_corpus_auroc(layer, [str(small_corpus)]))
    np.testing.assert_allclose(res.auroc, A.bigram_auroc(layer, counts).auroc, rtol=1e-12)
    header, rows = A.head_means_table(res, "zero")
    means, used = res.head_means("zero")
    assert header == ["head", "mean_auroc", "query_tokens", "no_bigram"]
    assert rows == [(h, float(m), int(n), "zero") for h, m, n in zip(res.heads, means, used)]
    u = int(np.flatnonzero(res.positives)[0])
    roc = run(A.iter_corpus_roc(layer, [str(small_corpus)], u, 1))
    assert roc.heads == [1] and roc.auroc[0] == pytest.approx(res.auroc[1, u], rel=1e-9)
    header, rows = A.roc_table(roc)
    assert header == ["head", "query_id", "fpr", "tpr"] and len(rows) == len(roc.fpr[0])
    assert rows[-1] == (1, u, 1.0, pytest.approx(1.0))
    without = int(np.flatnonzero(res.positives == 0)[0])
    assert run(A.iter_corpus_roc(layer, [str(small_corpus)], without, 0)) == A.NoBigram(without)


def test_cached_with_the_pass_statistics(small_vocab_layer, small_corpus, cache, monkeypatch):
    layer = small_vocab_layer
    counts = layer_corpus_counts(layer, small_corpus)
    first = A.bigram_auroc(layer, counts, heads=[1, 3])
    def no_pass(*a, **k):
        raise AssertionError("recomputed although cached")

    monkeypatch.setattr(A, "iter_vocab_pass", no_pass)
    again = A.bigram_auroc(layer, counts, heads=[1, 3])
    np.testing.assert_array_equal(again.auroc, first.auroc)
    assert head_stats(layer, heads=[1, 3]).heads == [1, 3]  # the pass's statistics
    with pytest.raises(AssertionError, match="recomputed"):
        A.bigram_auroc(layer, counts, SigmaChoice("none"), heads=[1, 3])


def test_cancel_leaves_no_cache(small_vocab_layer, small_corpus, cache):
    layer = small_vocab_layer
    counts = layer_corpus_counts(layer, small_corpus)
    job = A.iter_bigram_auroc(layer, counts, budget_bytes=400 * 8 * 10)
    p = next(job)
    assert 0 < p.fraction < 1
    job.close()
    assert not (cache / "auroc").exists() or not any((cache / "auroc").iterdir())
    assert not (cache / "vocab-stats").exists() or not any((cache / "vocab-stats").iterdir())


def test_bad_inputs(small_vocab_layer, cache):
    counts, _ = synthetic_counts(40)
    with pytest.raises(InputError, match="cover 40 token ids but the model has 400"):
        A.bigram_auroc(small_vocab_layer, counts)
    empty = CorpusCounts(np.zeros(400, dtype=np.int64), sparse.csr_array((400, 400),
                         dtype=np.int64), 0, 0, (), "empty")
    with pytest.raises(InputError, match="no bigrams"):
        A.bigram_auroc(small_vocab_layer, empty)
    with pytest.raises(InputError, match="no-bigram convention"):
        A.check_no_bigram("drop")
