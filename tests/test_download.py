"""`detokgui download NAME[@REV] --out FOLDER` against the local hub (`hub_server`): the
folder it writes holds layer 0 only, says where it came from, and — carried to a machine
without network — opens as the hub model does; a bad name, a bad --out, a refused
architecture, an unreachable hub, a dropped connection, a full disk and Ctrl+C are each
one line and a non-zero exit, and leave no folder (`core.model.sources.hub.save_layer0`,
`cli.download`)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from approx import FLOAT32_RTOL
from conftest import closed_port, ctrl_c_raises
from hub_server import HubServer

from detokgui.app import main
from detokgui.core import Layer0
from detokgui.core.model.sources import checkpoint_files, hub
from detokgui.core.model.sources.demo import write_random_checkpoint

TEXT = "The quick brown fox jumps over the lazy dog."
FOLDED = ("E", "P", "Wq", "Wk", "Wv", "bq", "bk", "bv", "bQK", "Wo", "bVO")


@pytest.fixture(scope="session")
def tiny_main(tmp_path_factory):
    return write_random_checkpoint(tmp_path_factory.mktemp("dl-main"), n_layer=3, seed=21)


@pytest.fixture(scope="session")
def tiny_step(tmp_path_factory):
    return write_random_checkpoint(tmp_path_factory.mktemp("dl-step"), n_layer=3, seed=22)


@pytest.fixture(scope="session")
def rotary(tmp_path_factory, tiny_main):
    """A repository whose config.json is a rotary model's (GPT-NeoX), weights and all."""
    folder = tmp_path_factory.mktemp("dl-rotary")
    for f in tiny_main.iterdir():
        shutil.copy(f, folder / f.name)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(model_type="gpt_neox", architectures=["GPTNeoXForCausalLM"], rotary_pct=0.25)
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


@pytest.fixture
def server(monkeypatch, tmp_path, tiny_main, tiny_step, rotary):
    """The local hub with `test/tiny` (main: commit A; branch step100: commit B) and
    `test/neox` (a rotary model); HF_ENDPOINT, HF_HOME and detokgui's cache pointed at
    it and at tmp_path."""
    s = HubServer()
    repo = s.repo("test/tiny")
    s.commit_a = repo.add(tiny_main, "main", "v1.0")
    s.commit_b = repo.add(tiny_step, "step100")
    s.repo("test/neox").add(rotary, "main")
    monkeypatch.setenv("HF_ENDPOINT", s.endpoint)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("DETOKGUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)  # read at import
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    yield s
    s.close()


def download(capsys, *args) -> tuple[int, str, str]:
    rc = main(["download", *map(str, args)])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def load(name) -> Layer0:
    return Layer0.from_pretrained(str(name), device="cpu")


def one_error_line(err: str) -> str:
    """The one error line of stderr (progress lines, which may come before, aside)."""
    lines = [line for line in err.strip().splitlines() if not line.startswith("Downloading")]
    assert len(lines) == 1, err
    assert lines[0].startswith("detokgui download: error: "), err
    assert "Traceback" not in err
    return lines[0]


def nothing_beside(out: Path) -> None:
    """No folder at `out`, and no temporary left beside it."""
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]


