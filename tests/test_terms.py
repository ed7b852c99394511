"""The decomposition against the model's own forward pass."""

import pytest
import torch
from conftest import model_attention

from detokgui.core import InputError, Layer0
from detokgui.core.model.sources.demo import write_random_checkpoint
from detokgui.core.model.terms import TERM_NAMES, query_constants


def _raw_qk(model, ids):
    """q_i . k_j straight from the model's own modules (no scaling), [H, n, n]."""
    base = getattr(model, "transformer", model)
    n = len(ids)
    with torch.no_grad():
        x = base.wte.weight[ids] + base.wpe.weight[:n]
        blk = base.h[0]
        q, k, _ = blk.attn.c_attn(blk.ln_1(x)).split(blk.attn.split_size, dim=-1)
        H = blk.attn.num_heads
        q = q.view(n, H, -1).transpose(0, 1)
        k = k.view(n, H, -1).transpose(0, 1)
        return q @ k.transpose(1, 2)


def _ids(layer, n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, layer.n_vocab, (n,), generator=g).tolist()


def test_attention_matches_model_tiny(tiny_ckpt, tiny_layer, hf_eager):
    model = hf_eager(tiny_ckpt)
    text = " North Korea and South Korea share a border. Albert Einstein was born in Ulm."
    ids = tiny_layer.tokenizer.encode(text)
    ours = tiny_layer.attention(ids)
    theirs = model_attention(model, ids)
    assert ours.shape == theirs.shape == (4, len(ids), len(ids))
    assert (ours - theirs).abs().max().item() < 1e-5
    assert torch.all(ours.triu(1) == 0)
    torch.testing.assert_close(ours.sum(-1), torch.ones(4, len(ids)))


def test_six_terms_plus_dropped_constants_are_raw_scores(tiny_ckpt, tiny_layer, hf_eager):
    model = hf_eager(tiny_ckpt)
    ids = _ids(tiny_layer, 90, seed=3)
    terms = tiny_layer.six_terms(ids)
    assert set(terms) == set(TERM_NAMES)
    for t in terms.values():
        assert t.shape == (4, 90, 90)
    total = sum(terms.values()) + query_constants(tiny_layer, ids)
    raw = _raw_qk(model, ids)
    tri = torch.ones(90, 90, dtype=torch.bool).tril()
    assert (total - raw)[:, tri].abs().max().item() < 1e-4 * raw.abs().max().item()


def test_key_only_terms_repeat_along_queries(tiny_layer):
    terms = tiny_layer.six_terms(_ids(tiny_layer, 20))
    for name in ("e", "p"):
        t = terms[name]
        assert torch.equal(t, t[:, :1, :].expand_as(t))


def test_each_term_matches_its_definition(tiny_layer):
    """Spot-check each term against docs/math/terms.md#the-six-terms with the d x d W^QK formed
    explicitly."""
    L = tiny_layer
    ids = _ids(L, 12, seed=5)
    terms = L.six_terms(ids)
    x = L.E[ids] + L.P[:12]
    s = torch.sqrt(x.var(-1, unbiased=False) + L.eps)
    h, i, j = 2, 9, 4
    WQK = L.Wq[h] @ L.Wk[h].T
    e_i, e_j, p_i, p_j = L.E[ids[i]], L.E[ids[j]], L.P[i], L.P[j]
    expect = {
        "ee": e_i @ WQK @ e_j / (s[i] * s[j]),
        "pp": p_i @ WQK @ p_j / (s[i] * s[j]),
        "pe": p_i @ WQK @ e_j / (s[i] * s[j]),
        "ep": e_i @ WQK @ p_j / (s[i] * s[j]),
        "e": L.bQK[h] @ e_j / s[j],
        "p": L.bQK[h] @ p_j / s[j],
    }
    for name, value in expect.items():
        torch.testing.assert_close(terms[name][h, i, j], value, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "shape",
    [
        {"n_embd": 48, "n_head": 3, "n_positions": 40},
        {"n_embd": 96, "n_head": 6, "n_positions": 256},
        {"n_embd": 80, "n_head": 5, "n_positions": 64, "vocab_size": 50300},
    ],
)
def test_other_shapes_and_bare_keys(tmp_path, hf_eager, shape):
    prefixed = shape["n_head"] != 6
    folder = write_random_checkpoint(tmp_path, seed=7, prefixed=prefixed, **shape)
    layer = Layer0.from_pretrained(str(folder), device="cpu")
    assert layer.n_heads == shape["n_head"] and layer.n_positions == shape["n_positions"]
    ids = _ids(layer, shape["n_positions"], seed=1)
    ours = layer.attention(ids)
    theirs = model_attention(hf_eager(folder, prefixed), ids)
    assert (ours - theirs).abs().max().item() < 1e-5


def test_bin_checkpoint(tmp_path, hf_eager):
    folder = write_random_checkpoint(tmp_path, seed=9, weight_format="bin", n_positions=32)
    assert not (folder / "model.safetensors").exists()
    layer = Layer0.from_pretrained(str(folder), device="cpu")
    ids = _ids(layer, 32)
    theirs = model_attention(hf_eager(folder), ids)
    assert (layer.attention(ids) - theirs).abs().max().item() < 1e-5


def test_from_model_equals_from_pretrained(tiny_ckpt, tiny_layer, hf_eager):
    layer = Layer0.from_model(hf_eager(tiny_ckpt))
    ids = _ids(tiny_layer, 50)
    torch.testing.assert_close(layer.attention(ids), tiny_layer.attention(ids))


@pytest.mark.slow
def test_gpt2_small_shape_full_context(small_ckpt, hf_eager):
    layer = Layer0.from_pretrained(str(small_ckpt), device="cpu")
    assert (layer.n_heads, layer.d, layer.n_positions, layer.n_vocab) == (12, 768, 1024, 50257)
    ids = _ids(layer, 1024, seed=11)
    theirs = model_attention(hf_eager(small_ckpt), ids)
    ours = layer.attention(ids)
    assert (ours - theirs).abs().max().item() < 1e-5


def test_too_long_empty_and_out_of_vocab(tiny_layer):
    with pytest.raises(InputError, match="more than the model's 128 positions"):
        tiny_layer.attention([1] * 129)
    with pytest.raises(InputError, match="empty"):
        tiny_layer.six_terms([])
    with pytest.raises(InputError, match="outside the vocabulary"):
        tiny_layer.attention([1, 2, tiny_layer.n_vocab])
