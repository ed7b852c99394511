"""The window's model comparison (issue 20): model B beside A, the shared selection mapped
between them, the head matching and the Compare tab group's panels, swapping and closing
B (and B freed), and `--compare` on the command line."""

import json
import subprocess
import sys
import weakref

import pytest
import torch
from conftest import SUBPROCESS_ENV, close_jobs, open_window, wait_idle
from PySide6.QtCore import QPointF, Qt

from detokgui.core.model.sources.demo import demo_model_folder
from detokgui.gui.plots import frame_of

pytestmark = pytest.mark.gui

TIMEOUT = 180000


def compare(qtbot, win, name):
    """Open `name` as model B through the window and wait for the head matching."""
    win.compare_with(str(name))
    qtbot.waitUntil(lambda: win.state.matching is not None or win.compare_error is not None,
                    timeout=TIMEOUT)
    assert win.compare_error is None
    wait_idle(qtbot, win, timeout=TIMEOUT)


def show(qtbot, win, view):
    """Bring a view to the front and wait until it shows its current results."""
    win.show_view(view)
    panel = win.panel(view)
    qtbot.waitUntil(lambda: not win.jobs.busy and panel.settled(), timeout=TIMEOUT)
    return panel


def assigned_cells(panel) -> list[tuple[int, int]]:
    """The heatmap's assignment markers as (head of A, head of B)."""
    x, y = panel.assigned.getData()
    return sorted((int(b - 0.5), int(a - 0.5)) for a, b in zip(x, y))


def topk_rows(panel) -> list[dict]:
    model = panel.table.records()
    return [model.record(r) for r in range(model.rowCount())]


@pytest.fixture
def demo_window(qtbot):
    win = open_window(qtbot, "demo", timeout=TIMEOUT)
    yield win
    close_jobs(win)


# --------------------------------------------------------------------------- permuted copy

PERMUTATION = [3, 0, 7, 5, 1, 6, 2, 4]  # B's head i is A's head PERMUTATION[i]


@pytest.fixture(scope="module")
def permuted_demo(tmp_path_factory):
    """The demo model with layer 0's heads permuted consistently in c_attn's q/k/v columns
    (and biases) and c_proj's rows, written with save_pretrained; its forward pass equals
    the original's."""
    from transformers import GPT2LMHeadModel

    from detokgui.core.model.tokens import gpt2_tokenizer

    model = GPT2LMHeadModel.from_pretrained(str(demo_model_folder())).eval()
    original = GPT2LMHeadModel.from_pretrained(str(demo_model_folder())).eval()
    d, H = model.config.n_embd, model.config.n_head
    dh = d // H
    cols = torch.cat([torch.arange(p * dh, (p + 1) * dh) for p in PERMUTATION])
    attn = model.transformer.h[0].attn
    with torch.no_grad():
        qkv = torch.cat([cols + part * d for part in range(3)])
        attn.c_attn.weight.copy_(attn.c_attn.weight[:, qkv].clone())
        attn.c_attn.bias.copy_(attn.c_attn.bias[qkv].clone())
        attn.c_proj.weight.copy_(attn.c_proj.weight[cols, :].clone())
        ids = torch.tensor([[2258, 4969, 290, 2520, 4969, 13, 9966]])
        assert torch.allclose(model(ids).logits, original(ids).logits, atol=1e-5)
    folder = tmp_path_factory.mktemp("permuted")
    model.save_pretrained(folder)
    gpt2_tokenizer().save_pretrained(folder)
    return folder


# --------------------------------------------------------------------------- OPT with its own vocabulary

OPT_VOCAB = 2000  # GPT-2's first 2000 tokens: ' Korea' (4969) is not among them


