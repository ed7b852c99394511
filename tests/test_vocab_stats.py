"""Whole-vocabulary head statistics (A4) against brute force on small vocabularies."""

import numpy as np
import pytest
import torch
from brute_vocab import raw_model, tee_matrix

from detokgui.core import Layer0
from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import run
from detokgui.core.model.conventions import SigmaChoice
from detokgui.core.model.sources.demo import write_random_checkpoint
from detokgui.core.token_side.vocab_pass import iter_vocab_pass, key_score_moments
from detokgui.core.token_side.vocab_stats import head_stats, iter_head_stats, sorted_matrix_block


@pytest.fixture(scope="module")
def v300(tmp_path_factory):
    """Random GPT-2 with 300 tokens and no tokenizer, loaded in float64."""
    folder = write_random_checkpoint(tmp_path_factory.mktemp("v300"), vocab_size=300,
                                     n_embd=32, n_head=4, n_positions=48, seed=11,
                                     tokenizer=False)
    return folder, Layer0.from_pretrained(str(folder), device="cpu", dtype=torch.float64)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DETOKGUI_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def integer_layer(V=40, d=16, H=2, seed=0, dtype=torch.float32):
    """A layer whose scores are exact dyadic rationals (integer embeddings and weights,
    d a power of two): every tie between scores is a true tie in any summation order."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *s, lo=-2, hi=3: torch.randint(lo, hi, s, generator=g).to(dtype)
    t = {"wte.weight": r(V, d), "wpe.weight": r(8, d),
         "h.0.ln_1.weight": torch.ones(d, dtype=dtype), "h.0.ln_1.bias": torch.zeros(d, dtype=dtype),
         "h.0.attn.c_attn.weight": r(d, 3 * d, lo=-1, hi=2),
         "h.0.attn.c_attn.bias": torch.zeros(3 * d, dtype=dtype),
         "h.0.attn.c_proj.weight": r(d, d), "h.0.attn.c_proj.bias": torch.zeros(d, dtype=dtype),
         "h.0.ln_2.weight": torch.ones(d, dtype=dtype), "h.0.ln_2.bias": torch.zeros(d, dtype=dtype),
         "h.0.mlp.c_fc.weight": r(d, 4), "h.0.mlp.c_fc.bias": torch.zeros(4, dtype=dtype),
         "h.0.mlp.c_proj.weight": r(4, d), "h.0.mlp.c_proj.bias": torch.zeros(d, dtype=dtype)}
    t["wte.weight"][7] = t["wte.weight"][5]  # two identical tokens: ties in every row
    return Layer0.from_tensors(t, n_heads=H, eps=1e-5, device="cpu", dtype=dtype)


def brute_stats(S, k):
    """Self-rank, variance, mean and top-k scores of each row of S [V, V], by definition."""
    V = S.shape[0]
    self_rank = np.array([1 + sum(S[u, v] > S[u, u] for v in range(V) if v != u)
                          for u in range(V)])
    top = -np.sort(-S, axis=1)[:, :k]
    return self_rank, S.var(axis=1), S.mean(axis=1), top


@pytest.mark.parametrize("convention,positions", [("mean", (0, 0)), ("none", (0, 0)),
                                                  ("at", (3, 17))])
@pytest.mark.parametrize("direction", ["keys", "queries"])
def test_stats_equal_brute_force(v300, cache, convention, positions, direction):
    folder, layer = v300
    full = tee_matrix(raw_model(folder), convention, positions)
    sigma = SigmaChoice(convention, positions)
    # A small budget: several chunks and one head at a time.
    st = head_stats(layer, sigma, direction=direction, k=7, budget_bytes=300 * 8 * 40)
    assert st.heads == [0, 1, 2, 3] and st.top_ids.shape == (4, 300, 7)
    for h in range(4):
        S = full[h] if direction == "keys" else full[h].T
        self_rank, var, mean, top = brute_stats(S, 7)
        np.testing.assert_array_equal(st.self_rank[h], self_rank)
        np.testing.assert_allclose(st.variance[h], var, rtol=1e-9)
        np.testing.assert_allclose(st.mean[h], mean, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(st.top_scores[h], top, rtol=1e-6)
        np.testing.assert_array_equal(st.top_ids[h], np.argsort(-S, axis=1)[:, :7])


def test_all_heads_at_once_and_subset_of_heads(v300, cache):
    folder, layer = v300
    full = tee_matrix(raw_model(folder))
    st = head_stats(layer, heads=[2, 0], use_cache=False)  # default budget: both heads at once
    assert st.heads == [2, 0]
    for r, h in enumerate([2, 0]):
        np.testing.assert_array_equal(st.self_rank[r], brute_stats(full[h], 1)[0])
        assert st.row(h) == r
    with pytest.raises(InputError, match="Head 1 was not computed"):
        st.row(1)


def test_ties_are_not_counted_as_greater():
    layer = integer_layer()
    with torch.inference_mode():
        Q = layer.E @ layer.Wq
        K = layer.E @ layer.Wk
    full = torch.einsum("hud,hvd->huv", Q, K).double().numpy()
    st = run(iter_vocab_pass(layer, SigmaChoice("none"), k=5)).stats
    for h in range(2):
        self_rank, var, _, top = brute_stats(full[h], 5)
        assert full[h][5, 5] == full[h][5, 7]  # the duplicate token ties with the query
        np.testing.assert_array_equal(st.self_rank[h], self_rank)
        np.testing.assert_array_equal(st.top_scores[h], top)
        np.testing.assert_allclose(st.variance[h], var, rtol=1e-6)
        # the ids returned carry those scores (which of two tied keys comes first is free)
        got = np.take_along_axis(full[h], st.top_ids[h].astype(np.int64), axis=1)
        np.testing.assert_array_equal(got, top)


def test_moments_need_no_pass(v300):
    folder, layer = v300
    full = tee_matrix(raw_model(folder), "none")
    mean, var = key_score_moments(layer, SigmaChoice("none"), "queries", heads=[1])
    np.testing.assert_allclose(var[0], full[1].T.var(axis=1), rtol=1e-9)
    np.testing.assert_allclose(mean[0], full[1].T.mean(axis=1), rtol=1e-9, atol=1e-12)


def test_cache_reused_per_sigma_and_direction(v300, cache, monkeypatch):
    _, layer = v300
    first = head_stats(layer, heads=[1])
    assert len(list(cache.glob("vocab-stats/*.npz"))) == 1
    import detokgui.core.token_side.vocab_stats as VS

    def no_pass(*a, **k):
        raise AssertionError("recomputed although cached")

    monkeypatch.setattr(VS, "iter_vocab_pass", no_pass)
    again = head_stats(layer, heads=[1])
    np.testing.assert_array_equal(again.top_ids, first.top_ids)
    np.testing.assert_array_equal(again.self_rank, first.self_rank)
    with pytest.raises(AssertionError, match="recomputed"):
        head_stats(layer, SigmaChoice("none"), heads=[1])
    with pytest.raises(AssertionError, match="recomputed"):
        head_stats(layer, direction="queries", heads=[1])


def test_cancel_mid_pass_leaves_no_cache(v300, cache):
    _, layer = v300
    job = iter_head_stats(layer, budget_bytes=300 * 8 * 20)
    fractions = [next(job).fraction for _ in range(3)]
    assert 0 < fractions[0] < fractions[1] < fractions[2] < 1
    job.close()
    folder = cache / "vocab-stats"
    assert not folder.exists() or not any(folder.iterdir())


def test_progress_reaches_one_and_rows_subset(v300, cache):
    _, layer = v300
    seen = []
    st = run(iter_vocab_pass(layer, rows=[5, 9, 200], budget_bytes=300 * 8 * 8), seen.append)
    assert seen[-1].fraction == 1.0
    assert [p.fraction for p in seen] == sorted(p.fraction for p in seen)
    full = head_stats(layer, use_cache=False)
    computed = st.stats.self_rank[0] > 0
    assert np.flatnonzero(computed).tolist() == [5, 9, 200]
    np.testing.assert_array_equal(st.stats.top_ids[:, computed], full.top_ids[:, computed])
    assert (st.stats.top_ids[:, ~computed] == -1).all()


def test_order_by_variance_and_self_rank(v300, cache):
    _, layer = v300
    st = head_stats(layer, heads=[3])
    by_var = st.order(3)
    assert np.all(np.diff(st.variance[0][by_var]) <= 0)
    by_rank = st.order(3, "self_rank", descending=False)
    assert np.all(np.diff(st.self_rank[0][by_rank]) >= 0)
    with pytest.raises(InputError, match="sort by"):
        st.order(3, "colour")


def test_sorted_matrix_block(v300):
    folder, layer = v300
    S = tee_matrix(raw_model(folder))[2]
    order = np.argsort(-S.var(axis=1), kind="stable")
    srt = -np.sort(-S, axis=1)
    corner = sorted_matrix_block(layer, 2, rows=(0, 20), cols=(0, 30))
    assert corner.row_step == corner.col_step == 1
    np.testing.assert_array_equal(corner.row_ids, order[:20])
    np.testing.assert_allclose(corner.values, srt[order[:20], :30], rtol=1e-9)
    np.testing.assert_allclose(np.take_along_axis(S[order[:20]], corner.key_ids, 1),
                               corner.values, rtol=1e-9)
    whole = sorted_matrix_block(layer, 2, max_rows=40, max_cols=64)
    assert whole.values.shape == (38, 60) and whole.row_step == 8 and whole.col_step == 5
    np.testing.assert_allclose(whole.values, srt[order[::8]][:, ::5], rtol=1e-9)
    with pytest.raises(InputError, match="rows"):
        sorted_matrix_block(layer, 2, rows=(10, 5))


def test_sorted_block_table_lists_every_entry_with_ranks(v300):
    from detokgui.core.token_side.tables import sorted_block_table

    _, layer = v300
    b = sorted_matrix_block(layer, 2, direction="queries", rows=(0, 3), cols=(0, 4))
    header, rows = sorted_block_table(layer, b)
    rows = list(rows)
    assert header == ["head", "variance_rank", "key_id", "key_token", "score_rank",
                      "query_id", "query_token", "t_ee"]
    assert len(rows) == 12 and rows[0][:3] == (2, 1, int(b.row_ids[0]))
    assert rows[5][4:6] == (2, int(b.key_ids[1, 1]))
    assert rows[5][7] == pytest.approx(float(b.values[1, 1]))


def test_sorted_block_levels(v300):
    _, layer = v300
    b = sorted_matrix_block(layer, 1, rows=(0, 10), cols=(0, 12))
    vals = b.values.astype(np.float32)
    assert b.levels() == (pytest.approx(float(np.percentile(vals, 1))),
                          pytest.approx(float(np.percentile(vals, 99.5))))
    b.values = np.full((2, 2), np.nan)
    assert b.levels() == (0.0, 1.0)
    b.values = np.full((2, 2), 3.0)
    assert b.levels() == (3.0, 4.0)


def test_bad_arguments(v300):
    _, layer = v300
    with pytest.raises(InputError, match="direction"):
        run(iter_vocab_pass(layer, direction="sideways"))
    with pytest.raises(InputError, match="Head 9"):
        run(iter_head_stats(layer, heads=[9]))
    with pytest.raises(InputError, match="row tokens"):
        run(iter_vocab_pass(layer, rows=[300]))


def test_model_identity_follows_the_tensors(v300, tmp_path):
    from detokgui.core.model.identity import model_identity

    folder, layer = v300
    again = Layer0.from_pretrained(str(folder), device="cpu", dtype=torch.float64)
    assert model_identity(again) == model_identity(layer)
    as32 = Layer0.from_pretrained(str(folder), device="cpu")
    assert model_identity(as32) != model_identity(layer)
    other = write_random_checkpoint(tmp_path / "o", vocab_size=300, n_embd=32, n_head=4,
                                    n_positions=48, seed=12, tokenizer=False)
    other_layer = Layer0.from_pretrained(str(other), device="cpu", dtype=torch.float64)
    assert model_identity(other_layer) != model_identity(layer)


def test_model_identity_is_the_sha256_of_the_tensors_bytes(v300):
    """The identity (the key of every on-disk cache) is defined on the tensors' bytes:
    hashing their buffers in place must give what hashing copies of them gives."""
    import hashlib

    from detokgui.core.model.identity import model_identity

    _folder, layer = v300
    h = hashlib.sha256(b"detokgui-layer0-v1|")
    h.update(f"{layer.n_heads}|{layer.eps!r}|{layer.dtype}|".encode())
    for t in (layer.E, layer.P, layer.ln1_weight, layer.ln1_bias, layer.qkv_weight,
              layer.qkv_bias):
        h.update(f"{tuple(t.shape)}|{t.dtype}|".encode())
        h.update(t.detach().contiguous().cpu().numpy().tobytes())
    assert model_identity(layer) == h.hexdigest()
