"""Loading paths and every error a person can run into, with the message they see."""

import json

import pytest
import torch

from detokgui.core import Layer0, ModelLoadError
from detokgui.core.model import families
from detokgui.core.model.sources import checkpoint
from detokgui.core.model.sources.demo import write_random_checkpoint


def test_reads_only_layer0_tensors(tiny_ckpt, monkeypatch):
    seen = []
    real = checkpoint.read_safetensors

    def spy(path, wanted):
        out = real(path, wanted)
        seen.extend(out)
        return out

    monkeypatch.setattr(checkpoint, "read_safetensors", spy)
    Layer0.from_pretrained(str(tiny_ckpt), device="cpu", load_tokenizer=False)
    assert sorted(seen) == sorted(families.LAYER0_KEYS + families.OPTIONAL_KEYS)


def test_final_norm_is_read_when_present(tmp_path, hf_eager):
    """ln_f comes along (for views through the unembedding), also from a later shard and
    through to() and from_model; a checkpoint without it still loads."""
    from safetensors.torch import load_file, save_file
    from transformers import GPT2LMHeadModel

    src = write_random_checkpoint(tmp_path / "src", n_layer=2, n_positions=16, seed=8)
    base = hf_eager(src).transformer
    with torch.no_grad():
        base.ln_f.weight.normal_()
    layer = Layer0.from_pretrained(str(src), device="cpu")
    assert torch.equal(layer.lnf_weight, torch.ones_like(layer.lnf_weight))
    model = GPT2LMHeadModel.from_pretrained(str(src))
    with torch.no_grad():
        model.transformer.ln_f.weight.copy_(base.ln_f.weight)
        model.transformer.ln_f.bias.normal_()
    out = tmp_path / "sharded"
    model.save_pretrained(out, max_shard_size="2MB")
    sharded = Layer0.from_pretrained(str(out), device="cpu", load_tokenizer=False)
    assert torch.equal(sharded.lnf_weight, base.ln_f.weight)
    assert torch.equal(sharded.lnf_bias, model.transformer.ln_f.bias)
    assert torch.equal(sharded.to("cpu").lnf_bias, sharded.lnf_bias)
    assert torch.equal(Layer0.from_model(model).lnf_weight, base.ln_f.weight)
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "config.json").write_bytes((src / "config.json").read_bytes())
    state = {k: v for k, v in load_file(src / "model.safetensors").items() if "ln_f" not in k}
    save_file(state, bare / "model.safetensors")
    plain = Layer0.from_pretrained(str(bare), device="cpu", load_tokenizer=False)
    assert plain.lnf_weight is None and plain.lnf_bias is None
    assert torch.equal(plain.Wq, layer.Wq)


def test_two_layer_model_reads_layer_zero(tmp_path, hf_eager):
    folder = write_random_checkpoint(tmp_path, n_layer=3, n_positions=16, seed=4)
    layer = Layer0.from_pretrained(str(folder), device="cpu")
    base = hf_eager(folder).transformer
    assert torch.equal(layer.qkv_weight, base.h[0].attn.c_attn.weight)
    assert not torch.equal(layer.qkv_weight, base.h[1].attn.c_attn.weight)


def test_sharded_safetensors(tmp_path, hf_eager):
    from transformers import GPT2LMHeadModel

    src = write_random_checkpoint(tmp_path / "src", n_layer=2, n_positions=16, seed=6)
    model = GPT2LMHeadModel.from_pretrained(str(src))
    out = tmp_path / "sharded"
    model.save_pretrained(out, max_shard_size="2MB")
    (out / "tokenizer.json").write_bytes((src / "tokenizer.json").read_bytes())
    assert (out / "model.safetensors.index.json").exists()
    layer = Layer0.from_pretrained(str(out), device="cpu")
    ref = Layer0.from_pretrained(str(src), device="cpu")
    assert torch.equal(layer.E, ref.E) and torch.equal(layer.Wq, ref.Wq)


def test_device_default_and_tokenizer(tiny_layer):
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    layer = Layer0.from_pretrained(str(tiny_layer.name), load_tokenizer=False)
    assert layer.device.type == expected
    assert len(tiny_layer.tokenizer) == 50257
    assert tiny_layer.tokenizer.encode(" Korea") == [4969]


