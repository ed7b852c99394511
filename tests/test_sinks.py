"""Attention sinks in layer 0 (core.text_side.sinks) against the model's own forward pass:
transformers' attention probabilities are the oracle for the attention to position 0, and
the model's own q . k scores for the logit advantage that the six terms split."""

import math

import numpy as np
import pytest
import torch
from family_models import SPECS, attention, raw_scores, write

from detokgui.core import InputError, Layer0
from detokgui.core.model.terms import TERM_NAMES, six_terms
from detokgui.core.model.tokens import bos_id
from detokgui.core.text_side import sinks as sk
from detokgui.core.text_side.empirical import TextSource


@pytest.fixture(scope="module", params=sorted(SPECS))
def family(request, tmp_path_factory):
    """(spec name, the transformers model, the layer loaded from its folder)."""
    name = request.param
    folder, model = write(tmp_path_factory.mktemp(name), name, seed=5)
    return name, model, Layer0.from_pretrained(str(folder), device="cpu")


def _ids(layer, n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, layer.n_vocab, (n,), generator=g).tolist()


def test_attention_to_position_0_is_the_models_own(family):
    _, model, layer = family
    ids = _ids(layer, layer.n_positions, seed=1)
    sp = sk.sink_split(layer, ids)
    theirs = attention(model, ids)[:, :, 0]
    assert sp.attention.shape == theirs.shape
    assert (sp.attention - theirs).abs().max().item() < 1e-5


