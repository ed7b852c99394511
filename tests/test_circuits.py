"""The contextual circuit, its neurons and the OV circuit (C5) against explicit
computations from the raw checkpoint tensors, and against the model's own forward pass."""

import numpy as np
import pytest
import torch
from conftest import SAMPLE_CORPUS

from detokgui.core import InputError, Layer0
from detokgui.core.position_side.positional import classify_heads, positional_pattern
from detokgui.core.text_side import circuits as ci
from detokgui.core.text_side.empirical import TextSource

CORPUS = str(SAMPLE_CORPUS)
DEMO = "demo"  # the trained demo model shipped inside the package


class Raw:
    """Layer-0 tensors straight from the HF model (no folding), float64."""

    def __init__(self, model, layer):
        base = model.transformer
        blk = base.h[0]
        self.E = base.wte.weight.detach().double()
        self.P = base.wpe.weight.detach().double()
        self.g1, self.b1 = blk.ln_1.weight.detach().double(), blk.ln_1.bias.detach().double()
        W = blk.attn.c_attn.weight.detach().double()
        b = blk.attn.c_attn.bias.detach().double()
        d = self.E.shape[1]
        self.H = blk.attn.num_heads
        self.dh = d // self.H
        self.WQ, self.WK, self.WV = W[:, :d], W[:, d:2 * d], W[:, 2 * d:]
        self.bQ, self.bK, self.bV = b[:d], b[d:2 * d], b[2 * d:]
        self.WO = blk.attn.c_proj.weight.detach().double()
        self.bO = blk.attn.c_proj.bias.detach().double()
        self.blk = blk
        st = layer.sigma_stats()
        self.s_tok = st.tok_mean.double()  # mean_j sigma(e_x + p_j)
        self.s_pos = st.pos_mean.double()  # mean_v sigma(e_v + p_n)

    def cols(self, h):
        return slice(h * self.dh, (h + 1) * self.dh)

    def token_part(self, x):
        """(e_x - mean e_x) / s_x * gamma_1 for token ids x, [n, d]."""
        e = self.E[x]
        return (e - e.mean(-1, keepdim=True)) / self.s_tok[x, None] * self.g1

    def log_f(self, h, position=None):
        """log f_h(x) for all x: (T_pe + T_e) / sqrt(d') with the query's position part
        averaged over positions (or at `position`)."""
        P = self.P
        pos = (P - P.mean(-1, keepdim=True)) / self.s_pos[:, None] * self.g1 + self.b1
        q = pos @ self.WQ[:, self.cols(h)] + self.bQ[self.cols(h)]  # [L, d']
        qbar = q.mean(0) if position is None else q[position]
        k = self.token_part(torch.arange(self.E.shape[0])) @ self.WK[:, self.cols(h)]
        return k @ qbar / self.dh**0.5

    def head_value(self, h, x):
        """(e_x / s_x) W^VO_h with ln_1 applied to the token alone, [n, d]."""
        return (self.token_part(x) @ self.WV[:, self.cols(h)]) @ self.WO[self.cols(h)]

    def ext(self, heads, norms, x):
        return sum(torch.exp(self.log_f(h)[x])[:, None] / n * self.head_value(h, x)
                   for h, n in zip(heads, norms))


@pytest.fixture(scope="module")
def model(tiny_ckpt, hf_eager):
    return hf_eager(tiny_ckpt)


@pytest.fixture(scope="module")
def raw(model, tiny_layer):
    return Raw(model, tiny_layer)


def test_content_factor_is_the_token_terms(tiny_layer, raw):
    cf = ci.content_factor(tiny_layer)
    assert cf.log_f.shape == (4, tiny_layer.n_vocab) and cf.position is None
    for h in range(4):
        np.testing.assert_allclose(cf.log_f[h], raw.log_f(h).numpy(), atol=2e-5, rtol=1e-4)
    at = ci.content_factor(tiny_layer, heads=[2], position=77)
    np.testing.assert_allclose(at.log_f[0], raw.log_f(2, 77).numpy(), atol=2e-5, rtol=1e-4)
    assert np.allclose(at.f, np.exp(at.log_f))


def test_extended_embeddings_and_neuron_contributions(tiny_layer, raw):
    heads, norms = [0, 3], [1.7, 0.6]
    circuit = ci.contextual_circuit(tiny_layer, heads, norms)
    assert circuit.heads == heads and np.allclose(circuit.norms, norms)
    assert "given values" in circuit.label()
    x = torch.tensor([0, 11, 464, 13, 50256, 31373])
    ext = ci.extended_embeddings(tiny_layer, circuit, x).double()
    expect = raw.ext(heads, norms, x)
    torch.testing.assert_close(ext, expect, atol=1e-5, rtol=1e-4)
    g2 = raw.blk.ln_2.weight.detach().double()
    W_fc = raw.blk.mlp.c_fc.weight.detach().double()
    for m in (0, 37, 255):
        c = ci.neuron_contributions(tiny_layer, circuit, m)
        assert c.shape == (tiny_layer.n_vocab,)
        direct = ((expect - expect.mean(-1, keepdim=True)) * g2) @ W_fc[:, m]
        np.testing.assert_allclose(c[x.numpy()], direct.numpy(), atol=1e-5, rtol=1e-4)
    with pytest.raises(InputError, match="Neuron 256 is outside"):
        ci.neuron_contributions(tiny_layer, circuit, 256)
    with pytest.raises(InputError, match="one positive normalisation factor per head"):
        ci.contextual_circuit(tiny_layer, heads, [1.0])


