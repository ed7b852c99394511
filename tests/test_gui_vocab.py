"""The Vocabulary panels (A4-A7) through the real window, on a random model with a
400-token vocabulary (whole-vocabulary passes take milliseconds) and the sample corpus:
what each shows equals brute force (tests/brute_vocab.py) or the core result, clicks
select tokens and heads, hidden panels compute nothing, and `detokgui --corpus`."""

import html
import subprocess
import sys

import numpy as np
import pytest
from brute_vocab import raw_model, te_matrix, tee_matrix
from conftest import SUBPROCESS_ENV, close_jobs, isolated_environment, open_window, wait_idle
from PySide6.QtCore import QPointF, Qt
from scipy.stats import spearmanr
from tables import cell_text, click_cell, column_texts, row_count
from test_panels import Submitted

from detokgui.core.base.numbers import num
from detokgui.core.corpus.counts import layer_corpus_counts
from detokgui.core.model.sources.demo import sample_corpus
from detokgui.core.token_side import auroc as A
from detokgui.core.token_side import vocab_stats as VS
from detokgui.core.token_side.frequency import frequency_stats
from detokgui.gui.corpus_hint import CorpusHint
from detokgui.gui.plots import frame_of

VOCAB_VIEWS = ("headstats", "auroc", "frequency", "neighbours")
CORPUS = (str(sample_corpus()),)


@pytest.fixture(scope="module")
def brute(small_vocab_ckpt):
    raw = raw_model(small_vocab_ckpt)
    return tee_matrix(raw), te_matrix(raw)


def show(win, qtbot, view, corpus=True):
    if corpus:
        win.state.set_corpus(CORPUS)
    win.show_view(view)
    wait_idle(qtbot, win, timeout=60000)
    return win.panel(view)


def scene_point(frame, vb, x, y):
    return frame.view.mapFromScene(vb.mapViewToScene(QPointF(x, y)))


def sort_values(view, col):
    m = view.model()
    return [m.index(r, col).data(Qt.UserRole) for r in range(m.rowCount())]


# --------------------------------------------------------------------------- A4