@pytest.fixture(scope="module")
def small_vocab_opt(tmp_path_factory):
    """A random OPT checkpoint whose byte-level tokenizer holds GPT-2's first OPT_VOCAB
    tokens (the merges that make them), so tokens map by string and some are missing."""
    from family_models import write
    from transformers import GPT2TokenizerFast

    from detokgui.core.model.tokens import gpt2_tokenizer_files

    folder = tmp_path_factory.mktemp("opt")
    vocab_file, merges_file = gpt2_tokenizer_files()
    vocab = {t: i for t, i in json.loads(vocab_file.read_text(encoding="utf-8")).items()
             if i < OPT_VOCAB}
    lines = merges_file.read_text(encoding="utf-8").splitlines()
    merges = [m for m in lines[1:] if m and len(m.split()) == 2
              and "".join(m.split()) in vocab and all(p in vocab for p in m.split())]
    (folder / "src").mkdir()
    (folder / "src" / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "src" / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n",
                                               encoding="utf-8")
    # a few embedding rows past the tokenizer's (its <|endoftext|> and padding), as OPT has
    write(folder / "ckpt", "opt", tokenizer=False, vocab_size=OPT_VOCAB + 8)
    tok = GPT2TokenizerFast(vocab=str(folder / "src" / "vocab.json"),
                            merges=str(folder / "src" / "merges.txt"))
    tok.save_pretrained(folder / "ckpt")
    return folder / "ckpt"


# --------------------------------------------------------------------------- tests


def test_demo_against_itself_shows_the_identity_matching(qtbot, demo_window):
    win = demo_window
    matching = win.panel("matching")
    assert matching.stack.currentWidget() is matching.empty  # no B: the invitation
    assert "Compare with another model" in matching.empty.label.text()
    win.show_view("matching")
    qtbot.mouseClick(matching.empty.button, Qt.LeftButton)  # offers Model > Compare with…
    qtbot.waitUntil(win.compare_menu.isVisible, timeout=5000)
    win.compare_menu.close()
    s = win.state
    # the matching runs in the background after B loads, and can be cancelled
    win.compare_with("demo")
    qtbot.waitUntil(lambda: "matching" in win.jobs.running_keys(), timeout=TIMEOUT)
    win.cancel_jobs()
    wait_idle(qtbot, win)
    assert s.layer_b is not None and s.pair is not None and s.matching is None
    assert win.rematch_action.isEnabled()
    assert "Match heads of A and B" in win.statusBar().currentMessage()
    win.match_again()
    qtbot.waitUntil(lambda: s.matching is not None, timeout=TIMEOUT)
    wait_idle(qtbot, win, timeout=TIMEOUT)
    assert not win.rematch_action.isEnabled()
    H = s.layer.n_heads
    assert s.pair.same_tokenizer
    assert sorted(s.matching.assignment) == [(h, h) for h in range(H)]
    panel = show(qtbot, win, "matching")
    assert panel.stack.currentWidget() is panel.body
    assert assigned_cells(panel) == [(h, h) for h in range(H)]
    label = win.model_label.text()
    assert label.startswith("A: demo model") and "B: demo model" in label
    # hovering a cell names its parts
    assert "similarity" in s.matching.describe(2, 2) and "assigned" in s.matching.describe(2, 2)

    topk = show(qtbot, win, "compare-topk")
    rows = topk_rows(topk)
    assert len(rows) == 10
    for r in rows:
        assert r["key_a"] == r["key_b"] and r["rank_a_in_other"] == r["rank"]
        assert r["rank_b_in_other"] == r["rank"]

    stats = show(qtbot, win, "compare-stats")
    qtbot.waitUntil(lambda: stats.table.records().rowCount() > 0, timeout=TIMEOUT)
    for r in stats.rows():
        assert r["difference"] == 0 or r["difference"] != r["difference"]  # 0, or NaN

    pattern = show(qtbot, win, "compare-pattern")
    (xa, ya), (xb, yb) = pattern.curves()["A"], pattern.curves()["B"]
    assert (xa == xb).all() and (ya == yb).all()

    win.resize(1024, 700)  # every comparison view fits a small window
    for view in ("matching", "compare-topk", "compare-pattern", "compare-classes",
                 "compare-stats"):
        show(qtbot, win, view)
        assert (win.width(), win.height()) == (1024, 700), view
    assert "B's head 0" in win.selection_label.text()