def test_the_six_advantages_sum_to_the_models_logit_advantage(family):
    """A_i = s_{i,0} - sum_{j>=1} w_ij s_ij from the model's own scores q_i . k_j (the
    query-side constants the six terms drop cancel, as the w_ij sum to one) and its own
    attention for the weights; the six A^X_i sum to it."""
    _, model, layer = family
    n = min(33, layer.n_positions)
    ids = _ids(layer, n, seed=2)
    raw = raw_scores(model, ids)
    att = attention(model, ids)
    sp = sk.sink_split(layer, ids)
    for i in (1, 2, n // 2, n - 1):
        w = att[:, i, 1:i + 1] / att[:, i, 1:i + 1].sum(-1, keepdim=True)
        want = raw[:, i, 0] - (w * raw[:, i, 1:i + 1]).sum(-1)
        got = sp.advantage[:, :, i].sum(1)
        scale = raw[:, i, :i + 1].abs().max().item()
        assert (got - want).abs().max().item() < 1e-4 * scale, i
    assert torch.isnan(sp.advantage[:, :, 0]).all()
    assert torch.equal(sp.attention[:, 0], torch.ones(layer.n_heads))


def test_each_term_is_its_value_at_0_minus_its_weighted_mean(tiny_layer, monkeypatch):
    """Every A^X_i against the [n, n] term matrices; blocks of query rows (here 7 rows)
    give what one block gives."""
    ids = _ids(tiny_layer, 40, seed=3)
    terms = six_terms(tiny_layer, ids)
    att = tiny_layer.attention(ids)
    whole = sk.sink_split(tiny_layer, ids, heads=[2, 0])
    monkeypatch.setattr(sk, "SINK_BLOCK_ROWS", 7)
    blocked = sk.sink_split(tiny_layer, ids, heads=[2, 0])
    assert torch.allclose(blocked.advantage, whole.advantage, atol=1e-5, equal_nan=True)
    for r, h in enumerate([2, 0]):
        for i in range(1, 40):
            w = att[h, i, 1:i + 1] / att[h, i, 1:i + 1].sum()
            for x, name in enumerate(TERM_NAMES):
                t = terms[name][h, i, :i + 1]
                want = float(t[0] - (w * t[1:]).sum())
                assert abs(float(whole.advantage[r, x, i]) - want) < 1e-4 * (
                    1 + float(t.abs().max())), (h, i, name)


def test_advantage_entropy_and_attention_agree(tiny_layer):
    """tau log(alpha_0 / (1 - alpha_0)) = A_i - tau H(w_i): the split and the attention are
    one quantity seen two ways."""
    ids = _ids(tiny_layer, tiny_layer.n_positions, seed=4)
    sp = sk.sink_split(tiny_layer, ids)
    tau = tiny_layer.temperature
    a0 = sp.attention[:, 1:].double()
    lhs = tau * torch.log(a0 / (1 - a0))
    rhs = sp.total[:, 1:].double() - tau * sp.entropy[:, 1:].double()
    assert (lhs - rhs).abs().max().item() < 1e-3 * (1 + rhs.abs().max().item())


def test_profile_averages_the_texts(tiny_layer):
    wins = [_ids(tiny_layer, n, seed=10 + n) for n in (30, 12, 1, 30)]
    prof = sk.sinks(tiny_layer, TextSource.tokens(wins), heads=[1, 3])
    assert prof.n_texts == 4 and prof.n == 30
    assert prof.texts[:12].tolist() == [3] * 12 and prof.texts[12:].tolist() == [2] * 18
    splits = [sk.sink_split(tiny_layer, w, [1, 3]) for w in wins if len(w) > 1]
    i = 20
    want = np.mean([s.attention[:, i].numpy() for s in splits if s.attention.shape[1] > i], 0)
    assert np.allclose(prof.attention[:, i], want, atol=1e-6)
    pairs = [(s, j) for s in splits for j in range(1, s.attention.shape[1])]
    head_adv = np.mean([s.advantage[:, :, j].double().numpy() for s, j in pairs], 0)
    assert np.allclose(prof.head_advantage, head_adv, atol=1e-5)
    assert prof.sink_term(3) == TERM_NAMES[int(np.argmax(head_adv[1]))]
    assert prof.uniform == pytest.approx(np.mean([1 / (j + 1) for _, j in pairs]))
    assert np.isnan(prof.advantage[..., 0]).all()
    terms = prof.position_terms()
    assert terms[:, 0].tolist() == [-1, -1]
    assert terms[0, 5] == int(np.argmax(prof.advantage[0, :, 5]))
    assert not prof.bos


def test_sample_texts_are_seeded_and_can_start_with_bos(tiny_layer):
    a = sk.SampleTexts(n_texts=3, length=20, seed=7)
    assert a.windows(tiny_layer) == sk.SampleTexts(3, 20, 7).windows(tiny_layer)
    assert a.windows(tiny_layer) != sk.SampleTexts(3, 20, 8).windows(tiny_layer)
    wins = sk.SampleTexts(3, 20, 7, prepend_bos=True).windows(tiny_layer)
    bos = bos_id(tiny_layer.tokenizer)
    assert [w[0] for w in wins] == [bos] * 3 and {len(w) for w in wins} == {20}
    long = sk.SampleTexts(1, 10_000).windows(tiny_layer)
    assert len(long[0]) == tiny_layer.n_positions
    prof = sk.sinks(tiny_layer, sk.SampleTexts(2, 16, prepend_bos=True))
    assert prof.bos and "BOS prepended" in prof.source and prof.n == 16


def test_bad_input_is_one_line(tiny_layer):
    with pytest.raises(InputError, match="two tokens or more"):
        sk.sinks(tiny_layer, TextSource.tokens([[5], [7]]))
    with pytest.raises(InputError, match="text length"):
        sk.SampleTexts(length=1)
    with pytest.raises(InputError, match="number of texts"):
        sk.SampleTexts(n_texts=0)


def test_temperature_is_the_models(family):
    name, _, layer = family
    prof = sk.sinks(layer, sk.SampleTexts(1, 8))
    assert prof.temperature == (1.0 if name == "gpt_neo" else math.sqrt(layer.d_head))


# --------------------------------------------------------------------------- export, dg


def test_export_sinks_is_the_models_attention_over_the_corpus(tiny_ckpt, tiny_layer,
                                                               hf_eager, tmp_path, capsys):
    """`export sinks --corpus` over the first windows of the sample corpus (cut here, BOS
    prepended): attention_to_0 is the mean of the model's own attention over the windows
    longer than i; the six adv_ columns sum to `advantage`."""
    from conftest import model_attention
    from test_cli_text import CORPUS, first_windows, in_process

    out = tmp_path / "s.csv"
    code, stdout, err = in_process(
        capsys, "sinks", "--model", str(tiny_ckpt), "--device", "cpu", "--corpus", CORPUS,
        "--max-texts", "3", "--prepend-bos", "--out", str(out))
    assert code == 0, err
    rows = read_rows(out)
    assert list(rows[0]) == ["head", "i", "attention_to_0", "uniform", "advantage", "adv_ee",
                             "adv_pp", "adv_pe", "adv_ep", "adv_e", "adv_p", "sink_term",
                             "entropy", "texts", "bos", "temperature"]
    eos = tiny_layer.tokenizer.eos_token_id
    windows = first_windows(tiny_layer.tokenizer, 3, tiny_layer.n_positions, eos=eos)
    model = hf_eager(tiny_ckpt)
    att = [model_attention(model, w)[:, :, 0] for w in windows]
    longest = max(map(len, windows))
    assert len(rows) == tiny_layer.n_heads * (longest - 1)
    assert stdout.strip().endswith(f"({len(rows)} rows)")
    for r in rows:
        h, i = int(r["head"]), int(r["i"])
        reach = [a[h, i].item() for a in att if a.shape[1] > i]
        assert int(r["texts"]) == len(reach) and r["bos"] == "True"
        assert float(r["uniform"]) == pytest.approx(1 / (i + 1))
        assert abs(float(r["attention_to_0"]) - float(np.mean(reach))) < 1e-5
        adv = [float(r[f"adv_{t}"]) for t in TERM_NAMES]
        assert abs(sum(adv) - float(r["advantage"])) < 1e-5 * (1 + sum(map(abs, adv)))
        assert r["sink_term"] == TERM_NAMES[int(np.argmax(adv))]


@pytest.mark.parametrize("args, message", [
    (["--max-texts", "3"], "--max-texts needs --corpus"),
    (["--length", "1"], "text length must be at least 2"),
])
def test_export_sinks_bad_input(tiny_ckpt, tmp_path, capsys, args, message):
    from test_cli_text import in_process

    out = tmp_path / "x.csv"
    code, _, err = in_process(capsys, "sinks", *args, "--model", str(tiny_ckpt), "--device",
                              "cpu", "--out", str(out))
    assert code == 2 and message in err and not out.exists(), err


def test_dg_sinks_per_head_and_its_plot(tiny_layer):
    """`dg.sinks` (api.sinks.sinks) per position and per head, and `dg.plot` of both."""
    from detokgui.api.plots import plot
    from detokgui.api.sinks import sinks

    per_pos = sinks(tiny_layer, n_texts=3, length=20, seed=1, progress=False)
    per_head = sinks(tiny_layer, per="head", n_texts=3, length=20, seed=1, progress=False)
    prof = sk.sinks(tiny_layer, sk.SampleTexts(3, 20, 1))
    assert len(per_pos) == tiny_layer.n_heads * 19 and len(per_head) == tiny_layer.n_heads
    assert np.allclose(per_head["attention_to_0"], prof.head_attention, atol=1e-7)
    assert per_head["sink_term"].tolist() == [prof.sink_term(h) for h in prof.heads]
    assert per_head.attrs["sink_terms"] == {h: prof.sink_term(h) for h in prof.heads}
    assert sum(ax.get_visible() for ax in plot(per_pos).axes) == tiny_layer.n_heads
    assert sum(ax.get_visible() for ax in plot(per_head).axes) == 1
    with pytest.raises(InputError, match="per"):
        sinks(tiny_layer, per="text", progress=False)


def read_rows(path):
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))
