"""Block 1 of a hub model through the local hub stand-in (`hub_server`): loading layer 0
fetches nothing of block 1; asking for layer 1 fetches only block 1's byte ranges (counted
by the server), once; Cancel keeps nothing (`core.model.layer1`, `sources.hub.fetch_block`)."""

from __future__ import annotations

import json
import struct
import threading
import time

import pytest
import torch
from hub_server import HubServer

from detokgui.core import Layer0
from detokgui.core.base.errors import Cancelled, ModelLoadError
from detokgui.core.base.progress import run
from detokgui.core.model.layer1 import has_layer1, layer1, layer1_job
from detokgui.core.model.sources import hub
from detokgui.core.model.sources.demo import write_random_checkpoint
from detokgui.core.model.sources.hub_download import FIRST_REQUEST


@pytest.fixture(scope="module")
def three_layers(tmp_path_factory):
    return write_random_checkpoint(tmp_path_factory.mktemp("hub-l1"), n_layer=3, seed=21)


@pytest.fixture
def server(monkeypatch, tmp_path, three_layers):
    """The local hub holding `test/three` (main), with HF_HOME and detokgui's cache in
    tmp_path (as tests/test_hub.py's)."""
    s = HubServer()
    s.repo("test/three").add(three_layers, "main")
    monkeypatch.setenv("HF_ENDPOINT", s.endpoint)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("DETOKGUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    yield s
    s.close()


def block_span(folder, block: int) -> tuple[int, int, int]:
    """(first byte, end byte, tensor bytes) of block `block`'s tensors in the checkpoint's
    model.safetensors, from its header."""
    with open(folder / "model.safetensors", "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    spans = [(8 + n + v["data_offsets"][0], 8 + n + v["data_offsets"][1])
             for k, v in header.items() if k.startswith(f"transformer.h.{block}.")]
    return min(a for a, _ in spans), max(b for _, b in spans), sum(b - a for a, b in spans)


def weight_ranges(s: HubServer) -> list[tuple[int, int]]:
    out = []
    for method, path, rng in s.requests:
        if method == "GET" and path.startswith("/cdn/"):
            a, _, b = rng.removeprefix("bytes=").partition("-")
            out.append((int(a), int(b) + 1))
    return out


def test_block1_fetches_only_its_byte_ranges(server, three_layers, tmp_path):
    layer = Layer0.from_pretrained("test/three", device="cpu")
    folder = hub.cached("test/three", None).folder
    assert not (folder / hub.block_file(1)).exists() and not has_layer1(layer)

    server.reset_counts()
    messages = []
    l1 = layer1(layer, progress=lambda f, m: messages.append(m))
    begin, end, size = block_span(three_layers, 1)
    ranges = weight_ranges(server)
    assert ranges and all(b <= FIRST_REQUEST or (begin <= a and b <= end) for a, b in ranges)
    assert size <= server.sent <= size + FIRST_REQUEST
    total = (three_layers / "model.safetensors").stat().st_size
    assert server.sent < 0.1 * total
    assert any(m.startswith("Downloading test/three block 1:") for m in messages)
    assert (folder / hub.block_file(1)).is_file() and not list(folder.glob("*.part"))

    local = layer1(Layer0.from_pretrained(str(three_layers), device="cpu"))
    for key in ("ln1_weight", "qkv_weight", "qkv_bias", "attn_out_weight", "Wq", "Wo"):
        assert torch.equal(getattr(l1, key), getattr(local, key)), key

    server.reset_counts()  # a new session reads block 1 from the cache: no weight bytes
    again = Layer0.from_pretrained("test/three", device="cpu")
    assert torch.equal(run(layer1_job(again)).qkv_weight, l1.qkv_weight)
    assert not weight_ranges(server) and server.sent < 2000


def test_cancelled_block1_keeps_nothing(server):
    layer = Layer0.from_pretrained("test/three", device="cpu")
    folder = hub.cached("test/three", None).folder

    def cancel(fraction, message):
        if message.startswith("Downloading"):
            raise Cancelled("cancelled")

    with pytest.raises(Cancelled):
        layer1(layer, progress=cancel)
    assert not has_layer1(layer) and not (folder / hub.block_file(1)).exists()
    assert not [p for p in folder.iterdir() if p.name.endswith(".part")]
    assert layer1(layer).n_heads == layer.n_heads  # the next try works


def test_closing_the_job_stops_the_download_within_a_second(server):
    layer = Layer0.from_pretrained("test/three", device="cpu")
    folder = hub.cached("test/three", None).folder
    server.delay = 0.05  # about 0.3 MB/s: block 1 takes seconds
    job = layer1_job(layer)
    for p in job:
        if p.message.startswith("Downloading"):
            break
    closed = time.monotonic()
    job.close()
    while (threading.active_count() > 1 and any(t.name == "detokgui-layer1"
                                                 for t in threading.enumerate())):
        assert time.monotonic() - closed < 1.0
        time.sleep(0.02)
    assert not has_layer1(layer) and not (folder / hub.block_file(1)).exists()
    assert not [p for p in folder.iterdir() if p.name.endswith(".part")]


def test_hugging_face_cache_gives_block1_without_the_network(server, tmp_path, three_layers):
    """A model transformers downloaded whole: block 1 is read from the HF cache, no
    request to the hub."""
    sha = "ef" * 20
    snap = tmp_path / "hf" / "hub" / "models--test--three" / "snapshots" / sha
    snap.mkdir(parents=True)
    for f in three_layers.iterdir():
        (snap / f.name).write_bytes(f.read_bytes())
    (snap.parents[1] / "refs").mkdir()
    (snap.parents[1] / "refs" / "main").write_text(sha)
    server.reset_counts()
    layer = Layer0.from_pretrained("test/three", device="cpu")
    l1 = run(layer1_job(layer))
    assert layer.revision == sha and server.requests == []
    local = layer1(Layer0.from_pretrained(str(three_layers), device="cpu"))
    assert torch.equal(l1.qkv_weight, local.qkv_weight)


def test_sharded_checkpoint_fetches_block1_from_its_shards(server, tmp_path_factory):
    """A sharded checkpoint: block 1's tensors come from the shards the index names for
    them, and equal the folder's."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from detokgui.core.model.tokens import gpt2_tokenizer

    folder = tmp_path_factory.mktemp("hub-l1-sharded")
    torch.manual_seed(22)
    GPT2LMHeadModel(GPT2Config(n_embd=64, n_head=4, n_layer=4, n_positions=128)) \
        .save_pretrained(folder, max_shard_size="150KB")
    gpt2_tokenizer().save_pretrained(folder)
    index = json.loads((folder / "model.safetensors.index.json").read_text())["weight_map"]
    block1 = {index[k] for k in index if k.startswith("transformer.h.1.")}
    assert block1 != set(index.values())
    server.repo("test/sharded").add(folder, "main")
    layer = Layer0.from_pretrained("test/sharded", device="cpu")
    server.reset_counts()
    l1 = layer1(layer)
    fetched = {p.rsplit("/", 1)[-1] for m, p, _ in server.requests
               if "/resolve/" in p and m == "HEAD" and not p.endswith(".index.json")}
    assert fetched and fetched <= block1
    local = layer1(Layer0.from_pretrained(str(folder), device="cpu"))
    assert torch.equal(l1.qkv_weight, local.qkv_weight)
    assert torch.equal(l1.attn_out_weight, local.attn_out_weight)


def test_a_downloaded_layer0_folder_says_block1_is_not_in_it(server, tmp_path):
    hub.save_layer0("test/three", tmp_path / "carried")
    layer = Layer0.from_pretrained(str(tmp_path / "carried"), device="cpu")
    with pytest.raises(ModelLoadError, match="holds layer 0 only") as err:
        layer1(layer)
    assert "test/three" in str(err.value) and "\n" not in str(err.value)