def test_a_head_permuted_copy_is_matched_and_followed(qtbot, demo_window, permuted_demo):
    win = demo_window
    compare(qtbot, win, permuted_demo)
    s = win.state
    expected = sorted((a, b) for b, a in enumerate(PERMUTATION))
    assert sorted(s.matching.assignment) == expected
    panel = show(qtbot, win, "matching")
    assert assigned_cells(panel) == expected

    topk = show(qtbot, win, "compare-topk")
    grid = topk.grid.records()  # every matched pair: A's keys and its match's, the same
    headers = [grid.headerData(c, Qt.Horizontal) for c in range(grid.columnCount())]
    assert headers[1:] == [f"{m} {h}" for a in range(8)
                           for m, h in (("A", a), ("B", PERMUTATION.index(a)))]
    for c in range(1, grid.columnCount(), 2):
        assert grid.texts(c) == grid.texts(c + 1)
    for head in (0, 2, 5):
        s.set_head(head)
        assert s.head_b == PERMUTATION.index(head)
        qtbot.waitUntil(lambda: not win.jobs.busy and topk.settled(), timeout=TIMEOUT)
        assert topk.shown_request.head_b == PERMUTATION.index(head)
        rows = topk_rows(topk)
        assert [r["key_a"] for r in rows] == [r["key_b"] for r in rows]
        assert [r["rank_a_in_other"] for r in rows] == list(range(1, 11))
        assert f"A head {head} ↔ B head {PERMUTATION.index(head)}" in topk.pair_text.text()
        assert f"B's head {PERMUTATION.index(head)}" in win.selection_label.text()

    # A's head statistics next to its match's: the same head, so the same numbers
    stats = show(qtbot, win, "compare-stats")
    qtbot.waitUntil(lambda: bool(stats.rows()), timeout=TIMEOUT)
    rows = stats.rows()
    assert {r["head_b"] for r in rows} == {PERMUTATION.index(s.head)}
    for r in rows:
        if r["value_a"] == r["value_a"]:  # not NaN (a corpus metric without a corpus)
            assert r["value_b"] == pytest.approx(r["value_a"], rel=1e-5, abs=1e-6), r

    # a click on a cell of the heatmap selects that pair, assigned or not
    panel = show(qtbot, win, "matching")
    vb = panel.plot.getViewBox()

    for a, b in ((1, 1), (4, PERMUTATION.index(4))):
        scene = vb.mapViewToScene(QPointF(b + 0.5, a + 0.5))
        point = panel.frame.view.mapFromScene(scene)
        qtbot.mouseClick(panel.frame.view.viewport(), Qt.LeftButton, pos=point)
        qtbot.waitUntil(lambda cell=(a, b): (s.head, s.head_b) == cell, timeout=5000)
    assert "matched" in panel.pair_text.text()


