"""Every family (GPT-2, GPT-Neo, OPT) against its own forward pass: random checkpoints
written by transformers' classes, loaded through the user's path; the models the
decomposition does not apply to are refused with their mechanism named."""

import json
import math

import pytest
import torch
from family_models import SPECS, attention, build, raw_scores, write

from detokgui.core import Layer0, ModelLoadError
from detokgui.core.model.terms import query_constants

FAMILY = {"gpt2": "gpt2", "gpt_neo": "gpt_neo", "opt": "opt", "opt_no_bias": "opt"}


@pytest.fixture(scope="module", params=sorted(SPECS))
def family_ckpt(request, tmp_path_factory):
    """(spec name, folder, the transformers model, the layer loaded from the folder)."""
    name = request.param
    folder, model = write(tmp_path_factory.mktemp(name), name, seed=3)
    return name, folder, model, Layer0.from_pretrained(str(folder), device="cpu")


def _ids(layer, n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, layer.n_vocab, (n,), generator=g).tolist()


def test_attention_equals_the_models_own(family_ckpt):
    name, _, model, layer = family_ckpt
    assert layer.family == FAMILY[name]
    ids = _ids(layer, layer.n_positions, seed=1)
    ours = layer.attention(ids)
    theirs = attention(model, ids)
    assert ours.shape == theirs.shape
    assert (ours - theirs).abs().max().item() <= 1e-5


def test_six_terms_sum_to_the_models_scores(family_ckpt):
    """The six terms plus the query-side constants they drop are q_i . k_j of the model's
    own projections, and the temperature is the family's: 1 for GPT-Neo, sqrt(d') else."""
    name, _, model, layer = family_ckpt
    n = min(30, layer.n_positions)
    ids = _ids(layer, n, seed=2)
    total = sum(layer.six_terms(ids).values()) + query_constants(layer, ids)
    raw = raw_scores(model, ids)
    tri = torch.ones(n, n, dtype=torch.bool).tril()
    assert (total - raw)[:, tri].abs().max().item() < 1e-4 * raw.abs().max().item()
    want = 1.0 if name == "gpt_neo" else math.sqrt(layer.d_head)
    assert layer.temperature == want


def test_from_model_equals_from_pretrained(family_ckpt):
    _, _, model, layer = family_ckpt
    again = Layer0.from_model(model, tokenizer=layer.tokenizer)
    assert (again.family, again.n_vocab, again.n_positions) == (
        layer.family, layer.n_vocab, layer.n_positions)
    ids = _ids(layer, min(20, layer.n_positions), seed=4)
    torch.testing.assert_close(again.attention(ids), layer.attention(ids))


def test_opt_padding_rows_are_left_out(tmp_path):
    """OPT's embedding has more rows than its tokenizer has tokens (here 50272 for 50257):
    the extra rows are no tokens, so no view lists them, however large they are."""
    from detokgui.core.model.conventions import SigmaChoice
    from detokgui.core.token_side.affinity import topk_keys, topk_queries

    model, _ = build("opt", seed=9)
    with torch.no_grad():
        model.model.decoder.embed_tokens.weight[50257:] *= 50.0
    model.save_pretrained(tmp_path)
    from detokgui.core.model.tokens import gpt2_tokenizer

    gpt2_tokenizer().save_pretrained(tmp_path)
    layer = Layer0.from_pretrained(str(tmp_path), device="cpu")
    assert layer.n_vocab == len(layer.tokenizer) == 50257
    assert any("50257..50271 are padding" in n for n in layer.notes)
    for find in (topk_keys, topk_queries):
        best = find(layer, 11, k=20, sigma=SigmaChoice("none"))
        assert int(best.ids.max()) < 50257


@pytest.mark.parametrize("base, safe", [(True, False), (False, True)])
def test_other_layouts_load(tmp_path, base, safe):
    """OPT saved as the base model (keys `decoder.`, as facebook/opt-125m's .bin) or as
    the LM model (`model.decoder.`); sharded GPT-Neo reads only layer 0's shards."""
    folder, model = write(tmp_path / "opt", "opt", seed=5, base=base, safe=safe)
    layer = Layer0.from_pretrained(str(folder), device="cpu")
    ids = _ids(layer, 36, seed=5)
    assert (layer.attention(ids) - attention(model, ids)).abs().max().item() <= 1e-5
    neo, _ = build("gpt_neo", seed=6)
    neo.save_pretrained(tmp_path / "neo", max_shard_size="1MB")
    assert len(list((tmp_path / "neo").glob("*.safetensors"))) > 1
    layer = Layer0.from_pretrained(str(tmp_path / "neo"), device="cpu", load_tokenizer=False)
    ids = _ids(layer, 40, seed=6)
    assert (layer.attention(ids) - attention(neo, ids)).abs().max().item() <= 1e-5


def test_gpt_neo_local_first_layer(tmp_path):
    """A local layer 0 whose window covers every position is global, and loads; one whose
    window is shorter is refused, saying which keys a query sees."""
    folder, model = write(tmp_path / "wide", "gpt_neo", seed=7, tokenizer=False,
                          attention_types=[[["local", "global"], 1]], window_size=40)
    layer = Layer0.from_pretrained(str(folder), device="cpu")
    ids = _ids(layer, 40, seed=7)
    assert (layer.attention(ids) - attention(model, ids)).abs().max().item() <= 1e-5
    narrow, _ = write(tmp_path / "narrow", "gpt_neo", seed=7, tokenizer=False,
                      attention_types=[[["local", "global"], 1]], window_size=8)
    with pytest.raises(ModelLoadError, match=r"local attention.*i - 8 < j <= i.*global"):
        Layer0.from_pretrained(str(narrow), device="cpu")