def test_default_heads_are_the_b4_contextual_ones(tiny_layer):
    labels = classify_heads(tiny_layer).labels
    want = [h for h, lab in enumerate(labels) if lab == "contextual"]
    assert ci.contextual_heads(tiny_layer) == want
    if want:
        circuit = ci.contextual_circuit(tiny_layer)
        assert circuit.heads == want and "vocabulary mean" in circuit.norm_source
        log_f = ci.content_factor(tiny_layer, want).log_f
        np.testing.assert_allclose(circuit.norms, np.exp(log_f).mean(1), rtol=1e-5)


def test_neuron_ranking_by_contextual_size(tiny_layer):
    circuit = ci.contextual_circuit(tiny_layer, [1, 2], [0.9, 1.3])
    rk = ci.rank_neurons(tiny_layer, circuit, top=4, k=5)
    assert rk.size.shape == (256,) and sorted(rk.order.tolist()) == list(range(256))
    assert np.all(np.diff(rk.size[rk.order]) <= 0)
    for r, m in enumerate(rk.top_neurons.tolist()):
        c = ci.neuron_contributions(tiny_layer, circuit, m)
        assert rk.size[m] == pytest.approx(c.std(), rel=1e-4)
        assert rk.mean[m] == pytest.approx(c.mean(), rel=1e-4, abs=1e-6)
        assert rk.top_ids[r].tolist() == np.argsort(-c)[:5].tolist()
        assert rk.bottom_ids[r].tolist() == np.argsort(c)[:5].tolist()
        np.testing.assert_allclose(rk.top_values[r], np.sort(c)[::-1][:5], rtol=1e-4)
    m = int(rk.order[-1])
    assert rk.size[m] == pytest.approx(ci.neuron_contributions(tiny_layer, circuit, m).std(),
                                       rel=1e-3, abs=1e-7)
    nt = ci.neuron_tokens(tiny_layer, circuit, rk.top_neurons[0], k=5)
    assert nt.top_ids.tolist() == rk.top_ids[0].tolist()


def test_predicted_preactivations_are_the_bag_of_tokens(tiny_layer, raw):
    heads, norms = [0, 3], [1.2, 0.8]
    circuit = ci.contextual_circuit(tiny_layer, heads, norms)
    ids = [464, 3290, 11, 290, 262, 3797, 13, 383, 4171, 318, 257, 1492]
    n = len(ids)
    x = torch.tensor(ids)
    ext_h = {h: torch.exp(raw.log_f(h)[x])[:, None] / nm * raw.head_value(h, x)
             for h, nm in zip(heads, norms)}
    bVO = (raw.b1 @ raw.WV + raw.bV) @ raw.WO + raw.bO
    rows = []
    for i in range(n):
        r = raw.E[ids[i]] + raw.P[i] + bVO
        pat = positional_pattern(tiny_layer, ids[i], i, heads, "mean-sigma").pattern
        for k, h in enumerate(heads):
            r = r + torch.from_numpy(pat[k]).double() @ ext_h[h][: i + 1]
        rows.append(r)
    with torch.no_grad():
        expect = raw.blk.mlp.c_fc(raw.blk.ln_2(torch.stack(rows).float()))
    got = ci.predicted_preactivations(tiny_layer, circuit, ids)
    torch.testing.assert_close(got, expect, atol=1e-4, rtol=1e-4)
    some = ci.predicted_preactivations(tiny_layer, circuit, ids, [5, 200])
    torch.testing.assert_close(some, got[:, [5, 200]])


def test_validation_uses_the_real_forward_pass(tiny_layer, model):
    circuit = ci.contextual_circuit(tiny_layer, [0, 3], [1.0, 1.0])
    texts = TextSource.corpus(CORPUS, max_texts=4)
    val = ci.neuron_validation(tiny_layer, circuit, [7, 100], texts, max_points=10**6)
    windows = [w.tolist() for w, _ in texts.iterate(tiny_layer)]
    seen = []
    hook = model.transformer.h[0].mlp.c_fc.register_forward_hook(
        lambda mod, args, out: seen.append(out[0]))
    try:
        with torch.no_grad():
            for w in windows:
                model(torch.tensor([w]))
    finally:
        hook.remove()
    actual = torch.cat(seen)[:, [7, 100]].T.numpy()
    assert val.points == actual.shape[1] == sum(map(len, windows)) and val.texts == 4
    np.testing.assert_allclose(val.actual, actual, atol=1e-4)
    pred = np.concatenate([ci.predicted_preactivations(tiny_layer, circuit, w, [7, 100])
                           .numpy() for w in windows]).T
    np.testing.assert_allclose(val.predicted, pred, atol=1e-5)
    for r in range(2):
        assert val.correlation[r] == pytest.approx(np.corrcoef(pred[r], actual[r])[0, 1],
                                                   abs=1e-6)
    few = ci.neuron_validation(tiny_layer, circuit, 7, texts, max_points=50)
    assert few.predicted.shape == (1, 50) and few.points == val.points
    assert few.correlation[0] == pytest.approx(val.correlation[0])


