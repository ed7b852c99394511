"""Bad checkpoints and bad API arguments give a clear ModelLoadError / InputError, never a
bare RuntimeError, TypeError or ZeroDivisionError."""

import json
import math

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from detokgui.core import Layer0, ModelLoadError
from detokgui.core.base.errors import InputError
from detokgui.core.model.weights import all_finite

PREFIX = "transformer."


def copy_with(tmp_path, ckpt, *, config=None, tensors=None):
    """A copy of checkpoint folder `ckpt` with config fields and layer-0 tensors replaced."""
    cfg = json.loads((ckpt / "config.json").read_text())
    cfg.update(config or {})
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    st = load_file(str(ckpt / "model.safetensors"))
    for key, fn in (tensors or {}).items():
        st[PREFIX + key] = fn(st[PREFIX + key]).contiguous()
    save_file(st, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    return tmp_path


@pytest.mark.parametrize("field, value", [
    ("n_head", 0), ("n_head", -4), ("n_embd", 0), ("n_positions", 0), ("vocab_size", -1),
    ("n_inner", -5), ("layer_norm_epsilon", -1e-5), ("layer_norm_epsilon", 0),
])
def test_impossible_config_values(tmp_path, tiny_ckpt, field, value):
    folder = copy_with(tmp_path, tiny_ckpt, config={field: value})
    with pytest.raises(ModelLoadError, match=field):
        Layer0.from_pretrained(str(folder), device="cpu", load_tokenizer=False)


def config_load_error(tmp_path, tiny_ckpt, config) -> str:
    """The message of loading a copy of tiny_ckpt (with its tokenizer files) whose
    config.json has the fields `config`."""
    folder = copy_with(tmp_path, tiny_ckpt, config=config)
    for name in ("vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json"):
        if (tiny_ckpt / name).exists():
            (folder / name).write_bytes((tiny_ckpt / name).read_bytes())
    with pytest.raises(ModelLoadError) as err:
        Layer0.from_pretrained(str(folder), device="cpu")
    return str(err.value)


@pytest.mark.parametrize("field, value, said", [
    ("n_embd", "64", '"64"; it must be a whole number, not a string.'),
    ("n_embd", 64.0, "64.0; it must be a whole number, not a decimal number."),
    ("n_embd", True, "true; it must be a whole number, not true or false."),
    ("n_head", [4], "[4]; it must be a whole number, not a list."),
    ("vocab_size", 50257.0, "50257.0; it must be a whole number, not a decimal number."),
    ("n_positions", None, "null; it must be a whole number, not null."),
    ("n_layer", "1", '"1"; it must be a whole number, not a string.'),
    ("layer_norm_epsilon", "1e-5", '"1e-5"; it must be a number, not a string.'),
    ("scale_attn_weights", 1, "1; it must be true or false, not a whole number."),
])
def test_config_values_of_the_wrong_type_are_config_errors(tmp_path, tiny_ckpt, field, value,
                                                           said):
    """A mistyped config.json field is reported as config.json's, naming the field, before
    the tokenizer loader (which validates config.json too) can call it a tokenizer problem
    (issue 16, item 3)."""
    msg = config_load_error(tmp_path, tiny_ckpt, {field: value})
    assert f"config.json has {field}={said}" in msg and "tokenizer" not in msg


def test_config_field_only_the_tokenizer_loader_checks(tmp_path, tiny_ckpt):
    """transformers validates the field when it reads the tokenizer; the same answer comes
    when a tokenizer from the same files is kept from an earlier load (as in a full run)."""
    folder = tmp_path
    Layer0.from_pretrained(str(tiny_ckpt), device="cpu")  # its tokenizer is kept
    msg = config_load_error(tmp_path, tiny_ckpt, {"initializer_range": "0.02"})
    assert msg.startswith(f"{folder}: config.json has a value of the wrong type (")
    assert "initializer_range" in msg and "\n" not in msg


LAYER0_TENSORS = [
    "h.0.ln_1.weight", "h.0.ln_1.bias", "h.0.attn.c_attn.weight", "h.0.attn.c_attn.bias",
    "h.0.attn.c_proj.weight", "h.0.attn.c_proj.bias", "h.0.ln_2.weight", "h.0.ln_2.bias",
    "h.0.mlp.c_fc.weight", "h.0.mlp.c_fc.bias", "h.0.mlp.c_proj.weight",
    "h.0.mlp.c_proj.bias", "wpe.weight",
]


@pytest.mark.parametrize("key", LAYER0_TENSORS)
def test_tensor_of_the_wrong_shape(tmp_path, tiny_ckpt, key):
    folder = copy_with(tmp_path, tiny_ckpt, tensors={key: lambda t: t[..., :-1]})
    with pytest.raises(ModelLoadError, match=key.replace(".", r"\.") + " has shape"):
        Layer0.from_pretrained(str(folder), device="cpu", load_tokenizer=False)


@pytest.mark.parametrize("key, bad", [
    ("h.0.attn.c_attn.weight", math.nan), ("wte.weight", math.inf),
    ("h.0.ln_1.bias", -math.inf), ("wpe.weight", math.nan),
])
def test_nan_or_inf_weights_are_refused(tmp_path, tiny_ckpt, key, bad):
    def poison(t):
        t = t.clone()
        t.view(-1)[7] = bad
        return t

    folder = copy_with(tmp_path, tiny_ckpt, tensors={key: poison})
    with pytest.raises(ModelLoadError, match=key.replace(".", r"\.") + " holds 1 NaN or infinite"):
        Layer0.from_pretrained(str(folder), device="cpu", load_tokenizer=False)


def test_half_precision_overflow_is_named(tiny_ckpt, tmp_path):
    folder = copy_with(tmp_path, tiny_ckpt, tensors={"wte.weight": lambda t: t * 1e6})
    with pytest.raises(ModelLoadError,
                       match=r"wte\.weight holds \d+ values too large for torch\.float16"):
        Layer0.from_pretrained(str(folder), device="cpu", dtype=torch.float16,
                               load_tokenizer=False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_all_finite_checks_every_slice(dtype):
    x = torch.randn(300, 7, dtype=torch.float64).to(dtype)
    small = 64  # bytes per slice: several rows at a time, many slices
    assert all_finite(x, small) and all_finite(x)
    for bad in (math.nan, math.inf, -math.inf):
        for where in [(0, 0), (150, 3), (299, 6)]:  # first, middle and last slice
            y = x.clone()
            y[where] = bad
            assert not all_finite(y, small) and not all_finite(y)
    big = torch.full((300, 7), torch.finfo(dtype).max, dtype=dtype)  # sums overflow
    assert all_finite(big, small) and all_finite(big)
    assert all_finite(x[:, 0], small) and all_finite(x.T, small)  # 1-d, non-contiguous
    assert all_finite(torch.tensor(1.0)) and not all_finite(torch.tensor(math.nan))
    assert all_finite(torch.empty(0, 7, dtype=dtype))


@pytest.mark.parametrize("device", ["tpu", "mps:0", "cuda:x", 3.5, "meta"])
def test_unknown_device(tiny_ckpt, device):
    with pytest.raises(ModelLoadError, match="device"):
        Layer0.from_pretrained(str(tiny_ckpt), device=device, load_tokenizer=False)


def test_from_tensors_checks_its_arguments(tiny_layer):
    L = tiny_layer
    tensors = {
        "wte.weight": L.E, "wpe.weight": L.P, "h.0.ln_1.weight": L.ln1_weight,
        "h.0.ln_1.bias": L.ln1_bias, "h.0.attn.c_attn.weight": L.qkv_weight,
        "h.0.attn.c_attn.bias": L.qkv_bias, "h.0.attn.c_proj.weight": L.attn_out_weight,
        "h.0.attn.c_proj.bias": L.attn_out_bias, "h.0.ln_2.weight": L.ln2_weight,
        "h.0.ln_2.bias": L.ln2_bias, "h.0.mlp.c_fc.weight": L.mlp_in_weight, "h.0.mlp.c_fc.bias": L.mlp_in_bias,
        "h.0.mlp.c_proj.weight": L.mlp_out_weight, "h.0.mlp.c_proj.bias": L.mlp_out_bias,
    }
    for n_heads, message in [(0, "at least 1"), (-2, "at least 1"), (2.5, "whole number"),
                             (None, "whole number"), (3, "not divisible")]:
        with pytest.raises(ModelLoadError, match=message):
            Layer0.from_tensors(tensors, n_heads=n_heads, eps=1e-5, device="cpu")
    with pytest.raises(ModelLoadError, match="eps"):
        Layer0.from_tensors(tensors, n_heads=4, eps=float("nan"), device="cpu")
    partial = {k: v for k, v in tensors.items() if k != "h.0.ln_2.bias"}
    with pytest.raises(ModelLoadError, match=r"missing: h\.0\.ln_2\.bias"):
        Layer0.from_tensors(partial, n_heads=4, eps=1e-5, device="cpu")
    ok = Layer0.from_tensors(tensors, n_heads=4, eps=1e-5, device="cpu")
    assert torch.equal(ok.Wq, L.Wq)


# --------------------------------------------------------------------------- API arguments


def _calls(layer):
    from detokgui.core.model import sample
    from detokgui.core.position_side import neurons, positional
    from detokgui.core.token_side import affinity

    slopes = positional.token_position_slopes(layer)
    return [
        (lambda: affinity.topk_keys(layer, 5, k=None), "k"),
        (lambda: affinity.topk_keys(layer, 5, k=0), "k"),
        (lambda: affinity.topk_keys(layer, 5, k=2.5), "k"),
        (lambda: affinity.topk_queries(layer, 5, k="3"), "k"),
        (lambda: affinity.topk_keys(layer, 5, heads=1.5), "head"),
        (lambda: affinity.topk_keys(layer, 5, heads="1"), "head"),
        (lambda: affinity.topk_keys(layer, 5, heads=[None]), "head"),
        (lambda: affinity.topk_keys(layer, None), "token id"),
        (lambda: affinity.topk_keys(layer, 5, sigma="mean"), "SigmaChoice"),
        (lambda: affinity.affinity_block(layer, ["North", "Korea"]), "token ids"),
        (lambda: affinity.affinity_block(layer, [1.5, 2]), "whole numbers"),
        (lambda: affinity.affinity_block(layer, None), "token"),
        (lambda: sample.random_token_sample(layer, None), "sample size"),
        (lambda: sample.random_token_sample(layer, 5, seed=0.5), "seed"),
        (lambda: layer.six_terms(["a", "b"]), "token"),
        (lambda: layer.attention(None), "token"),
        (lambda: positional.positional_bias(layer, None), "position"),
        (lambda: positional.positional_bias(layer, 3, heads=2.5), "head"),
        (lambda: positional.positional_pattern(layer, 5, 1.5), "position"),
        (lambda: positional.raw_pp_last_positions(layer, count=None), "positions"),
        (lambda: positional.slope_extremes(slopes, k=None), "k"),
        (lambda: positional.slope_histogram(slopes, 0, bins=None), "bins"),
        (lambda: positional.slope_histogram(slopes, None), "head"),
        (lambda: positional.pattern_grid(np.ones(9), cols=0), "columns"),
        (lambda: positional.classify_heads(layer, sample=None), "sample size"),
        (lambda: neurons.embedding_overlap(layer, r=None), "SVD directions"),
        (lambda: neurons.embedding_overlap(layer, m=10**6), "position-heavy"),
    ]


def test_public_functions_refuse_bad_arguments_clearly(tiny_layer):
    for call, word in _calls(tiny_layer):
        with pytest.raises(InputError, match=word):
            call()


def test_whole_number_floats_are_accepted(tiny_layer):
    from detokgui.core.token_side.affinity import topk_keys

    a = topk_keys(tiny_layer, 5, k=3.0, heads=1.0)
    b = topk_keys(tiny_layer, 5, k=3, heads=[1])
    assert a.heads == b.heads == [1] and torch.equal(a.ids, b.ids)
