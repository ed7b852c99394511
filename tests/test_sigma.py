import torch

from detokgui.core.model import sigma


def test_sigma_table_equals_direct_computation(tiny_layer):
    stats = tiny_layer.sigma_stats()
    S = stats.table
    assert S.shape == (tiny_layer.n_vocab, tiny_layer.n_positions)
    g = torch.Generator().manual_seed(0)
    v = torch.randint(0, tiny_layer.n_vocab, (500,), generator=g)
    j = torch.randint(0, tiny_layer.n_positions, (500,), generator=g)
    x = tiny_layer.E[v] + tiny_layer.P[j]
    direct = torch.sqrt(x.var(dim=1, unbiased=False) + tiny_layer.eps)
    torch.testing.assert_close(S[v, j], direct, rtol=1e-5, atol=1e-6)


def test_summaries(tiny_layer):
    stats = tiny_layer.sigma_stats()
    S = stats.table.double()
    torch.testing.assert_close(stats.pos_mean.double(), S.mean(0), rtol=1e-5, atol=0)
    assert torch.equal(stats.pos_max, stats.table.amax(0))
    assert torch.equal(stats.pos_min, stats.table.amin(0))
    torch.testing.assert_close(stats.tok_mean.double(), S.mean(1), rtol=1e-5, atol=0)
    assert stats.position_sigma("none") is None
    assert stats.position_sigma("max") is stats.pos_max


def test_table_is_cached_and_chunking_does_not_matter(tiny_layer):
    assert tiny_layer.sigma_table() is tiny_layer.sigma_table()
    from detokgui.core.base.progress import run

    seen = []
    small = run(sigma.iter_sigma_stats(tiny_layer, rows_per_chunk=7000), seen.append)
    assert len(seen) == -(-tiny_layer.n_vocab // 7000) and seen[-1].fraction == 1.0
    torch.testing.assert_close(small.table, tiny_layer.sigma_table())


def test_tokens_at_position(tiny_layer):
    col = sigma.tokens_at_position(tiny_layer, 5)
    torch.testing.assert_close(col, tiny_layer.sigma_table()[:, 5], rtol=1e-5, atol=1e-6)