def test_normalisation_by_brute_force(tiny_layer):
    heads = [1, 3]
    windows = [[int(t) for t in torch.randint(0, 50257, (n,), generator=torch.Generator()
                                              .manual_seed(n))] for n in (9, 6, 9)]
    res = ci.normalisation(tiny_layer, TextSource.tokens(windows), heads)
    f = np.exp(ci.content_factor(tiny_layer, heads).log_f)
    N = np.full((3, 2, tiny_layer.n_positions), np.nan)
    for t, w in enumerate(windows):
        for i in range(len(w)):
            pat = positional_pattern(tiny_layer, w[i], i, heads, "mean-sigma").pattern
            N[t, :, i] = (pat * f[:, w[: i + 1]]).sum(1)
    np.testing.assert_allclose(res.median[:, :6], np.median(N[:, :, :6], axis=0), rtol=1e-4)
    np.testing.assert_allclose(res.median[:, 6:9], np.median(N[[0, 2], :, 6:9], axis=0),
                               rtol=1e-4)
    assert res.texts[:10].tolist() == [3] * 6 + [2] * 3 + [0]
    assert np.isnan(res.median[:, 9:]).all()
    vals = [N[:, r][~np.isnan(N[:, r])] for r in range(2)]
    np.testing.assert_allclose(res.norm, [np.median(v) for v in vals], rtol=1e-4)
    q = [np.quantile(v, [0.25, 0.75]) for v in vals]
    np.testing.assert_allclose(res.spread, [(b - a) / np.median(v) for (a, b), v in
                                            zip(q, vals)], rtol=1e-3)


def test_ov_circuit_through_ln_f(tiny_ckpt, raw):
    layer = Layer0.from_pretrained(str(tiny_ckpt), device="cpu")
    gf = torch.rand(layer.d, generator=torch.Generator().manual_seed(3)) + 0.5
    layer.lnf_weight = gf
    x, y = 31373, 2159
    out = ci.ov_scores(layer, x, "outputs")
    assert out.shape == (4, layer.n_vocab)
    for h in range(4):
        u = raw.head_value(h, torch.tensor([x]))[0]
        expect = ((u - u.mean()) * gf.double()) @ raw.E.T
        torch.testing.assert_close(out[h].double(), expect, atol=1e-4, rtol=1e-4)
    src = ci.ov_scores(layer, y, "sources", heads=[2])
    assert src[0, x] == pytest.approx(float(out[2, y]), rel=1e-4, abs=1e-5)
    u_all = raw.head_value(2, torch.arange(layer.n_vocab))
    ey = raw.E[y] * gf.double()
    torch.testing.assert_close(src[0].double(), u_all @ (ey - ey.mean()), atol=1e-4, rtol=1e-4)
    top = ci.ov_topk(layer, x, "outputs", heads=[1, 2], k=6)
    assert top.top_ids[1].tolist() == torch.topk(out[2], 6).indices.tolist()
    assert top.bottom_ids[0].tolist() == torch.topk(-out[1], 6).indices.tolist()
    assert "gamma" in top.final_norm
    layer.lnf_weight = None
    assert "no ln_f" in ci.ov_topk(layer, x, heads=[0]).final_norm
    with pytest.raises(InputError, match="direction"):
        ci.ov_scores(layer, x, "both")


# --------------------------------------------------------------------------- demo model


@pytest.fixture(scope="module")
def demo_layer():
    return Layer0.from_pretrained(DEMO, device="cpu")


def test_demo_contextual_heads_have_stable_normalisation(demo_layer):
    """What makes a head contextual in the study: its normalisation factor hardly depends
    on the text. On the demo model the heads B4 calls contextual spread less than the
    recent-token heads; their bag of tokens predicts the top contextual neurons."""
    labels = classify_heads(demo_layer).labels
    ctx = [h for h, lab in enumerate(labels) if lab == "contextual"]
    detok = [h for h, lab in enumerate(labels) if lab == "detokenization"]
    assert ctx == [0, 1, 3, 4]
    texts = TextSource.corpus(CORPUS, max_texts=60)
    norm = ci.normalisation(demo_layer, texts)
    assert max(norm.spread[ctx]) < min(norm.spread[detok])
    circuit = ci.contextual_circuit(demo_layer, ctx, norm.norm[ctx], norm_source="corpus")
    rk = ci.rank_neurons(demo_layer, circuit, top=3, k=5)
    val = ci.neuron_validation(demo_layer, circuit, rk.top_neurons.tolist(), texts)
    assert val.points > 5000
    assert np.all(val.correlation > 0.5)
