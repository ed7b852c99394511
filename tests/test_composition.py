"""Layer 0 -> layer 1 (`core.model.layer1`, `core.composition`): block 1 is read only when
asked for; the composition scores equal the definition of Elhage et al. 2021 computed on
explicit d x d matrices folded from transformers' own modules, for every family; the
previous-token and induction scores equal those of transformers' whole model; a model with
a single layer says so in one line."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from family_models import SPECS, write

from detokgui.core import InputError, Layer0
from detokgui.core.base.progress import Progress, run
from detokgui.core.composition import behaviour as behaviour_mod
from detokgui.core.composition.behaviour import behaviour_job, repeated_sequences
from detokgui.core.composition.first_two import Layer1Result, Unavailable, first_two_job
from detokgui.core.composition.scores import (
    KINDS,
    baseline,
    composition_job,
    scores_of_factors,
)
from detokgui.core.composition.tables import (
    COMPOSITION_HEADER,
    behaviour_table,
    circuit_rows,
    composition_table,
)
from detokgui.core.model.layer1 import has_layer1, layer1_job

FAMILIES = ("gpt2", "gpt_neo", "opt")


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """{family: (folder, transformers model)} of 2-layer random checkpoints."""
    return {f: write(tmp_path_factory.mktemp(f"comp-{f}"), f, seed=3) for f in FAMILIES}


def _blocks(model):
    """[(gamma, W_Q, W_K, W_V, W_O)] of blocks 0 and 1 in the x @ W layout, read from the
    model's own modules (not through detokgui), and the number of heads."""
    core = model
    for attr in ("transformer", "model", "decoder"):
        core = getattr(core, attr, core)
    core = getattr(core, "decoder", core)
    out = []
    if hasattr(core, "layers"):  # OPT
        for blk in core.layers[:2]:
            a = blk.self_attn
            out.append((blk.self_attn_layer_norm.weight, a.q_proj.weight.T, a.k_proj.weight.T,
                        a.v_proj.weight.T, a.out_proj.weight.T))
        return out, core.layers[0].self_attn.num_heads
    for blk in core.h[:2]:
        if hasattr(blk.attn, "attention"):  # GPT-Neo
            a = blk.attn.attention
            out.append((blk.ln_1.weight, a.q_proj.weight.T, a.k_proj.weight.T,
                        a.v_proj.weight.T, a.out_proj.weight.T))
        else:
            d = blk.ln_1.weight.shape[0]
            W = blk.attn.c_attn.weight
            out.append((blk.ln_1.weight, W[:, :d], W[:, d:2 * d], W[:, 2 * d:],
                        blk.attn.c_proj.weight))
    return out, core.h[0].attn.attention.num_heads if hasattr(core.h[0].attn, "attention") \
        else core.h[0].attn.num_heads


def explicit_scores(model) -> np.ndarray:
    """[3, H, H] Q, K, V composition from explicit d x d matrices: each LayerNorm's gamma
    folded into the matrices that read the stream and their input centred (C diag(gamma) W),
    each W_O's output centred (W_O C): ||W_A W_B||_F / (||W_A||_F ||W_B||_F)."""
    blocks, H = _blocks(model)
    mats = []
    for gamma, Wq, Wk, Wv, Wo in blocks:
        d = Wq.shape[0]
        dh = d // H

        def fold(W, gamma=gamma):
            W = gamma.double()[:, None] * W.double()
            return W - W.mean(dim=0, keepdim=True)

        q, k, v = fold(Wq), fold(Wk), fold(Wv)
        o = Wo.double() - Wo.double().mean(dim=1, keepdim=True)
        heads = range(H)
        sl = [slice(h * dh, (h + 1) * dh) for h in heads]
        mats.append({"QK": [q[:, s] @ k[:, s].T for s in sl],
                     "OV": [v[:, s] @ o[s, :] for s in sl]})
    out = np.zeros((3, H, H))
    with torch.no_grad():
        for h in range(H):
            A = mats[0]["OV"][h]
            for g in range(H):
                for k, B in enumerate((mats[1]["QK"][g], mats[1]["QK"][g].T, mats[1]["OV"][g])):
                    out[k, h, g] = float(torch.linalg.norm(A @ B)
                                         / (torch.linalg.norm(A) * torch.linalg.norm(B)))
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_composition_equals_the_explicit_definition(checkpoints, family):
    folder, model = checkpoints[family]
    layer = Layer0.from_pretrained(str(folder), device="cpu")
    assert not has_layer1(layer)  # loading layer 0 reads nothing of block 1
    messages = []
    comp = run(composition_job(layer), lambda p: messages.append(p))
    assert has_layer1(layer) and messages and all(isinstance(p, Progress) for p in messages)
    np.testing.assert_allclose(comp.scores, explicit_scores(model), rtol=1e-6, atol=1e-9)
    # kept on the layer: a second job yields nothing and returns the same object
    again = composition_job(layer)
    with pytest.raises(StopIteration) as stop:
        next(again)
    assert stop.value.value is comp