def go_offline(monkeypatch, tmp_path, server) -> None:
    """Another machine: no hub, HF_HUB_OFFLINE=1, empty caches."""
    server.close()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("DETOKGUI_CACHE_DIR", str(tmp_path / "offline-cache"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "offline-hf"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)


def same_layer(a: Layer0, b: Layer0) -> None:
    """The folded tensors and the attention of a text agree within float tolerance."""
    for key in FOLDED:
        torch.testing.assert_close(getattr(a, key), getattr(b, key), rtol=FLOAT32_RTOL,
                                   atol=FLOAT32_RTOL, msg=key)
    ids = a.tokenizer.encode(TEXT)
    assert ids == b.tokenizer.encode(TEXT)
    torch.testing.assert_close(a.attention(ids), b.attention(ids), rtol=FLOAT32_RTOL,
                               atol=FLOAT32_RTOL)


# --------------------------------------------------------------------------- the folder


@pytest.mark.gui  # the window's title and status bar too: imports Qt
def test_the_folder_opens_offline_as_the_hub_model(server, tmp_path, monkeypatch, capsys):
    out = tmp_path / "gpt2-layer0"
    rc, stdout, err = download(capsys, "test/tiny", "--out", out)
    assert rc == 0, err
    assert "Downloading test/tiny layer 0:" in err
    files = sorted(p.name for p in out.iterdir())
    assert files == ["config.json", hub.SOURCE_FILE, "model.safetensors", "tokenizer.json",
                     "tokenizer_config.json"]
    with open(out / "model.safetensors", "rb") as f:
        header = checkpoint_files.read_safetensors_header(f, out, 1 << 40)[0]
    assert any(k.startswith("transformer.h.0.") for k in header)
    assert not any(k.startswith(("transformer.h.1.", "transformer.h.2.")) for k in header)
    source = json.loads((out / hub.SOURCE_FILE).read_text("utf-8"))
    assert (source["repo"], source["revision"], source["commit"]) == (
        "test/tiny", None, server.commit_a)
    size = sum(p.stat().st_size for p in out.iterdir())
    assert f"wrote {out}: layer 0 of test/tiny at commit {server.commit_a}" in stdout
    assert f"{size / 1e6:.1f} MB" in stdout
    assert stdout.strip().endswith(f"detokgui --model {out}")

    direct = load("test/tiny")  # the hub model as `--model test/tiny` opens it
    carried = tmp_path / "usb" / "tiny"  # the folder, copied to a machine without network
    shutil.copytree(out, carried)
    go_offline(monkeypatch, tmp_path, server)
    layer = load(carried)
    same_layer(layer, direct)
    assert layer.revision == server.commit_a  # the record names the commit
    assert layer.name == str(carried)

    import detokgui as dg
    from detokgui.core.model.titles import model_name
    from detokgui.gui.main_window import MainWindow

    assert dg.load(str(carried), device="cpu", progress=False).revision == server.commit_a
    assert model_name(layer) == f"tiny, commit {server.commit_a[:10]}"
    assert MainWindow.model_title(layer) == f"{carried} (commit {server.commit_a[:10]})"


def test_export_reads_the_carried_folder_offline(server, tmp_path, monkeypatch, capsys):
    out = tmp_path / "tiny"
    assert download(capsys, "test/tiny", "--out", out)[0] == 0
    from_hub = tmp_path / "hub.csv"
    args = ["export", "topk", "--query", " cat", "--k", "5", "--device", "cpu"]
    assert main([*args, "--model", "test/tiny", "--out", str(from_hub)]) == 0
    go_offline(monkeypatch, tmp_path, server)
    capsys.readouterr()
    from_folder = tmp_path / "folder.csv"
    assert main([*args, "--model", str(out), "--out", str(from_folder)]) == 0
    assert f"is commit {server.commit_a[:10]}" in capsys.readouterr().err
    assert from_folder.read_text() == from_hub.read_text()


def test_a_revision_resolves_and_is_recorded(server, tmp_path, tiny_step, capsys):
    out = tmp_path / "step100"
    rc, stdout, err = download(capsys, "test/tiny@step100", "--out", out)
    assert rc == 0, err
    assert f"layer 0 of test/tiny (step100) at commit {server.commit_b}" in stdout
    source = json.loads((out / hub.SOURCE_FILE).read_text("utf-8"))
    assert (source["repo"], source["revision"], source["commit"]) == (
        "test/tiny", "step100", server.commit_b)
    assert hub.recorded_commit(out) == server.commit_b
    layer = load(out)
    assert layer.revision == server.commit_b
    same_layer(layer, load(tiny_step))

    by_commit = tmp_path / "by-commit"
    assert download(capsys, f"test/tiny@{server.commit_a}", "--out", by_commit)[0] == 0
    assert hub.recorded_commit(by_commit) == server.commit_a


def test_an_existing_out_is_refused_unless_an_earlier_download_and_force(server, tmp_path,
                                                                         capsys):
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "thesis.tex").write_text("keep me")
    server.reset_counts()
    for extra in ((), ("--force",)):  # --force never replaces a folder it did not write
        rc, _, err = download(capsys, "test/tiny", "--out", mine, *extra)
        assert rc == 2
        assert "is not empty" in one_error_line(err)
        assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]
    assert server.requests == []  # refused before anything was asked of the hub

    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    rc, _, err = download(capsys, "test/tiny", "--out", a_file)
    assert rc == 2 and "is not a folder" in one_error_line(err)
    rc, _, err = download(capsys, "test/tiny", "--out", tmp_path / "missing" / "out")
    assert rc == 2 and f"{tmp_path / 'missing'} does not exist" in one_error_line(err)

    empty = tmp_path / "empty"
    empty.mkdir()
    assert download(capsys, "test/tiny", "--out", empty)[0] == 0  # an empty folder is fine
    rc, _, err = download(capsys, "test/tiny@step100", "--out", empty)
    assert rc == 2 and "--force" in one_error_line(err)
    assert hub.recorded_commit(empty) == server.commit_a
    rc, _, err = download(capsys, "test/tiny@step100", "--out", empty, "--force")
    assert rc == 0, err
    assert hub.recorded_commit(empty) == server.commit_b
    nothing_beside(tmp_path / "never-written")
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("name", "message"), [
    ("test/nothing", "no model named test/nothing"),
    ("test/tiny@nope", "has no revision 'nope'"),
    ("test/tiny@", "not a hub model name"),
    ("demo", "shipped with detokgui"),
    ("test/neox", "rotary"),
])
def test_a_bad_name_is_one_line(server, tmp_path, capsys, name, message):
    out = tmp_path / "out"
    rc, stdout, err = download(capsys, name, "--out", out)
    assert rc == 2 and stdout == ""
    assert message in one_error_line(err)
    nothing_beside(out)


