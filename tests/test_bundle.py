"""Smoke test of a frozen bundle (packaging/detokgui.spec). Runs only when DETOKGUI_BUNDLE
names the bundle's executable; building it is not part of the test run."""

import os
import subprocess

import pytest
from conftest import SUBPROCESS_ENV

BUNDLE = os.environ.get("DETOKGUI_BUNDLE")
pytestmark = pytest.mark.skipif(not BUNDLE, reason="set DETOKGUI_BUNDLE to a built bundle")


def run(*args):
    env = {**SUBPROCESS_ENV, "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([BUNDLE, *args], check=False, capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.mark.gui  # the window, in a subprocess
def test_bundle_draws_a_view_and_exits_cleanly(tiny_ckpt, tmp_path):
    out = tmp_path / "shot.png"
    r = run("--model", str(tiny_ckpt), "--view", "heatmap", "--screenshot", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bundle_exports_and_fails_cleanly(tiny_ckpt, tmp_path):
    out = tmp_path / "topk.csv"
    r = run("export", "topk", "--model", str(tiny_ckpt), "--query", " Korea", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_text().startswith("query_id,query_token,head,rank,key_id,key_token,score")
    r = run("export", "sigma", "--model", str(tmp_path / "missing"), "--out", str(out))
    assert r.returncode == 2 and "There is no folder" in r.stderr and "Traceback" not in r.stderr


def test_bundle_ships_the_demo_model_and_sample_corpus(tmp_path):
    """The trained demo model and the sample corpus come from inside the bundle: the
    subprocess runs with an empty HOME and cache folder, no network and no ../shared."""
    out = tmp_path / "topk.csv"
    r = run("export", "topk", "--model", "demo", "--query", " Korea", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_text().startswith("query_id,query_token,head,rank,key_id,key_token,score")
    out = tmp_path / "counts.csv"
    r = run("export", "counts", "--model", "demo", "--corpus", "sample", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert len(out.read_text().splitlines()) > 1000