def test_repr_is_one_short_line(tiny_ckpt, tiny_layer):
    """repr names the model, its family and sizes (here read back from config.json), never
    the tensors."""
    cfg = json.loads((tiny_ckpt / "config.json").read_text())
    d, H = cfg["n_embd"], cfg["n_head"]
    expected = (f"Layer0({tiny_layer.name!r}, family='gpt2', V={cfg['vocab_size']}, "
                f"L={cfg['n_positions']}, d={d}, H={H}, d_head={d // H}, "
                f"d_mlp={cfg.get('n_inner') or 4 * d}, dtype=float32, device=cpu)")
    assert repr(tiny_layer) == str(tiny_layer) == expected
    assert repr(tiny_layer.to("cpu")) == expected
    wide = Layer0.from_pretrained(str(tiny_ckpt), device="cpu", dtype=torch.float64,
                                  load_tokenizer=False)
    assert repr(wide) == expected.replace("float32", "float64")


def test_missing_folder():
    with pytest.raises(ModelLoadError, match="There is no folder"):
        Layer0.from_pretrained("./no/such/folder")


def test_folder_without_config(tmp_path):
    with pytest.raises(ModelLoadError, match="no config.json"):
        Layer0.from_pretrained(str(tmp_path))


def test_file_instead_of_folder(tmp_path):
    f = tmp_path / "x.safetensors"
    f.write_bytes(b"x")
    with pytest.raises(ModelLoadError, match="is a file"):
        Layer0.from_pretrained(str(f))


def test_folder_without_weights(tmp_path, tiny_ckpt):
    (tmp_path / "config.json").write_text((tiny_ckpt / "config.json").read_text())
    with pytest.raises(ModelLoadError, match="has no weights"):
        Layer0.from_pretrained(str(tmp_path))


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda b: b[:5], "shorter than a safetensors header"),
        (lambda b: b[: len(b) // 2], "truncated"),
        (lambda b: b[:8] + b"\xff" * 40 + b[48:], "not valid JSON"),
        (lambda b: (10**15).to_bytes(8, "little") + b[8:], "corrupt or truncated"),
    ],
)
def test_corrupt_safetensors(tmp_path, tiny_ckpt, damage, message):
    for name in ("config.json", "tokenizer.json"):
        (tmp_path / name).write_bytes((tiny_ckpt / name).read_bytes())
    (tmp_path / "model.safetensors").write_bytes(damage((tiny_ckpt / "model.safetensors").read_bytes()))
    with pytest.raises(ModelLoadError, match=message):
        Layer0.from_pretrained(str(tmp_path))


def test_corrupt_bin(tmp_path, tiny_ckpt):
    (tmp_path / "config.json").write_text((tiny_ckpt / "config.json").read_text())
    (tmp_path / "pytorch_model.bin").write_bytes(b"not a pickle at all")
    with pytest.raises(ModelLoadError, match="corrupt or not a PyTorch checkpoint"):
        Layer0.from_pretrained(str(tmp_path))


def test_corrupt_config(tmp_path, tiny_ckpt):
    (tmp_path / "model.safetensors").write_bytes((tiny_ckpt / "model.safetensors").read_bytes())
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match="config.json cannot be read"):
        Layer0.from_pretrained(str(tmp_path))


def test_config_and_weights_disagree(tmp_path, tiny_ckpt):
    cfg = json.loads((tiny_ckpt / "config.json").read_text())
    cfg["n_embd"] = 32
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "model.safetensors").write_bytes((tiny_ckpt / "model.safetensors").read_bytes())
    with pytest.raises(ModelLoadError, match="do not match"):
        Layer0.from_pretrained(str(tmp_path), load_tokenizer=False)