def test_tokens_map_by_string_to_an_opt_model_and_a_missing_one_is_said(
        qtbot, demo_window, small_vocab_opt):
    win = demo_window
    s = win.state
    korea = s.query_token
    assert s.token_text(korea) == "␣Korea"
    compare(qtbot, win, small_vocab_opt)
    assert not s.pair.same_tokenizer
    # a random B: no head is matched; a pair of heads chosen by hand is shown all the same
    head, head_b = s.matching.assignment[0]
    s.set_head_pair(head, head_b)
    from detokgui.core.compare.views import swapped_pair

    turned, fresh = swapped_pair(s.pair), s.pair.swapped()  # maps handed over, not remade
    assert "a_to_b" in vars(turned) and (turned.a_to_b == fresh.a_to_b).all()
    assert (turned.b_to_a == fresh.b_to_a).all() and not turned.same_tokenizer
    assert s.query_token_b is None  # ' Korea' is not among the OPT model's tokens
    assert "Query: ␣Korea (missing in B)" in win.selection_label.text()
    topk = show(qtbot, win, "compare-topk")
    assert "missing in B" in topk.pair_text.text()
    assert "missing in B" in topk.status.text()
    assert all(r["key_b"] is None for r in topk_rows(topk))
    assert all(r["rank_a_in_other"] is None for r in topk_rows(topk))
    topk.options.set(k=200)  # among 200 keys, some of the 2000 tokens B has
    qtbot.waitUntil(lambda: not win.jobs.busy and topk.settled(), timeout=TIMEOUT)
    model = topk.table.records()
    for row, r in enumerate(topk_rows(topk)):  # B lacks the query; some keys too
        assert model.text(row, 3) == ("missing in B" if r["key_a_in_other"] is None else "–")
    assert {model.text(row, 3) for row in range(200)} == {"missing in B", "–"}
    topk.options.set(k=10)
    pattern = show(qtbot, win, "compare-pattern")
    assert list(pattern.curves()) == ["A"] and "missing in B" in pattern.status.text()

    the = s.layer.tokenizer.convert_tokens_to_ids("Ġthe")
    s.set_query_token(the)
    b_tok = s.layer_b.tokenizer
    assert b_tok.convert_ids_to_tokens(s.query_token_b) == "Ġthe"
    assert "Query: ␣the (B: ␣the)" in win.selection_label.text()
    qtbot.waitUntil(lambda: not win.jobs.busy and pattern.settled(), timeout=TIMEOUT)
    assert list(pattern.curves()) == ["A", "B"]
    # B's context is shorter (36 positions): its pattern ends at A's n, aligned
    xb = pattern.curves()["B"][0]
    assert xb[-1] == s.query_position and len(xb) == s.layer_b.n_positions
    topk = show(qtbot, win, "compare-topk")
    rows = topk_rows(topk)
    for r in rows:  # each B key is named by B's tokenizer and mapped back to A by string
        if r["key_b_in_other"] is not None:
            assert (s.layer.tokenizer.convert_ids_to_tokens(r["key_b_in_other"])
                    == b_tok.convert_ids_to_tokens(r["key_b"]))
    assert any(r["rank_a_in_other"] is not None for r in rows)

    # B has 5 heads, A 8: a head of A without a match says so; a chosen pair shows
    lone = next(h for h in range(s.layer.n_heads) if s.matching.assigned_of_a(h) is None)
    s.set_head(lone)
    qtbot.waitUntil(lambda: not win.jobs.busy and topk.settled(), timeout=TIMEOUT)
    assert s.head_b is None and "has no match in B (5 heads)" in topk.status.text()
    assert "no match in B</span> (B has 5 heads)" in topk.pair_text.text()
    s.set_head_pair(lone, 4)
    qtbot.waitUntil(lambda: not win.jobs.busy and topk.settled(), timeout=TIMEOUT)
    assert topk.shown_request.head_b == 4 and "(chosen; " in topk.pair_text.text()
    assert s.matching.inequality(lone, 4) in topk.pair_text.text()


def test_random_weights_are_said_to_have_no_match(qtbot, demo_window, tiny_ckpt):
    win = demo_window
    s = win.state
    compare(qtbot, win, tiny_ckpt)  # random weights, 4 heads
    m = s.matching
    assert len(m.assignment) == 4 and m.matched == [False] * 4
    panel = show(qtbot, win, "matching")
    assert assigned_cells(panel) == []  # no solid square: nothing matched
    x, y = panel.unmatched.getData()  # dashed grey squares on every assigned pair
    assert sorted((int(b - 0.5), int(a - 0.5)) for a, b in zip(x, y)) == sorted(m.assignment)
    assert "0 of 4 assigned pairs matched (S > θ" in frame_of(panel.plot).title_text()
    said = panel.status.text()
    assert said.startswith("Dashed grey squares — no match: S ≤ θ") and "θ here 0." in said
    a, b = m.assignment[0]
    assert " · assigned, no match: S " in m.describe(a, b)
    assert f"family-wise {m.p_adjusted[a, b]:.2g}" in m.describe(a, b)
    s.set_head(a)
    assert s.head_b is None  # A's head has no match, so no head of B is shown
    assert f"no match in B</span> (assigned B head {b}: S " in panel.pair_text.text()

    topk = show(qtbot, win, "compare-topk")
    assert topk.shown_request is None
    assert (f"A's head {a} has no match in B: the assignment pairs it with B's head {b}, "
            f"but {m.inequality(a, b)}, no more alike than heads of unrelated models"
            in topk.status.text())
    grid = topk.grid.records()
    headers = [grid.headerData(c, Qt.Horizontal) for c in range(grid.columnCount())]
    assert [h for h in headers if h.startswith("B ")] == [
        f"B {y} (no match)" for _, y in sorted(m.assignment)]
    assert topk.grid_status.text() == "4 assigned pairs, 0 matched"

    s.set_head_pair(a, b)  # chosen by hand (a click on its cell): shown, and said to be so
    qtbot.waitUntil(lambda: not win.jobs.busy and topk.settled(), timeout=TIMEOUT)
    assert topk.shown_request.head_b == b
    assert f"(chosen; <span style='color:#b00'>no match: {m.inequality(a, b)}" in \
        topk.pair_text.text()