def test_a_path_is_not_a_hub_name(server, tmp_path, tiny_main, monkeypatch, capsys):
    rc, _, err = download(capsys, tiny_main, "--out", tmp_path / "out")
    assert rc == 2 and "not a hub model name" in one_error_line(err)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "test" / "tiny").mkdir(parents=True)  # a folder named as the model
    rc, _, err = download(capsys, "test/tiny", "--out", "out")
    assert rc == 0, err
    assert hub.recorded_commit(tmp_path / "out") == server.commit_a


def test_an_unreachable_hub_is_one_line_at_once(server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    out = tmp_path / "out"
    started = time.perf_counter()
    rc, _, err = download(capsys, "test/tiny", "--out", out)
    assert time.perf_counter() - started < 10
    assert rc == 2 and "cannot be reached" in one_error_line(err)
    nothing_beside(out)


def test_a_dropped_connection_leaves_no_folder(server, tmp_path, capsys):
    server.drop_after, server.drops = 0, -1
    out = tmp_path / "out"
    rc, _, err = download(capsys, "test/tiny", "--out", out)
    assert rc == 2 and "connection to the hub dropped" in one_error_line(err)
    nothing_beside(out)


def test_a_full_disk_leaves_no_folder(server, tmp_path, monkeypatch, capsys):
    def full(src, dst):
        with open(dst, "wb") as f:
            f.write(b"\0" * 1000)
        raise OSError(errno.ENOSPC, "No space left on device", str(dst))

    monkeypatch.setattr(hub, "_copy_file", full)
    out = tmp_path / "out"
    rc, _, err = download(capsys, "test/tiny", "--out", out)
    assert rc == 2 and "disk is full" in one_error_line(err)
    nothing_beside(out)


def test_ctrl_c_stops_at_once_and_leaves_no_folder(server, tmp_path, isolated_env):
    env = {**isolated_env, "HF_ENDPOINT": server.endpoint,
           "DETOKGUI_CACHE_DIR": str(tmp_path / "cache"), "HF_HOME": str(tmp_path / "hf")}
    env.pop("HF_HUB_OFFLINE", None)
    server.delay = 0.05
    out = tmp_path / "out"
    with ctrl_c_raises():  # the child starts with SIGINT's default disposition
        p = subprocess.Popen([sys.executable, "-m", "detokgui", "download", "test/tiny",
                              "--out", str(out)], env=env, stderr=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(
            r[1].startswith("/cdn/") for r in server.requests):
        time.sleep(0.1)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    start = time.monotonic()
    stdout, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert time.monotonic() - start < 5
    assert f"interrupted; nothing was written to {out}" in err and stdout == ""
    nothing_beside(out)
    assert not list((tmp_path / "cache" / "hub").glob("*/*.part"))


# --------------------------------------------------------------------------- help, banner


def test_download_help_imports_neither_qt_nor_torch():
    code = ("import sys\nfrom detokgui.app import main\ntry:\n    main(['download', '--help'])\n"
            "except SystemExit as e:\n    assert e.code == 0\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'PySide6', 'transformers', 'huggingface_hub')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60, check=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert "--out FOLDER" in r.stdout and "--force" in r.stdout
    assert r.stdout.strip().splitlines()[-1] == "[]"


def test_the_offline_first_start_banner_names_download(qtbot, monkeypatch, empty_hf_cache):
    from conftest import close_jobs
    from test_first_start import first_start

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    win = first_start(qtbot)
    try:
        assert "detokgui download gpt2 --out FOLDER" in win.banner.text()
    finally:
        close_jobs(win)
