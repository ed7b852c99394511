"""`detokgui export topk|heatmap` and `detokgui --screenshot`."""

import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import torch
from test_cli import read_csv, run_cli

from detokgui.core.model.tokens import display_token


def raw_tensors(folder):
    import json

    from safetensors.torch import load_file

    st = load_file(str(folder / "model.safetensors"))
    cfg = json.loads((folder / "config.json").read_text())
    pre = "transformer."
    return {
        "E": st[pre + "wte.weight"], "P": st[pre + "wpe.weight"], "H": cfg["n_head"],
        "ln_w": st[pre + "h.0.ln_1.weight"],
        "c_attn_w": st[pre + "h.0.attn.c_attn.weight"],
    }


def brute_force_tee(folder, u=None, v=None):
    """T_ee(u, ·) (a query's row) or T_ee(·, v) (a key's column) per head, [H, V], from the
    checkpoint's raw tensors with the d x d W^QK formed explicitly; sigma per token = mean
    over positions of sigma(e_v + p_j), computed directly in chunks."""
    t = raw_tensors(folder)
    E, P, H, g, W = t["E"], t["P"], t["H"], t["ln_w"], t["c_attn_w"]
    d = E.shape[1]
    dh = d // H
    C = torch.eye(d) - torch.full((d, d), 1.0 / d)
    sig = torch.empty(E.shape[0])
    for a in range(0, E.shape[0], 2048):
        x = E[a:a + 2048, None, :] + P[None]
        sig[a:a + 2048] = torch.sqrt(x.var(-1, unbiased=False) + 1e-5).mean(1)
    out = []
    for h in range(H):
        Wq = C @ torch.diag(g) @ W[:, h * dh:(h + 1) * dh]
        Wk = C @ torch.diag(g) @ W[:, d + h * dh:d + (h + 1) * dh]
        WQK = Wq @ Wk.T
        if u is not None:
            out.append((E[u] @ WQK @ E.T) / (sig[u] * sig))
        else:
            out.append((E @ WQK @ E[v]) / (sig * sig[v]))
    return torch.stack(out)