def test_swap_and_close_release_b(qtbot, demo_window, permuted_demo, tiny_ckpt):
    win = demo_window
    s = win.state
    compare(qtbot, win, tiny_ckpt)
    first_b = weakref.ref(s.layer_b)
    compare(qtbot, win, permuted_demo)  # replacing B frees the one before
    qtbot.waitUntil(lambda: first_b() is None, timeout=TIMEOUT)

    a, b = weakref.ref(s.layer), weakref.ref(s.layer_b)
    s.set_head(2)
    win.swap_models()
    assert s.layer is b() and s.layer_b is a()
    assert s.head == PERMUTATION.index(2) and s.head_b == 2  # the head followed
    assert s.matching is not None and s.pair.a is s.layer  # turned round, not recomputed
    assert sorted(s.matching.assignment) == sorted(enumerate(PERMUTATION))
    wait_idle(qtbot, win, timeout=TIMEOUT)
    label = win.model_label.text()
    assert label.index("permuted") < label.index("B: demo model")

    win.close_comparison()
    assert s.layer_b is None and s.pair is None and s.matching is None
    panel = show(qtbot, win, "compare-topk")
    assert panel.stack.currentWidget() is panel.empty
    qtbot.waitUntil(lambda: a() is None, timeout=TIMEOUT)  # the old A, B since the swap
    assert s.layer is b()


def test_a_new_a_is_paired_with_b_and_the_old_a_freed(qtbot, demo_window, tiny_ckpt):
    win = demo_window
    s = win.state
    compare(qtbot, win, "demo")
    for view in ("matching", "compare-topk", "compare-pattern"):
        show(qtbot, win, view)
    old_a, first_pair = weakref.ref(s.layer), weakref.ref(s.pair)
    win.load_model(str(tiny_ckpt))  # 4 heads: the matching is 4 x 8 now
    qtbot.waitUntil(lambda: s.matching is not None and s.matching.similarity.shape == (4, 8),
                    timeout=TIMEOUT)
    wait_idle(qtbot, win, timeout=TIMEOUT)
    assert s.pair.a is s.layer and s.pair.b is s.layer_b
    topk = show(qtbot, win, "compare-topk")
    # the tiny model's random heads are like none of the demo's: no head of B to show
    assert not any(s.matching.matched) and s.head_b is None and topk.shown_request is None
    assert "has no match in B" in topk.status.text()
    qtbot.waitUntil(lambda: old_a() is None and first_pair() is None, timeout=TIMEOUT)


def test_compare_on_the_command_line(tmp_path):
    out = tmp_path / "matching.png"
    res = subprocess.run(
        [sys.executable, "-m", "detokgui", "--model", "demo", "--compare", "demo", "--view",
         "matching", "--screenshot", str(out)],
        capture_output=True, text=True, timeout=600, env=SUBPROCESS_ENV, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    assert out.stat().st_size > 10000
    from PySide6.QtGui import QImage

    assert not QImage(str(out)).isNull()