def test_composition_table_rows(checkpoints):
    layer = Layer0.from_pretrained(str(checkpoints["gpt2"][0]), device="cpu")
    comp = run(composition_job(layer))
    header, rows = composition_table(comp)
    rows = list(rows)
    H = layer.n_heads
    assert header == COMPOSITION_HEADER
    assert len(rows) == 3 * H * H
    assert {r[2] for r in rows} == set(KINDS)
    h0, h1, kind, score, mean, hi = rows[H + 2]  # Q, layer-0 head 1, layer-1 head 2
    assert (h0, h1, kind) == (1, 2, "Q") and score == pytest.approx(comp.scores[0, 1, 2])
    assert (mean, hi) == (comp.baseline_mean, comp.baseline_hi) and mean < hi


def test_baseline_equals_explicit_random_matrices():
    """The baseline's factor formula equals the score of the d x d products of the same
    seeded Gaussian draws, and its band holds its mean."""
    d, dh, n = 12, 3, 40
    mean, lo, hi = baseline(d, dh, samples=n, seed=5)
    g = torch.Generator().manual_seed(5)
    A, X = (torch.randn(n, d, dh, generator=g, dtype=torch.float64) for _ in range(2))
    B, Y = (torch.randn(n, dh, d, generator=g, dtype=torch.float64) for _ in range(2))
    direct = []
    for i in range(n):
        L, R = A[i] @ B[i], X[i] @ Y[i]
        direct.append(float(torch.linalg.norm(L @ R) / (torch.linalg.norm(L)
                                                        * torch.linalg.norm(R))))
    assert mean == pytest.approx(np.mean(direct), rel=1e-9)
    assert hi == pytest.approx(np.percentile(direct, 97.5), rel=1e-9)
    assert lo < mean < hi
    one = scores_of_factors(A[:1], B[:1], X[:1], Y[:1])
    assert float(one[0, 0]) == pytest.approx(direct[0], rel=1e-9)


def _oracle_behaviour(model, ids, start, length):
    """(previous-token [2, H], induction [2, H]) from transformers' whole model, a loop
    over the query positions."""
    with torch.no_grad():
        att = model(input_ids=ids, output_attentions=True).attentions
    prev, ind = [], []
    T = ids.shape[1]
    for a in att[:2]:
        prev.append(np.mean([a[:, :, i, i - 1].double().mean(0).numpy()
                             for i in range(start + 1, T)], axis=0))
        ind.append(np.mean([a[:, :, i, i - length + 1].double().mean(0).numpy()
                            for i in range(start + length, T)], axis=0))
    return np.array(prev), np.array(ind)