def test_head_statistics_table_and_sorted_matrix(vocab_window, qtbot, brute):
    win, state = vocab_window, vocab_window.state
    layer = state.layer
    state.set_head(2)
    panel = show(win, qtbot, "headstats", corpus=False)
    T = brute[0][2]  # T_ee(u, v) of head 2, float64
    V = T.shape[0]
    var = T.var(axis=1)
    greater = (T > np.diag(T)[:, None]).sum(axis=1)  # the diagonal is never > itself
    table = panel.table
    assert row_count(table) == V
    ids = table.token_ids()
    st = VS.head_stats(layer, heads=[2])
    assert ids == st.order(2, "variance").tolist()  # sorted by variance, high first
    np.testing.assert_allclose(sort_values(table, 3), var[ids], rtol=1e-4, atol=1e-6)
    assert sort_values(table, 2) == (greater[ids] + 1).tolist()  # self-rank
    assert sort_values(table, 1) == ids
    top1 = T[ids].argmax(axis=1)
    assert column_texts(table, 4) == [state.token_text(int(v)) for v in top1]
    np.testing.assert_allclose(sort_values(table, 5), T[ids, top1], rtol=1e-4, atol=1e-6)
    for r in (0, 7, V - 1):  # what is written is the core's value through num()
        u = ids[r]
        assert cell_text(table, r, 0) == state.token_text(u)
        assert cell_text(table, r, 2) == num(int(st.self_rank[0, u]))
        assert cell_text(table, r, 3) == num(float(st.variance[0, u]))
        assert cell_text(table, r, 5) == num(float(st.top_scores[0, u, 0]))

    # sort by self-rank: a redraw, nothing computed
    seen = Submitted(win.jobs)
    sort = panel.options.widget("sort")
    sort.setCurrentIndex(sort.findData("self_rank"))
    assert table.token_ids() == st.order(2, "self_rank", descending=False).tolist()
    assert sort_values(table, 2) == sorted(sort_values(table, 2))
    assert seen.keys == []

    click_cell(qtbot, table, 5)
    assert state.query_token == table.token_at(5)
    u = table.token_at(6)
    click_cell(qtbot, table, 6, 4)  # the top-1 cell: the row's query and its top key
    assert (state.query_token, state.key_token) == (u, int(T[u].argmax()))

    # the sorted matrix: rows by decreasing variance, each row sorted descending
    block = panel.channel("matrix").result
    o = panel.options.value
    assert block.values.shape == (min(o.rows, V), min(o.cols, V))
    order = np.argsort(-var, kind="stable")
    for i in (0, 3, block.values.shape[0] - 1):
        np.testing.assert_allclose(block.values[i], np.sort(T[block.row_ids[i]])[::-1][
            : block.values.shape[1]], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(var[block.row_ids], var[order[: block.values.shape[0]]],
                               rtol=1e-4, atol=1e-7)
    np.testing.assert_array_equal(panel.image.image, block.values.astype(np.float32))
    title = frame_of(panel.plot).title_text()
    assert "head 2" in title and "sigma" in title

    panel.options.widget("rows").setValue(30)  # zoom
    panel.options.widget("cols").setValue(50)
    wait_idle(qtbot, win)
    block = panel.channel("matrix").result
    assert block.values.shape == (30, 50) and panel.image.image.shape == (30, 50)
    vb = panel.plot.getViewBox()
    qtbot.mouseMove(panel.frame.view.viewport(), scene_point(panel.frame, vb, 4.5, 2.5))
    qtbot.waitUntil(lambda: "rank 5" in panel.block_status.text(), timeout=3000)
    u, v = int(block.row_ids[2]), int(block.key_ids[2, 4])
    assert repr(state.token_text(v)) in panel.block_status.text()
    assert num(float(block.values[2, 4])) in panel.block_status.text()
    qtbot.mouseClick(panel.frame.view.viewport(), Qt.LeftButton,
                     pos=scene_point(panel.frame, vb, 4.5, 2.5))
    assert (state.query_token, state.key_token) == (u, v)

    # key → queries: the rows are keys; a click selects the key token
    direction = panel.options.widget("direction")
    direction.setCurrentIndex(direction.findData("queries"))
    wait_idle(qtbot, win)
    col_var = T.var(axis=0)
    ids = table.token_ids()
    np.testing.assert_allclose(sort_values(table, 3), col_var[ids], rtol=1e-4, atol=1e-6)
    assert table.model().headerData(0, Qt.Horizontal) == "key"
    click_cell(qtbot, table, 1)
    assert state.key_token == ids[1]


# --------------------------------------------------------------------------- A5


def bar_labels(panel):
    import pyqtgraph as pg

    return [item.textItem.toPlainText() for item in panel.bars.items
            if isinstance(item, pg.TextItem)]


def test_bigram_auroc_bars_table_and_roc(vocab_window, qtbot, monkeypatch):
    from detokgui.core.corpus import counts as corpus

    win, state = vocab_window, vocab_window.state
    layer = state.layer
    state.set_query_token(layer.tokenizer.encode(" the")[0])
    panel = show(win, qtbot, "auroc", corpus=False)
    assert panel.result is None and "Choose a corpus" in frame_of(panel.bars).title_text()
    assert not panel.findChild(CorpusHint).isHidden()
    counted = []
    real = corpus.iter_corpus_counts
    monkeypatch.setattr(corpus, "iter_corpus_counts",
                        lambda *a, **k: counted.append(a[0]) or real(*a, **k))
    state.set_corpus(CORPUS)
    wait_idle(qtbot, win, timeout=60000)
    assert counted == [CORPUS]  # the bars and the ROC curve share one count of the corpus
    assert panel.channel("roc").result is not None
    assert panel.findChild(CorpusHint).isHidden()
    counts = layer_corpus_counts(layer, CORPUS)
    res = A.bigram_auroc(layer, counts)
    np.testing.assert_array_equal(panel.result.auroc, res.auroc)
    for conv in ("skip", "zero"):
        no_bigram = panel.options.widget("no_bigram")
        no_bigram.setCurrentIndex(no_bigram.findData(conv))
        means, used = res.head_means(conv)
        assert len(set(used.tolist())) == 1  # the same tokens for every head: n in the title
        assert bar_labels(panel) == [num(float(m), 3) for m in means]
        assert f"({num(int(used[0]))} query tokens)" in frame_of(panel.bars).title_text()
    assert "authors' convention" in frame_of(panel.bars).title_text()  # "zero" is labelled
    assert used.tolist() == [layer.n_vocab] * layer.n_heads  # every token counts
    no_bigram = panel.options.widget("no_bigram")
    no_bigram.setCurrentIndex(no_bigram.findData("skip"))
    _, used = res.head_means("skip")
    assert used[0] < layer.n_vocab  # some tokens have no bigram: skipped

    # the table of the selected head: every token with an AUROC, best first
    state.set_head(1)
    table = panel.table
    vals = res.values("skip")[1]
    ids = table.token_ids()
    assert sorted(ids) == np.flatnonzero(np.isfinite(vals)).tolist()
    assert sort_values(table, 2) == sorted(vals[ids].tolist(), reverse=True)
    assert column_texts(table, 2)[:5] == [num(float(vals[u])) for u in ids[:5]]
    assert sort_values(table, 3) == res.positives[ids].tolist()

    # a click selects the query; its ROC curve is drawn, with the table's AUROC as area
    click_cell(qtbot, table, 3)
    u = ids[3]
    assert state.query_token == u
    wait_idle(qtbot, win)
    curve = A.roc_curve(layer, counts, u, heads=[1])
    x, y = panel.roc_curve.getData()
    np.testing.assert_allclose(x, curve.fpr[0])
    np.testing.assert_allclose(y, curve.tpr[0])
    assert f"AUROC = {num(float(vals[u]))}" in frame_of(panel.roc).title_text()

    # a token without any bigram: said, not failed
    lonely = int(np.flatnonzero(res.positives == 0)[0])
    state.set_query_token(lonely)
    wait_idle(qtbot, win)
    assert "no bigram" in panel.roc_status.text() and panel.roc_curve.getData()[0] is None

    # a click on a bar selects its head
    vb = panel.bars.getViewBox()
    qtbot.mouseClick(panel.bars_frame.view.viewport(), Qt.LeftButton,
                     pos=scene_point(panel.bars_frame, vb, 3, 0.1))
    assert state.head == 3


# --------------------------------------------------------------------------- A6


def test_frequency_scatter_hover_and_click(vocab_window, qtbot, brute, tmp_path):
    win, state = vocab_window, vocab_window.state
    layer = state.layer
    state.set_head(3)
    panel = show(win, qtbot, "frequency")
    counts = layer_corpus_counts(layer, CORPUS).unigrams
    te = brute[1][3]
    seen = counts > 0
    x, y = panel.points.x, panel.points.y
    np.testing.assert_array_equal(panel.ids, np.flatnonzero(seen))
    np.testing.assert_allclose(x, np.log10(counts[seen]))
    np.testing.assert_allclose(y, te[seen], rtol=1e-4, atol=1e-5)
    rho = spearmanr(counts[seen], te[seen]).statistic
    fs = frequency_stats(layer, layer_corpus_counts(layer, CORPUS))
    assert fs.rho_t_e[3] == pytest.approx(rho, abs=1e-4)
    title = frame_of(panel.plot).title_text()
    assert f"ρ = {num(float(fs.rho_t_e[3]))}" in title and "T_e" in title and "head 3" in title

    # hover and click the point of the most frequent token
    i = int(np.argmax(x))
    v = int(panel.ids[i])
    vb = panel.plot.getViewBox()
    pos = scene_point(panel.frame, vb, x[i], y[i])
    qtbot.mouseMove(panel.frame.view.viewport(), pos)
    qtbot.waitUntil(lambda: repr(state.token_text(v)) in panel.hover.text(), timeout=3000)
    assert f"count {num(int(counts[v]))}" in panel.hover.text()
    qtbot.mouseClick(panel.frame.view.viewport(), Qt.LeftButton, pos=pos)
    assert state.query_token == v
    assert panel.points.mark.data["x"].tolist() == [x[i]]

    # the other plots: a redraw of the same result
    kind = panel.options.widget("kind")
    kind.setCurrentIndex(kind.findData("variance"))
    Evar = layer.E.double().var(dim=1, unbiased=False).numpy()
    np.testing.assert_allclose(panel.points.y, Evar[seen], rtol=1e-5)
    rho_var = spearmanr(counts[seen], Evar[seen]).statistic
    assert f"ρ = {num(float(fs.rho_variance))}" in frame_of(panel.plot).title_text()
    assert fs.rho_variance == pytest.approx(rho_var, abs=1e-4)
    kind = panel.options.widget("kind")
    kind.setCurrentIndex(kind.findData("norm"))
    norm = layer.E.double().norm(dim=1).numpy()
    np.testing.assert_allclose(panel.points.x, te, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(panel.points.y, norm, rtol=1e-5)
    assert f"ρ = {num(float(fs.rho_norm_t_e[3]))}" in frame_of(panel.plot).title_text()
    assert fs.rho_norm_t_e[3] == pytest.approx(spearmanr(norm, te).statistic, abs=1e-4)

    n = panel.frame.export(tmp_path / "freq.csv")  # every head, every token
    assert n == layer.n_heads * layer.n_vocab


# --------------------------------------------------------------------------- A7


def brute_nearest(E, x, k, exclude, centred=False):
    E = E.astype(np.float64)
    if centred:
        mu = E.mean(axis=0)
        E, x = E - mu, x - mu
    cos = E @ x / (np.linalg.norm(E, axis=1) * np.linalg.norm(x))
    cos[list(exclude)] = -np.inf
    order = np.argsort(-cos, kind="stable")[:k]
    return order.tolist(), cos[order]


def test_neighbours_and_analogy(vocab_window, qtbot):
    win, state = vocab_window, vocab_window.state
    layer = state.layer
    E = layer.E.double().numpy()
    state.set_query_token(17)
    panel = show(win, qtbot, "neighbours", corpus=False)
    k = panel.options.value.k
    ids, cos = brute_nearest(E, E[17], k, [17])
    assert panel.near.token_ids() == ids
    np.testing.assert_allclose(sort_values(panel.near, 3), cos, rtol=1e-5)
    assert column_texts(panel.near, 3)[0] == num(float(panel.result.cosines[0]))

    panel.options.widget("k").setValue(5)
    panel.options.widget("centred").setChecked(True)
    wait_idle(qtbot, win)
    ids, _ = brute_nearest(E, E[17], 5, [17], centred=True)
    assert panel.near.token_ids() == ids
    click_cell(qtbot, panel.near, 2)
    assert state.query_token == ids[2]

    # the analogy: typed tokens, tokenised off the GUI thread
    tok = layer.tokenizer
    words = [w for w in (" the", " and", " of", " to") if len(tok.encode(w)) == 1][:3]
    a, b, c = (tok.encode(w)[0] for w in words)
    for edit, w in zip((panel.options.widget(n) for n in "abc"), words):
        edit.setText(w)
        edit.editingFinished.emit()
    wait_idle(qtbot, win)
    ids, _ = brute_nearest(E, E[a] - E[b] + E[c], 5, [a, b, c], centred=True)
    assert panel.analogy.token_ids() == ids
    assert not {a, b, c} & set(panel.analogy.token_ids())
    click_cell(qtbot, panel.analogy, 0)
    assert state.query_token == ids[0]

    panel.options.widget("b").setText("several tokens here")
    panel.options.widget("b").editingFinished.emit()
    wait_idle(qtbot, win)
    text = panel.analogy_status.text()
    assert '"several tokens here" is 9 tokens (se|ver|al|' in html.unescape(text)
    assert "Traceback" not in text and panel.analogy.token_ids() == ids  # the last one stays


# --------------------------------------------------------------------------- the cycle


def test_hidden_vocabulary_panels_compute_nothing(vocab_window, qtbot):
    win, state = vocab_window, vocab_window.state
    win.show_view("topk")
    wait_idle(qtbot, win)
    seen = Submitted(win.jobs)
    state.set_corpus(CORPUS)
    state.set_head(1)
    state.set_query_token(20)
    wait_idle(qtbot, win)
    assert not any(k.split(":")[0] in VOCAB_VIEWS for k in seen.keys)
    for view in VOCAB_VIEWS:
        assert not win.panel(view).settled()
    win.show_view("frequency")
    wait_idle(qtbot, win)
    assert [k for k in seen.keys if k.split(":")[0] in VOCAB_VIEWS] == ["frequency"]
    assert win.panel("frequency").settled()


def test_model_switch_frees_the_old_model(vocab_window, qtbot, small_vocab_ckpt, tmp_path):
    import gc
    import shutil
    import weakref

    from PySide6.QtCore import QCoreApplication, QEvent

    from detokgui.core.model.sources.demo import write_random_checkpoint

    win, state = vocab_window, vocab_window.state
    state.set_corpus(CORPUS)
    state.set_query_token(30)
    for view in VOCAB_VIEWS:
        win.show_view(view)
        wait_idle(qtbot, win)
        assert win.panel(view).result is not None
    old = weakref.ref(state.layer)
    other = write_random_checkpoint(tmp_path / "other", n_embd=32, n_head=2, n_positions=64,
                                    vocab_size=state.layer.n_vocab, seed=11, tokenizer=False)
    for f in small_vocab_ckpt.iterdir():
        if f.name not in ("model.safetensors", "config.json"):
            shutil.copy(f, other / f.name)
    win.load_model(str(other))
    qtbot.waitUntil(lambda: state.layer is not old(), timeout=60000)
    wait_idle(qtbot, win)
    for view in VOCAB_VIEWS:
        win.show_view(view)
        wait_idle(qtbot, win)
        assert win.panel(view).settled()
    assert win.panel("auroc").result.heads == [0, 1]  # the new model's heads
    QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)
    gc.collect()
    assert old() is None


def test_corpus_option_opens_the_corpus(qtbot, small_vocab_ckpt, tmp_path):
    from detokgui.core.corpus.documents import sample_paths
    from detokgui.gui.launch import build_parser, check_corpus_arg

    args = build_parser().parse_args(["--corpus", "sample", "--view", "auroc"])
    args.corpus = sample_paths(args.corpus)  # 'sample': the shipped sample corpus
    assert args.corpus == list(CORPUS) and check_corpus_arg(args.corpus) is None
    win = open_window(qtbot, small_vocab_ckpt)
    win.corpus.open(args.corpus)  # what launch() does with --corpus
    qtbot.waitUntil(lambda: win.state.corpus == CORPUS, timeout=10000)
    assert "sample corpus" in win.corpus.label.text()
    close_jobs(win)

    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"abc\x00def")
    for path, words in ((tmp_path / "missing", "no such file"), (bad, "NUL byte")):
        out = subprocess.run(
            [sys.executable, "-m", "detokgui", "--model", str(small_vocab_ckpt), "--corpus",
             str(path), "--screenshot", str(tmp_path / "x.png")],
            capture_output=True, text=True, timeout=120, env=SUBPROCESS_ENV, check=False)
        assert out.returncode == 2
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("detokgui: error: --corpus: ")
        assert words in lines[0] and str(path) in lines[0]
        assert not (tmp_path / "x.png").exists()


def test_corpus_option_in_a_screenshot(small_vocab_ckpt, tmp_path):
    from PySide6.QtCore import QSettings

    env = isolated_environment(tmp_path / "home")
    out = subprocess.run(
        [sys.executable, "-m", "detokgui", "--model", str(small_vocab_ckpt), "--corpus",
         *CORPUS, "--view", "frequency", "--screenshot", str(tmp_path / "f.png")],
        capture_output=True, text=True, timeout=300, env=env, check=False)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "f.png").stat().st_size > 10000
    conf = QSettings(str(tmp_path / "home" / "config" / "detokgui" / "detokgui.conf"),
                     QSettings.IniFormat)
    assert conf.value("corpus/paths") == CORPUS[0]  # opened, checked and remembered
    assert conf.value("window/view") == "frequency"
