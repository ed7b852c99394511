"""Frequency views (A6): T_e, embedding variance and norm against counts; Spearman rho."""

import numpy as np
import pytest
import torch
from brute_vocab import raw_model, te_matrix
from scipy import sparse, stats

from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import run
from detokgui.core.corpus.counts import CorpusCounts, layer_corpus_counts
from detokgui.core.model.conventions import SigmaChoice
from detokgui.core.token_side.frequency import (
    average_ranks,
    embedding_norm,
    embedding_variance,
    frequency_stats,
    iter_corpus_frequency,
    self_assertion,
    spearman,
)


def counts_of(unigrams):
    V = len(unigrams)
    bi = sparse.csr_array(([1], ([0], [1])), shape=(V, V))
    return CorpusCounts(np.asarray(unigrams, dtype=np.int64), bi, int(np.sum(unigrams)), 1, (),
                        "k")


@pytest.mark.parametrize("convention", ["mean", "none"])
def test_self_assertion_equals_brute_force(small_vocab_ckpt, small_vocab_layer, convention):
    got = self_assertion(small_vocab_layer, SigmaChoice(convention)).numpy()
    np.testing.assert_allclose(got, te_matrix(raw_model(small_vocab_ckpt), convention),
                               rtol=1e-10, atol=1e-12)


def test_self_assertion_at_a_position_is_the_six_term_e(tiny_layer):
    """T_e with the key sigma at position j is the `e` term of a sequence at key j."""
    ids = tiny_layer.tokenizer.encode(" North Korea is in Asia")
    terms = tiny_layer.six_terms(ids)
    for j, t in enumerate(ids):
        te = self_assertion(tiny_layer, SigmaChoice("at", (0, j)))[:, t]
        torch.testing.assert_close(te, terms["e"][:, -1, j], rtol=1e-5, atol=1e-6)


def test_embedding_variance_and_norm(small_vocab_layer):
    E = small_vocab_layer.E
    torch.testing.assert_close(embedding_variance(small_vocab_layer), E.var(1, unbiased=False))
    torch.testing.assert_close(embedding_norm(small_vocab_layer), E.norm(dim=1))


def test_spearman_equals_scipy_with_ties():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 6, (3, 200))  # many ties
    y = rng.normal(size=(3, 200)) + 0.3 * x
    y[:, :20] = 1.0  # ties in y too
    rho = spearman(x, y)
    for i in range(3):
        assert abs(rho[i] - stats.spearmanr(x[i], y[i]).statistic) < 1e-12
    np.testing.assert_allclose(average_ranks(x[0]), stats.rankdata(x[0]))
    assert np.isnan(spearman(np.ones(5), np.arange(5)))


@pytest.mark.parametrize("zero_counts", ["exclude", "include"])
def test_frequency_stats_against_direct_correlations(small_vocab_ckpt, small_vocab_layer,
                                                     zero_counts):
    layer = small_vocab_layer
    rng = np.random.default_rng(1)
    uni = rng.zipf(1.5, 400).clip(0, 10**6) * (rng.random(400) < 0.7)  # ~30% unseen
    fs = frequency_stats(layer, counts_of(uni), zero_counts=zero_counts)
    used = uni > 0 if zero_counts == "exclude" else np.ones(400, dtype=bool)
    assert fs.n_used == used.sum() and fs.heads == [0, 1, 2, 3]
    te = te_matrix(raw_model(small_vocab_ckpt))
    E = layer.E.numpy()
    var, norm = E.var(axis=1), np.linalg.norm(E, axis=1)
    for h in range(4):
        assert abs(fs.rho_t_e[h] - stats.spearmanr(uni[used], te[h][used]).statistic) < 1e-9
        assert abs(fs.rho_norm_t_e[h] - stats.spearmanr(norm, te[h]).statistic) < 1e-9
    assert abs(fs.rho_variance - stats.spearmanr(uni[used], var[used]).statistic) < 1e-9
    np.testing.assert_array_equal(fs.counts, uni)


def test_scatter_points_and_the_corpus_job(small_vocab_layer, small_corpus, tmp_path,
                                           monkeypatch):
    monkeypatch.setenv("DETOKGUI_CACHE_DIR", str(tmp_path / "cache"))
    layer = small_vocab_layer
    fs = run(iter_corpus_frequency(layer, [str(small_corpus)], zero_counts="include"))
    counts = layer_corpus_counts(layer, small_corpus)
    np.testing.assert_array_equal(fs.counts, counts.unigrams)
    assert fs.zero_counts == "include" and fs.heads == [0, 1, 2, 3]
    ids, x, y = fs.points("norm", 2)
    np.testing.assert_array_equal(ids, np.arange(layer.n_vocab))
    np.testing.assert_array_equal(x, fs.t_e[2])
    np.testing.assert_array_equal(y, fs.norm)
    seen = np.flatnonzero(fs.counts)
    for kind, want in (("t_e", fs.t_e[2, seen]), ("variance", fs.variance[seen])):
        ids, x, y = fs.points(kind, 2)
        np.testing.assert_array_equal(ids, seen)
        np.testing.assert_allclose(x, np.log10(fs.counts[seen]))
        np.testing.assert_array_equal(y, want)


def test_frequency_bad_inputs(small_vocab_layer):
    with pytest.raises(InputError, match="cover 3 token ids"):
        frequency_stats(small_vocab_layer, counts_of([1, 2, 3]))
    with pytest.raises(InputError, match="zero_counts"):
        frequency_stats(small_vocab_layer, counts_of([1] * 400), zero_counts="drop")
    with pytest.raises(InputError, match="Fewer than two tokens"):
        frequency_stats(small_vocab_layer, counts_of([5] + [0] * 399))