@pytest.mark.parametrize("family", FAMILIES)
def test_behaviour_equals_the_whole_model(checkpoints, family):
    folder, model = checkpoints[family]
    layer = Layer0.from_pretrained(str(folder), device="cpu")
    beh = run(behaviour_job(layer, sequences=5, length=9, seed=2))
    ids, start = repeated_sequences(layer, 5, 9, 2)
    assert start == 1 and torch.equal(ids[:, 1:10], ids[:, 10:19])
    prev, ind = _oracle_behaviour(model, ids, start, 9)
    np.testing.assert_allclose(beh.previous_token, prev, atol=1e-5)
    np.testing.assert_allclose(beh.induction, ind, atol=1e-5)
    header, rows = behaviour_table(beh)
    assert header == ["layer", "head", "measure", "score"]
    assert len(list(rows)) == 2 * 2 * layer.n_heads
    assert len(circuit_rows(run(composition_job(layer)), beh)) == layer.n_heads


def test_single_layer_model_says_so(tmp_path):
    folder, _ = write(tmp_path / "one", "opt_no_bias")
    assert SPECS["opt_no_bias"][1]["num_hidden_layers"] == 1
    layer = Layer0.from_pretrained(str(folder), device="cpu")
    for job in (composition_job(layer), behaviour_job(layer, sequences=2, length=4)):
        with pytest.raises(InputError) as err:
            run(job)
        assert "single layer" in str(err.value) and "\n" not in str(err.value)


def test_first_two_job_gives_both_or_why_not(checkpoints, tmp_path):
    layer = Layer0.from_pretrained(str(checkpoints["gpt2"][0]), device="cpu")
    res = run(first_two_job(layer, 2, True))
    assert isinstance(res, Layer1Result) and res.behaviour.induction.shape[1] == layer.n_heads
    folder, _ = write(tmp_path / "one", "opt_no_bias")
    single = run(first_two_job(Layer0.from_pretrained(str(folder), device="cpu"), 2, True))
    assert isinstance(single, Unavailable) and "has a single layer" in single.message
    unknown = Layer0.from_pretrained(str(checkpoints["opt"][0]), device="cpu")
    unknown.source = None
    assert "does not know where its block 1 is" in run(first_two_job(unknown, 2, True)).message


def test_layer_built_from_tensors_says_where_block1_is_unknown(checkpoints):
    layer = Layer0.from_pretrained(str(checkpoints["gpt2"][0]), device="cpu")
    moved = layer.to("cpu")
    assert moved.source == layer.source
    layer.source = None
    with pytest.raises(InputError, match="does not know where its block 1 is"):
        run(layer1_job(layer))


def test_bad_sequence_choices_are_one_line(checkpoints):
    layer = Layer0.from_pretrained(str(checkpoints["gpt2"][0]), device="cpu")
    for kwargs, words in (({"sequences": 0}, "at least 1"), ({"length": 1000}, "positions")):
        with pytest.raises(InputError, match=words) as err:
            behaviour_job(layer, **kwargs)
        assert "\n" not in str(err.value)
    assert behaviour_mod.default_length(layer) == min(50, (layer.n_positions - 1) // 2)


@pytest.mark.parametrize("family", FAMILIES)
def test_composition_equals_transformer_lens(checkpoints, family, monkeypatch):
    """TransformerLens's all_composition_scores on the same checkpoint, its LayerNorms
    folded and writing weights centred (`enable_compatibility_mode`), layer 0 x layer 1."""
    bridge_mod = pytest.importorskip(
        "transformer_lens.model_bridge",
        reason="transformer_lens is not installed (pip install -e '.[tl]')")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder, _ = checkpoints[family]
    bridge = bridge_mod.TransformerBridge.boot_transformers(str(folder), device="cpu")
    bridge.enable_compatibility_mode(disable_warnings=True)
    theirs = np.stack([bridge.all_composition_scores(k).scores[0, :, 1, :].detach().double()
                       .numpy() for k in KINDS])
    comp = run(composition_job(Layer0.from_pretrained(str(folder), device="cpu")))
    np.testing.assert_allclose(comp.scores, theirs, atol=1e-4, rtol=0)
