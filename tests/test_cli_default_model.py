"""`detokgui export` without --model (the default, gpt2) on a machine where gpt2 is neither
cached nor reachable: one line naming `--model demo` and `--model FOLDER`, a non-zero exit,
in seconds (issue 19). When gpt2 is cached the default works as before."""

from __future__ import annotations

import subprocess
import sys
import time

from conftest import SUBPROCESS_ENV, closed_port

from detokgui.cli import main as cli_main

SHA = "0" * 40


def export_topk(tmp_path, capsys, *extra):
    out = tmp_path / "topk.csv"
    started = time.perf_counter()
    rc = cli_main(["topk", "--query", " Korea", "--k", "3", "--out", str(out), *extra])
    took = time.perf_counter() - started
    return rc, capsys.readouterr(), out, took


def assert_one_clear_line(err: str, *why: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("detokgui export topk: error: gpt2 is not in the local Hugging Face "
                           "cache"), line
    assert "--model demo" in line and "--model FOLDER" in line
    for part in why:
        assert part in line, line
    assert "Traceback" not in err


def test_offline_default_model_names_the_demo(monkeypatch, empty_hf_cache, tmp_path, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc, cap, out, took = export_topk(tmp_path, capsys)
    assert rc == 2 and not out.exists()
    assert_one_clear_line(cap.err, "HF_HUB_OFFLINE is set")
    assert took < 5


def test_unreachable_default_model_names_the_demo(monkeypatch, empty_hf_cache, tmp_path,
                                                  capsys):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    endpoint = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    rc, cap, out, took = export_topk(tmp_path, capsys)
    assert rc == 2 and not out.exists()
    assert_one_clear_line(cap.err, f"the hub ({endpoint}) cannot be reached")
    assert took < 5


def test_the_suggested_demo_works(monkeypatch, empty_hf_cache, tmp_path, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc, cap, out, _ = export_topk(tmp_path, capsys, "--model", "demo")
    assert rc == 0, cap.err
    assert out.is_file()


def test_cached_default_model_is_used(monkeypatch, empty_hf_cache, tmp_path, capsys, tiny_ckpt):
    root = empty_hf_cache / "models--gpt2"
    snap = root / "snapshots" / SHA
    snap.mkdir(parents=True)
    for f in tiny_ckpt.iterdir():
        (snap / f.name).write_bytes(f.read_bytes())
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(SHA)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc, cap, out, _ = export_topk(tmp_path, capsys)
    assert rc == 0, cap.err
    assert out.is_file()


def test_as_a_user_runs_it(tmp_path):
    """The real command in a fresh process (HF_HOME empty, offline)."""
    env = dict(SUBPROCESS_ENV, HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")
    out = tmp_path / "x.csv"
    r = subprocess.run([sys.executable, "-m", "detokgui", "export", "topk", "--query", " Korea",
                        "--out", str(out)], capture_output=True, text=True, timeout=120, env=env,
                       check=False)
    assert r.returncode == 2 and not out.exists()
    assert_one_clear_line(r.stderr, "HF_HUB_OFFLINE is set")