def test_post_ln_opt_is_refused(tmp_path):
    """OPT-350m's shape: post-LN, 512-wide token embeddings projected to 1024."""
    from transformers import OPTConfig

    cfg = OPTConfig(hidden_size=64, num_attention_heads=4, num_hidden_layers=1, ffn_dim=96,
                    word_embed_proj_dim=32, do_layer_norm_before=False, vocab_size=100)
    cfg.save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError, match="post-LayerNorm OPT.*opt-350m.*opt-125m") as err:
        Layer0.from_pretrained(str(tmp_path))
    assert "GPT-Neo" in str(err.value)
    cfg.do_layer_norm_before = True  # pre-LN, but embeddings narrower than the model
    cfg.save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError, match="32-wide token embeddings.*project_in"):
        Layer0.from_pretrained(str(tmp_path))


@pytest.mark.parametrize("cfg, mechanism", [
    ({"model_type": "gpt_neox", "rotary_pct": 0.25, "hidden_size": 64}, "rotary"),
    ({"model_type": "llama", "rope_theta": 10000.0}, "rotary"),
    ({"model_type": "bloom", "hidden_size": 64}, "ALiBi"),
    ({"model_type": "openai-gpt"}, "post-LN"),
])
def test_other_mechanisms_are_refused_by_name(tmp_path, cfg, mechanism):
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError, match=mechanism) as err:
        Layer0.from_pretrained(str(tmp_path))
    assert all(f in str(err.value) for f in ("GPT-2", "GPT-Neo", "OPT"))


def test_missing_tensor_names_the_family_and_tensor(tmp_path):
    from safetensors.torch import load_file, save_file

    folder, _ = write(tmp_path / "neo", "gpt_neo", seed=8, tokenizer=False)
    state = load_file(folder / "model.safetensors")
    del state["transformer.h.0.attn.attention.k_proj.weight"]
    save_file(state, folder / "model.safetensors")
    with pytest.raises(ModelLoadError, match="GPT-Neo layer-0 tensors: h.0.attn.attention.k_proj"):
        Layer0.from_pretrained(str(folder), device="cpu")


@pytest.mark.gpt2(repo="EleutherAI/gpt-neo-125m")
def test_real_gpt_neo_125m():
    from transformers import AutoModelForCausalLM

    layer = Layer0.from_pretrained("EleutherAI/gpt-neo-125m", device="cpu")
    assert (layer.family, layer.n_heads, layer.d, layer.n_positions) == ("gpt_neo", 12, 768, 2048)
    assert layer.temperature == 1.0
    model = AutoModelForCausalLM.from_pretrained("EleutherAI/gpt-neo-125m",
                                                 attn_implementation="eager").eval()
    ids = layer.tokenizer.encode(" North Korea and South Korea share a border.")
    assert (layer.attention(ids) - attention(model, ids)).abs().max().item() <= 1e-5


@pytest.mark.gpt2(repo="facebook/opt-125m")
def test_real_opt_125m():
    from transformers import AutoModelForCausalLM

    layer = Layer0.from_pretrained("facebook/opt-125m", device="cpu")
    assert (layer.family, layer.n_heads, layer.d, layer.n_positions) == ("opt", 12, 768, 2048)
    assert layer.n_vocab == len(layer.tokenizer) < 50272  # padding rows left out
    model = AutoModelForCausalLM.from_pretrained("facebook/opt-125m",
                                                 attn_implementation="eager").eval()
    ids = layer.tokenizer.encode(" North Korea and South Korea share a border.")
    assert ids[0] == layer.tokenizer.bos_token_id  # OPT's tokenizer starts with </s>
    assert (layer.attention(ids) - attention(model, ids)).abs().max().item() <= 1e-5


@pytest.mark.parametrize("name", ["gpt_neo", "opt"])
def test_export_figures_runs_for_every_family(tmp_path, name):
    """The whole-vocabulary views behind the weight figures run for each family, through
    the command line a user types."""
    from test_cli import run_cli
    from test_export_figures import index_rows

    folder, _ = write(tmp_path / name, name, seed=10)
    out = tmp_path / "figures"
    r = run_cli("figures", "--model", str(folder), "--device", "cpu", "--out", str(out),
                "--format", "png", timeout=600)
    assert r.returncode == 0, r.stderr
    rows = index_rows(out)
    built = [k for k in rows if (out / f"{k}.png").is_file()]
    assert len(built) >= 15 and (out / "fig02a_topk.csv").is_file()
    if name == "opt":  # 50272 embedding rows for 50257 tokens: said once, on stderr
        assert r.stderr.count("rows 50257..50271 are padding") == 1


def test_window_opens_an_opt_checkpoint(qtbot, tmp_path):
    """A user opens an OPT folder: the status bar and title name the family, the views
    of the token side, the position side and the text side draw, and the padding rows
    are no tokens."""
    from conftest import open_window, wait_idle

    folder, _ = write(tmp_path / "opt", "opt", seed=11)
    win = open_window(qtbot, folder)
    assert "OPT architecture" in win.model_label.text()
    assert "5 heads · d=40" in win.model_facts.text()
    assert "OPT" in win.windowTitle()
    for view in ("topk", "bias", "sentence"):
        win.show_view(view)
        wait_idle(qtbot, win)
    assert win.state.layer.n_vocab == 50257
