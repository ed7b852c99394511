"""Hub models through a real HTTP server on 127.0.0.1 (`hub_server`): only layer 0's bytes
are downloaded, revisions resolve to commits, progress moves and Cancel stops at once, and
every failure says what happened and leaves detokgui's cache usable (`core.model.sources.hub`)."""

import errno
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from approx import FLOAT32_RTOL
from conftest import ctrl_c_raises
from hub_server import HubServer, write_sparse_gpt2

from detokgui.core import Layer0
from detokgui.core.base.errors import Cancelled, ModelLoadError
from detokgui.core.model.sources import checkpoint, checkpoint_files, hub
from detokgui.core.model.sources.demo import write_random_checkpoint

TEXT = "The quick brown fox jumps over the lazy dog."


# --------------------------------------------------------------------------- checkpoints


@pytest.fixture(scope="session")
def tiny_main(tmp_path_factory):
    return write_random_checkpoint(tmp_path_factory.mktemp("hub-main"), n_layer=3, seed=11)


@pytest.fixture(scope="session")
def tiny_step(tmp_path_factory):
    return write_random_checkpoint(tmp_path_factory.mktemp("hub-step"), n_layer=3, seed=12)


@pytest.fixture(scope="session")
def tiny_bin(tmp_path_factory):
    return write_random_checkpoint(tmp_path_factory.mktemp("hub-bin"), n_layer=2, seed=13,
                                   weight_format="bin")