def test_topk_csv_matches_brute_force(tiny_ckpt, tiny_layer, tmp_path):
    out = tmp_path / "topk.csv"
    r = run_cli("topk", "--model", str(tiny_ckpt), "--query", " Korea", "--k", "7",
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    rows = read_csv(out)
    assert list(rows[0]) == ["query_id", "query_token", "head", "rank", "key_id", "key_token",
                             "score"]
    u = tiny_layer.tokenizer.encode(" Korea")[0]
    assert {(int(r["query_id"]), r["query_token"]) for r in rows} == {(u, " Korea")}
    scores = brute_force_tee(tiny_ckpt, u=u)
    H = scores.shape[0]
    assert len(rows) == H * 7
    for h in range(H):
        vals, ids = torch.topk(scores[h], 7)
        mine = [r for r in rows if int(r["head"]) == h]
        assert [int(r["rank"]) for r in mine] == list(range(1, 8))
        assert [int(r["key_id"]) for r in mine] == ids.tolist()
        for r_, v in zip(mine, vals.tolist()):
            assert abs(float(r_["score"]) - v) < 1e-4 * max(1, abs(v))


def test_topk_one_head_raw(tiny_ckpt, tiny_layer, tmp_path):
    out = tmp_path / "topk.csv"
    r = run_cli("topk", "--model", str(tiny_ckpt), "--query", " Korea", "--head", "3",
                "--sigma", "none", "--out", str(out))
    assert r.returncode == 0, r.stderr
    rows = read_csv(out)
    assert {int(r["head"]) for r in rows} == {3} and len(rows) == 10
    L = tiny_layer
    u = L.tokenizer.encode(" Korea")[0]
    raw = (L.E[u] @ L.Wq[3]) @ (L.E @ L.Wk[3]).T
    assert [int(r["key_id"]) for r in rows] == torch.topk(raw, 10).indices.tolist()


HEATMAP_TEXT = " North Korea and South Korea"


def export_heatmap(tiny_ckpt, out):
    r = run_cli("heatmap", "--model", str(tiny_ckpt), "--tokens", HEATMAP_TEXT, "--head", "1",
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 500


def test_heatmap_csv(tiny_ckpt, tiny_layer, tmp_path):
    ids = tiny_layer.tokenizer.encode(HEATMAP_TEXT)
    export_heatmap(tiny_ckpt, tmp_path / "hm.csv")
    rows = read_csv(tmp_path / "hm.csv")
    assert len(rows) == len(ids) ** 2
    from detokgui.core.token_side.affinity import affinity_block

    block = affinity_block(tiny_layer, ids, ids, heads=[1])[0]
    for row in rows:
        assert int(row["head"]) == 1
        assert abs(float(row["value"]) - block[int(row["query_index"]), int(row["key_index"])].item()) < 1e-5


def test_heatmap_images(tiny_ckpt, tiny_layer, tmp_path):
    """The PNG and SVG are drawn by the matplotlib figures code (no Qt)."""
    ids = tiny_layer.tokenizer.encode(HEATMAP_TEXT)
    for fmt in ("png", "svg"):
        export_heatmap(tiny_ckpt, tmp_path / f"hm.{fmt}")
    root = ET.parse(tmp_path / "hm.svg").getroot()
    assert root.tag.endswith("svg") and sum(1 for _ in root.iter()) > 20
    assert (tmp_path / "hm.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = (tmp_path / "hm.svg").read_text(encoding="utf-8")
    for token in {display_token(tiny_layer.tokenizer, t) for t in ids}:
        assert token in svg  # each token labels its row and its column
    assert tiny_ckpt.name in svg and "T_ee, head 1 (Fig 2-B)" in svg
    raw = tmp_path / "raw.svg"
    r = run_cli("heatmap", "--model", str(tiny_ckpt), "--tokens", HEATMAP_TEXT, "--head", "1",
                "--sigma", "none", "--out", str(raw))
    assert r.returncode == 0, r.stderr
    assert "raw e W^QK e^T, head 1 (without LayerNorm, Fig 12)" in raw.read_text(encoding="utf-8")


def test_token_heatmap_figure(tiny_layer):
    """The image is the matrix given, on a colour scale symmetric around 0; every token
    labels its row and column, and a long text's labels are thinned evenly so that they
    do not overlap."""
    from detokgui.core.model.conventions import SigmaChoice
    from detokgui.figures.style import SMALL_PT
    from detokgui.figures.token_heatmap import token_heatmap

    ids = tiny_layer.tokenizer.encode(" North Korea and South Korea")
    n = len(ids)
    values = np.arange(n * n, dtype=np.float64).reshape(n, n) - 3.0
    fig = token_heatmap(tiny_layer, values, ids, 2, SigmaChoice("mean"))
    ax = fig.axes[0]
    image = ax.images[0]
    assert np.array_equal(image.get_array(), values)
    assert (image.norm.vmin, image.norm.vcenter, image.norm.vmax) == (-(n * n - 4), 0, n * n - 4)
    names = [display_token(tiny_layer.tokenizer, t) for t in ids]
    assert [t.get_text() for t in ax.get_yticklabels()] == names
    assert [t.get_text() for t in ax.get_xticklabels()] == names
    assert {t.get_rotation() for t in ax.get_xticklabels()} == {0}  # each fits its cell
    assert (ax.get_ylabel(), ax.get_xlabel()) == ("query ($i$)", "key ($j$)")

    many = (ids * 80)[:400]
    fig = token_heatmap(tiny_layer, np.ones((400, 400)), many, 0, SigmaChoice("none"))
    fig.draw_without_rendering()
    ax = fig.axes[0]
    ticks = ax.get_yticks()
    step = int(ticks[1] - ticks[0])
    assert step > 1 and ticks[0] == 0 and (np.diff(ticks) == step).all()
    assert list(ax.get_xticks()) == list(ticks)
    assert {t.get_rotation() for t in ax.get_xticklabels()} == {90}
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        display_token(tiny_layer.tokenizer, many[k]) for k in ticks.astype(int)]
    pitch_pt = ax.get_position().height * fig.get_figheight() * 72 / 400 * step
    assert pitch_pt > SMALL_PT


def test_token_exports_fail_cleanly(tiny_ckpt, tmp_path):
    for args, message in [
        (["topk", "--query", "", "--out", str(tmp_path / "a.csv")], "empty"),
        (["topk", "--query", "x", "--head", "9", "--out", str(tmp_path / "a.csv")], "outside"),
        (["heatmap", "--tokens", "x", "--out", str(tmp_path / "a.jpg")], "--out must end in"),
    ]:
        r = run_cli(*args, "--model", str(tiny_ckpt))
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


@pytest.mark.gui  # the window, in a subprocess
def test_screenshot_mode(tiny_ckpt, tmp_path, isolated_env):
    out = tmp_path / "shot.png"
    r = subprocess.run([sys.executable, "-m", "detokgui", "--model", str(tiny_ckpt), "--view",
                        "heatmap", "--screenshot", str(out)], check=False, capture_output=True,
                       text=True,
                       timeout=300, env=isolated_env)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = tmp_path / "bad.png"
    r = subprocess.run([sys.executable, "-m", "detokgui", "--model", str(tmp_path / "nope"),
                        "--screenshot", str(bad)], check=False, capture_output=True, text=True,
                       timeout=300,
                       env=isolated_env)
    assert r.returncode != 0 and bad.exists()
    assert "There is no folder" in r.stderr and "Traceback" not in r.stderr
