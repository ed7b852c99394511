"""The demo models: the trained one shipped inside the package, the random one written
once into the cache."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import model_attention

import detokgui
from detokgui.core import Layer0
from detokgui.core.model.sources import demo

TEXT = " It is a truth universally acknowledged, that a single man in possession of a good"


@pytest.fixture(scope="module")
def demo_layer():
    return Layer0.from_pretrained("demo", device="cpu")


def test_demo_is_shipped_inside_the_package_not_read_from_shared():
    folder = demo.demo_model_folder().resolve()
    package = Path(detokgui.__file__).resolve().parent
    installed_resources = Path(str(__import__("detokgui.resources").resources.__file__)).parent
    assert folder.parent == installed_resources.resolve()
    assert "shared" not in folder.parts or package in folder.parents
    for f in ("config.json", "model.safetensors", "vocab.json", "merges.txt", "README.md"):
        assert (folder / f).is_file(), f


def test_demo_loads_with_its_description_and_equals_its_own_forward_pass(demo_layer):
    from transformers import GPT2LMHeadModel

    assert demo_layer.n_heads == 8 and demo_layer.n_positions == 128 and demo_layer.d == 128
    assert "not GPT-2" in demo_layer.name and any("not GPT-2" in n for n in demo_layer.notes)
    ids = demo_layer.tokenizer.encode(TEXT)
    model = GPT2LMHeadModel.from_pretrained(str(demo.demo_model_folder()), dtype=torch.float32,
                                            attn_implementation="eager").eval()
    expected = model_attention(model, ids)
    torch.testing.assert_close(demo_layer.attention(ids), expected, atol=1e-5, rtol=0)


def test_demo_has_learned_a_previous_token_head(demo_layer):
    """Its README: head 7 puts ~0.85 of its attention on the previous token; random weights
    would spread it."""
    ids = demo_layer.tokenizer.encode(TEXT)
    a = demo_layer.attention(ids)
    n = len(ids)
    prev = torch.stack([a[:, i, i - 1] for i in range(1, n)], dim=1).mean(dim=1)
    assert prev[7] > 0.6 and prev[7] == prev.max()
    assert prev[[0, 1, 3, 4]].max() < 0.3


def test_random_demo_written_once_atomically(monkeypatch, tmp_path):
    monkeypatch.setenv("DETOKGUI_CACHE_DIR", str(tmp_path))
    real = demo.write_random_checkpoint

    def small(folder, **kw):
        return real(folder, n_embd=32, n_head=4, n_positions=64, seed=0)

    def interrupted(folder, **kw):
        (Path(folder) / "model.safetensors").write_bytes(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "write_random_checkpoint", interrupted)
    with pytest.raises(KeyboardInterrupt):
        demo.random_demo_folder()
    assert os.listdir(tmp_path) == []  # nothing half-written is left to be reused

    # a folder left incomplete by an older version (weights, no tokenizer) is replaced
    stale = tmp_path / demo._RANDOM_DEMO_FOLDER
    stale.mkdir()
    (stale / "model.safetensors").write_bytes(b"old")
    monkeypatch.setattr(demo, "write_random_checkpoint", small)
    folder = demo.random_demo_folder()
    assert folder == stale and (folder / "tokenizer.json").is_file()
    layer = Layer0.from_pretrained("random-demo", device="cpu")
    assert layer.d == 32 and "random" in layer.name
    mtime = (folder / "model.safetensors").stat().st_mtime_ns
    demo.random_demo_folder()  # second use: reused, not rewritten
    assert (folder / "model.safetensors").stat().st_mtime_ns == mtime


def test_cli_accepts_model_demo(tmp_path):
    out = tmp_path / "topk.csv"
    r = subprocess.run([sys.executable, "-m", "detokgui", "export", "topk", "--model", "demo",
                        "--query", " Korea", "--k", "3", "--out", str(out)],
                       check=False, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = out.read_text().splitlines()
    assert rows[0] == "query_id,query_token,head,rank,key_id,key_token,score"
    assert len(rows) == 1 + 8 * 3