@pytest.mark.parametrize(
    "cfg, message",
    [
        ({"model_type": "llama", "rope_theta": 10000.0}, "rotary"),
        ({"model_type": "gpt_neox", "rotary_pct": 0.25}, "rotary"),
        ({"model_type": "bloom"}, "ALiBi"),
        ({"model_type": "bert"}, "post-LN"),
        ({"model_type": "t5"}, "not a model detokgui can analyse"),
        ({"model_type": "gpt2", "position_embedding_type": "rotary"}, "learned"),
    ],
)
def test_other_architectures_are_refused(tmp_path, cfg, message):
    """Each refusal names the model's mechanism and the families that do work."""
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError, match=message) as err:
        Layer0.from_pretrained(str(tmp_path))
    if cfg.get("model_type") != "gpt2":
        assert "GPT-Neo" in str(err.value) and "OPT" in str(err.value)


def test_tokenizer_larger_than_embedding(tmp_path):
    folder = write_random_checkpoint(tmp_path, vocab_size=1000, n_positions=16)
    with pytest.raises(ModelLoadError, match="tokenizer has 50257 tokens but the token embedding"):
        Layer0.from_pretrained(str(folder))


def test_no_tokenizer_is_allowed(tmp_path):
    folder = write_random_checkpoint(tmp_path, vocab_size=1000, n_positions=16, tokenizer=False)
    layer = Layer0.from_pretrained(str(folder), device="cpu")
    assert layer.tokenizer is None and layer.n_vocab == 1000


def test_corrupt_tokenizer(tmp_path, tiny_ckpt):
    for name in ("config.json", "model.safetensors"):
        (tmp_path / name).write_bytes((tiny_ckpt / name).read_bytes())
    (tmp_path / "tokenizer.json").write_text("{broken")
    with pytest.raises(ModelLoadError, match="tokenizer files cannot be read"):
        Layer0.from_pretrained(str(tmp_path))


def test_unknown_hub_name_offline(monkeypatch, tmp_path):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="not in the local Hugging Face cache"):
        Layer0.from_pretrained("someone/not-a-model")


def test_hub_unreachable_fails_fast(monkeypatch, tmp_path):
    import time

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(checkpoint, "hub_reachable", lambda timeout=3.0: False)
    start = time.perf_counter()
    with pytest.raises(ModelLoadError, match="HF_HUB_OFFLINE"):
        Layer0.from_pretrained("gpt2-medium")
    assert time.perf_counter() - start < 5


def test_cached_hub_model_loads_offline(monkeypatch, tmp_path, tiny_ckpt):
    """A model in the HF cache layout loads by name with no network at all."""
    snap = tmp_path / "models--someone--tiny" / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    for f in tiny_ckpt.iterdir():
        (snap / f.name).write_bytes(f.read_bytes())
    (tmp_path / "models--someone--tiny" / "refs").mkdir()
    (tmp_path / "models--someone--tiny" / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(checkpoint, "hub_reachable", lambda timeout=3.0: False)
    layer = Layer0.from_pretrained("someone/tiny", device="cpu")
    assert layer.n_heads == 4 and len(layer.tokenizer) == 50257


def test_cuda_requested_without_cuda(tiny_ckpt):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ModelLoadError, match="no CUDA device"):
        Layer0.from_pretrained(str(tiny_ckpt), device="cuda", load_tokenizer=False)


def _benchmark_module():
    """benchmarks/run.py, whose RSS measurement this test shares."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "run.py"
    spec = importlib.util.spec_from_file_location("detokgui_benchmark_run", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_loading_peak_memory_stays_near_the_layer0_bytes(small_ckpt, isolated_env):
    """Layer0.from_pretrained on a GPT-2-small-sized checkpoint, in a fresh process (the
    benchmark's measurement: peak RSS minus RSS after the imports): at most 1.3x the
    185.9 MB of layer-0 tensors. A float64 copy of E in the NaN check (+2x E) or a load
    that reads the whole file would exceed it; the measurement does not depend on other
    processes' load."""
    m = _benchmark_module().measure_rss(small_ckpt, env=isolated_env)
    assert m["V"] == 50257 and 180e6 < m["need"] < 190e6
    assert m["ratio"] <= 1.3, (
        f"peak RSS increase {m['increase'] / 1e6:.1f} MB is {m['ratio']:.2f}x the "
        f"{m['need'] / 1e6:.1f} MB of layer-0 tensors ({m['method']})"
    )