@pytest.fixture(scope="session")
def tiny_sharded(tmp_path_factory):
    """A 6-layer GPT-2 saved in 150 kB shards: layer 0 is in a few of them."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from detokgui.core.model.tokens import gpt2_tokenizer

    folder = tmp_path_factory.mktemp("hub-sharded")
    torch.manual_seed(14)
    model = GPT2LMHeadModel(GPT2Config(n_embd=64, n_head=4, n_layer=6, n_positions=128))
    model.save_pretrained(folder, max_shard_size="150KB")
    gpt2_tokenizer().save_pretrained(folder)
    assert (folder / "model.safetensors.index.json").is_file()
    return folder


@pytest.fixture(scope="session")
def xl_folder(tmp_path_factory):
    """gpt2-xl's shape (d=1600, 25 heads, V=50257, L=1024, 48 layers) as a sparse file:
    6.2 GB long, real bytes only for layer 0 (`write_sparse_gpt2`)."""
    return write_sparse_gpt2(tmp_path_factory.mktemp("hub-xl"), n_embd=1600, n_head=25,
                             n_layer=48, seed=15)


@pytest.fixture
def server(monkeypatch, tmp_path, tiny_main, tiny_step):
    """The local hub with `test/tiny` (main and the tag v1.0: commit A; branch step100:
    commit B), HF_ENDPOINT, HF_HOME and detokgui's cache pointed at it and at tmp_path."""
    s = HubServer()
    repo = s.repo("test/tiny")
    s.commit_a = repo.add(tiny_main, "main", "v1.0")
    s.commit_b = repo.add(tiny_step, "step100")
    monkeypatch.setenv("HF_ENDPOINT", s.endpoint)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("DETOKGUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)  # read at import
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    yield s
    s.close()


def load(name, **kw):
    return Layer0.from_pretrained(name, device="cpu", **kw)


def same_layer(a: Layer0, b: Layer0) -> None:
    """Bit-identical stored tensors, and the attention within float tolerance."""
    for key in ("E", "P", "qkv_weight", "qkv_bias", "attn_out_weight", "ln1_weight",
                "mlp_in_weight", "mlp_out_weight", "lnf_weight"):
        assert torch.equal(getattr(a, key), getattr(b, key)), key
    ids = a.tokenizer.encode(TEXT)
    assert ids == b.tokenizer.encode(TEXT)
    torch.testing.assert_close(a.attention(ids), b.attention(ids), rtol=FLOAT32_RTOL,
                               atol=FLOAT32_RTOL)


def finished_folders(root: Path) -> list[Path]:
    """detokgui's hub cache folders a later run would trust."""
    return [p for p in (root / "hub").glob("*/*") if p.is_dir() and not p.name.endswith(".part")
            and p.name != "refs"]


def weight_requests(s: HubServer) -> list:
    return [r for r in s.requests if r[1].startswith("/cdn/")]


# --------------------------------------------------------------------------- names


def test_split_revision():
    assert hub.split_revision("gpt2") == ("gpt2", None)
    assert hub.split_revision("EleutherAI/pythia-70m@step1000") == ("EleutherAI/pythia-70m",
                                                                     "step1000")
    assert hub.split_revision(" gpt2@v1.0 ") == ("gpt2", "v1.0")
    assert hub.split_revision("gpt2@") == ("gpt2", "")


def test_coalesce_merges_near_ranges():
    assert hub.coalesce([(100, 200), (0, 50), (70, 90), (5000, 6000)], gap=20) == [
        (0, 50), (70, 200), (5000, 6000)]


# --------------------------------------------------------------------------- layer 0 only


def test_hub_model_equals_the_folder_and_is_cached(server, tiny_main, tmp_path):
    layer = load("test/tiny")
    assert layer.name == "test/tiny" and layer.revision == server.commit_a
    same_layer(layer, load(str(tiny_main)))
    assert load(str(tiny_main)).revision is None
    (folder,) = finished_folders(tmp_path / "cache")
    assert folder.name.startswith(server.commit_a)
    with open(folder / "model.safetensors", "rb") as f:
        header = checkpoint_files.read_safetensors_header(f, folder, 1 << 40)[0]
    assert not any(k.startswith(("transformer.h.1.", "transformer.h.2.")) for k in header)
    assert (folder / "tokenizer.json").is_file() and (folder / "config.json").is_file()

    server.reset_counts()  # a second load reads the cache: no weight byte moves
    again = load("test/tiny")
    assert again.revision == server.commit_a and not weight_requests(server)
    assert server.sent < 2000


@pytest.mark.slow  # writes 0.45 GB of a 6.2 GB sparse file, loads two gpt2-xl layer 0s
def test_xl_shaped_checkpoint_transfers_under_a_tenth(server, xl_folder):
    size = (xl_folder / "model.safetensors").stat().st_size
    assert size > 6e9
    server.repo("test/xl").add(xl_folder, "main")
    messages = []
    layer = load("test/xl", progress=lambda f, m: messages.append(m))
    assert server.sent < 0.1 * size, (server.sent, size)
    assert (layer.d, layer.n_heads, layer.n_vocab, layer.n_positions) == (1600, 25, 50257, 1024)
    assert any(m.startswith("Downloading test/xl layer 0:") and "MB/s" in m for m in messages)
    ranged = weight_requests(server)
    assert ranged and all(r[2] and r[2].startswith("bytes=") for r in ranged)
    same_layer(layer, load(str(xl_folder)))


def test_sharded_checkpoint_fetches_only_the_shards_of_layer0(server, tiny_sharded):
    server.repo("test/sharded").add(tiny_sharded, "main")
    index = json.loads((tiny_sharded / "model.safetensors.index.json").read_text())["weight_map"]
    needed = {index[k] for k in index if k.startswith(("transformer.h.0.", "transformer.w",
                                                        "transformer.ln_f"))}
    all_shards = set(index.values())
    assert needed != all_shards
    layer = load("test/sharded")
    fetched = {r[1] for r in server.requests if "/resolve/" in r[1] and r[0] == "HEAD"
               and not r[1].endswith(".index.json")}
    assert fetched
    assert {p.rsplit("/", 1)[-1] for p in fetched} <= needed
    same_layer(layer, load(str(tiny_sharded)))


def test_bin_only_repository_downloads_whole_and_keeps_layer0(server, tiny_bin, tmp_path):
    server.repo("test/bin").add(tiny_bin, "main")
    messages = []
    layer = load("test/bin", progress=lambda f, m: messages.append(m))
    assert server.sent >= (tiny_bin / "pytorch_model.bin").stat().st_size
    assert any("Downloading test/bin layer 0" in m for m in messages)
    same_layer(layer, load(str(tiny_bin)))
    (folder,) = finished_folders(tmp_path / "cache")
    assert not list(folder.glob("*.bin")) and (folder / "model.safetensors").is_file()


# --------------------------------------------------------------------------- revisions


def test_revisions_resolve_to_commits(server, tiny_main, tiny_step):
    from detokgui.core.model.titles import model_name

    step = load("test/tiny@step100")
    assert step.revision == server.commit_b and step.name == "test/tiny@step100"
    same_layer(step, load(str(tiny_step)))
    assert model_name(step) == f"tiny@step100, commit {server.commit_b[:10]}"
    tag = load("test/tiny@v1.0")
    assert tag.revision == server.commit_a
    assert torch.equal(tag.E, load(str(tiny_main)).E)
    by_commit = load(f"test/tiny@{server.commit_b}")
    assert by_commit.revision == server.commit_b and torch.equal(by_commit.E, step.E)
    assert checkpoint.peek_config("test/tiny@step100").n_embd == 64

    server.repo("test/tiny").refs["step100"] = server.commit_a  # the branch moves on
    assert load("test/tiny@step100").revision == server.commit_a


def test_unknown_revision_and_repository(server):
    with pytest.raises(ModelLoadError, match="has no revision 'nope'"):
        load("test/tiny@nope")
    with pytest.raises(ModelLoadError, match="no model named test/nothing"):
        load("test/nothing")
    with pytest.raises(ModelLoadError, match="nothing after @"):
        load("test/tiny@")
    assert load("test/tiny").revision == server.commit_a


def test_offline_reopens_from_detokgui_cache(server, monkeypatch):
    load("test/tiny@step100")
    load("test/tiny")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert load("test/tiny").revision == server.commit_a
    assert load("test/tiny@step100").revision == server.commit_b
    with pytest.raises(ModelLoadError, match="not in the local Hugging Face cache"):
        load("test/tiny@v1.0")  # never resolved while online
    monkeypatch.delenv("HF_HUB_OFFLINE")
    server.close()  # the hub goes away
    start = time.perf_counter()
    assert checkpoint.locate("test/tiny@step100").revision == server.commit_b
    assert time.perf_counter() - start < 5  # no waiting for a hub that is not there
    assert load("test/tiny@step100").revision == server.commit_b


# --------------------------------------------------------------------------- progress


def test_slow_server_moving_progress_and_cancel_within_a_second(server, tmp_path):
    server.delay = 0.01  # about 1.6 MB/s
    seen, cancelled_at = [], []

    def report(fraction, message):
        seen.append((time.monotonic(), fraction, message))
        moving = {m for _, _, m in seen if m.startswith("Downloading") and "MB/s" in m}
        if len(moving) >= 4:
            cancelled_at.append(time.monotonic())
            raise Cancelled("cancelled")

    with pytest.raises(Cancelled):
        load("test/tiny", progress=report)
    assert time.monotonic() - cancelled_at[0] < 1.0
    transfer = [t for t, _, m in seen if m.startswith("Downloading")]
    gaps = sorted(b - a for a, b in itertools.pairwise(transfer))
    assert gaps[len(gaps) // 2] < 0.2 and gaps[-1] < 1.0  # (a loaded CPU may delay one)
    fractions = [f for _, f, m in seen if m.startswith("Downloading")]
    assert fractions == sorted(fractions) and fractions[-1] > fractions[0]
    assert not finished_folders(tmp_path / "cache") and hub.cached("test/tiny", None) is None

    server.delay = 0.0  # the next run works, and ignores what Cancel left
    assert load("test/tiny").revision == server.commit_a


def test_cancel_while_the_server_sends_nothing(server, tmp_path):
    server.delay = 5.0  # one 16 kB piece, then silence
    calls, when = [], []

    def report(fraction, message):
        calls.append(message)
        if sum(m.startswith("Downloading") for m in calls) >= 3:
            when.append(time.monotonic())
            raise Cancelled("cancelled")

    with pytest.raises(Cancelled):
        load("test/tiny", progress=report)
    assert time.monotonic() - when[0] < 1.0
    assert not finished_folders(tmp_path / "cache")


# --------------------------------------------------------------------------- failures


def test_dropped_connection_resumes_from_the_bytes_received(server, tiny_main):
    server.drop_after, server.drops = 3_000_000, 1
    layer = load("test/tiny")
    same_layer(layer, load(str(tiny_main)))
    starts = [int(r[2].split("=")[1].split("-")[0]) for r in weight_requests(server) if r[2]]
    assert len(starts) == len(set(starts)) == 3, server.requests  # header, range, its rest
    assert 1_000_000 < starts[-1] - starts[-2] <= 3_000_000  # resumed, not restarted


def test_connection_dropping_every_time_is_a_clean_error(server, tmp_path):
    server.drop_after, server.drops = 0, -1
    with pytest.raises(ModelLoadError, match="connection to the hub dropped"):
        load("test/tiny")
    assert not finished_folders(tmp_path / "cache")
    server.drops = 0
    assert load("test/tiny").revision == server.commit_a


@pytest.mark.parametrize(("where", "code", "headers", "message"), [
    ("/api/models/test/tiny", 401, {}, "private or gated.*log in with `hf auth login`"),
    ("/resolve/", 403, {}, r"refused access to test/tiny \(403\).*hf auth login"),
    ("/api/models/test/tiny", 403, {"X-Error-Code": "GatedRepo"}, "gated on the hub"),
    ("/api/models/test/tiny", 429, {}, r"limiting requests \(429"),
    ("/cdn/", 429, {}, r"limiting requests \(429"),
])
def test_refusals_say_what_to_do(server, tmp_path, where, code, headers, message):
    server.status = {where: (code, headers)}
    with pytest.raises(ModelLoadError, match=message) as info:
        load("test/tiny")
    assert "\n" not in str(info.value)
    assert not finished_folders(tmp_path / "cache")
    server.status = {}
    assert load("test/tiny").revision == server.commit_a


def test_server_ignoring_range_falls_back_to_the_whole_file(server, tiny_main, tmp_path):
    server.ignore_range = True
    layer = load("test/tiny")
    assert server.sent >= (tiny_main / "model.safetensors").stat().st_size
    same_layer(layer, load(str(tiny_main)))
    (folder,) = finished_folders(tmp_path / "cache")
    assert (folder / "model.safetensors").stat().st_size < (
        tiny_main / "model.safetensors").stat().st_size
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]


def test_full_disk_names_the_cache_file(server, tmp_path, monkeypatch):
    real = hub.write_layer0

    def full(path, parts, label):
        with open(path, "wb") as f:
            f.write(b"\0" * 1000)
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(hub, "write_layer0", full)
    with pytest.raises(ModelLoadError, match="disk is full.*model.safetensors") as info:
        load("test/tiny")
    assert str(tmp_path / "cache") in str(info.value)
    assert not finished_folders(tmp_path / "cache")
    assert not list((tmp_path / "cache" / "hub").glob("*/*.part"))
    monkeypatch.setattr(hub, "write_layer0", real)
    assert load("test/tiny").revision == server.commit_a


def test_a_killed_download_is_ignored_and_swept(server, tmp_path):
    from detokgui.core.base.atomic import STALE_PART_SECONDS

    folder = tmp_path / "cache" / "hub" / "test--tiny"
    stale = folder / f".{server.commit_a}-x.abcd.part"
    stale.mkdir(parents=True)
    (stale / "model.safetensors").write_bytes(b"half")
    old = time.time() - 2 * STALE_PART_SECONDS
    os.utime(stale / "model.safetensors", (old, old))
    os.utime(stale, (old, old))
    assert load("test/tiny").revision == server.commit_a
    assert not stale.exists()


# --------------------------------------------------------------------------- the CLI


def test_cli_export_from_the_hub_at_a_branch(server, tmp_path, tiny_step, isolated_env):
    env = {**isolated_env, "HF_ENDPOINT": server.endpoint,
           "DETOKGUI_CACHE_DIR": str(tmp_path / "cache"), "HF_HOME": str(tmp_path / "hf")}
    env.pop("HF_HUB_OFFLINE", None)
    out_hub, out_folder = tmp_path / "hub.csv", tmp_path / "folder.csv"
    common = ["export", "topk", "--query", " cat", "--k", "5", "--device", "cpu"]
    r = subprocess.run([sys.executable, "-m", "detokgui", *common, "--model",
                        "test/tiny@step100", "--out", str(out_hub)],
                       env=env, capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    assert "Downloading test/tiny@step100 layer 0:" in r.stderr
    assert f"commit {server.commit_b[:10]}" in r.stderr
    r2 = subprocess.run([sys.executable, "-m", "detokgui", *common, "--model", str(tiny_step),
                         "--out", str(out_folder)], env=env, capture_output=True, text=True,
                        timeout=300, check=False)
    assert r2.returncode == 0, r2.stderr
    assert out_hub.read_text() == out_folder.read_text()


def test_cli_ctrl_c_leaves_nothing_trusted(server, tmp_path, isolated_env):
    import signal

    env = {**isolated_env, "HF_ENDPOINT": server.endpoint,
           "DETOKGUI_CACHE_DIR": str(tmp_path / "cache"), "HF_HOME": str(tmp_path / "hf")}
    env.pop("HF_HUB_OFFLINE", None)
    server.delay = 0.05
    with ctrl_c_raises():  # the child starts with SIGINT's default disposition
        p = subprocess.Popen([sys.executable, "-m", "detokgui", "export", "sigma", "--model",
                              "test/tiny", "--out", str(tmp_path / "s.csv"), "--device", "cpu"],
                             env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not weight_requests(server):
        time.sleep(0.1)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    start = time.monotonic()
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert time.monotonic() - start < 5
    assert not finished_folders(tmp_path / "cache") and not (tmp_path / "s.csv").exists()
    assert not list((tmp_path / "cache" / "hub").glob("*/*.part"))


def test_threads_left_behind_end(server):
    """A cancelled download's reader thread ends once its connection does."""
    server.delay = 0.01

    def report(fraction, message):
        if message.startswith("Downloading"):
            raise Cancelled("cancelled")

    with pytest.raises(Cancelled):
        load("test/tiny", progress=report)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(
            t.name == "detokgui-download" for t in threading.enumerate()):
        time.sleep(0.1)
    assert not any(t.name == "detokgui-download" for t in threading.enumerate())


def test_dg_load_takes_a_revision(server, tiny_step):
    import detokgui as dg

    layer = dg.load("test/tiny@step100", device="cpu", progress=False)
    assert layer.revision == server.commit_b and layer.name == "test/tiny@step100"


def test_hugging_face_cache_is_read_first_without_the_network(server, tmp_path, tiny_step):
    """A model transformers already downloaded opens from the HF cache, revision and all,
    with no request to the hub."""
    sha = "ab" * 20
    snap = tmp_path / "hf" / "hub" / "models--test--tiny" / "snapshots" / sha
    snap.mkdir(parents=True)
    for f in tiny_step.iterdir():
        (snap / f.name).write_bytes(f.read_bytes())
    (snap.parents[1] / "refs").mkdir()
    (snap.parents[1] / "refs" / "step100").write_text(sha)
    server.reset_counts()
    layer = load("test/tiny@step100")
    assert layer.revision == sha and server.requests == []


def test_config_without_weights_in_the_hf_cache_offline(server, tmp_path, tiny_main,
                                                        monkeypatch):
    snap = tmp_path / "hf" / "hub" / "models--test--tiny" / "snapshots" / ("cd" * 20)
    snap.mkdir(parents=True)
    (snap / "config.json").write_bytes((tiny_main / "config.json").read_bytes())
    (snap.parents[1] / "refs").mkdir()
    (snap.parents[1] / "refs" / "main").write_text("cd" * 20)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="config but not its weights.*HF_HUB_OFFLINE"):
        load("test/tiny")
    monkeypatch.delenv("HF_HUB_OFFLINE")  # online: layer 0 comes from the hub
    assert load("test/tiny").revision == server.commit_a
