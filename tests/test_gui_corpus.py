"""The shared corpus: Corpus menu, checks off the GUI thread, remembered; grouped views."""

import gzip
import json
import os

import pytest
from conftest import close_jobs, open_window, wait_idle
from PySide6.QtWidgets import QFileDialog

from detokgui.core.model.sources.demo import sample_corpus


def test_sample_corpus_ships_inside_the_package():
    path = sample_corpus()
    assert path.is_file() and "resources" in path.parts
    with gzip.open(path, "rt", encoding="utf-8") as f:
        assert "text" in json.loads(f.readline())


def test_corpus_menu_sets_checks_and_remembers(window, qtbot, tmp_path, monkeypatch,
                                               modal_dialogs):
    win = window
    seen = []
    win.state.corpusChanged.connect(seen.append)
    win.corpus.use_sample()
    qtbot.waitUntil(lambda: win.state.corpus == (str(sample_corpus()),), timeout=10000)
    assert seen == [(str(sample_corpus()),)]
    assert win.corpus.label.text().startswith("corpus: sample corpus (1 file, ")

    # a bad file: a warning, and the previous corpus stays
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"abc\x00def")
    monkeypatch.setattr(QFileDialog, "getOpenFileNames",
                        staticmethod(lambda *a, **k: ([str(bad)], "")))
    win.corpus.ask_files()
    qtbot.waitUntil(lambda: bool(modal_dialogs), timeout=10000)
    name, args = modal_dialogs.pop()
    assert name == "QMessageBox.warning" and "NUL byte" in args[2]
    assert win.state.corpus == (str(sample_corpus()),)
    assert win.corpus.label.text().startswith("corpus: sample corpus")

    # a folder of good files
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "a.txt").write_text("Some text.")
    monkeypatch.setattr(QFileDialog, "getExistingDirectory",
                        staticmethod(lambda *a, **k: str(tmp_path / "good")))
    win.corpus.ask_folder()
    qtbot.waitUntil(lambda: win.state.corpus == (str(tmp_path / "good"),), timeout=10000)
    assert "good (1 file" in win.corpus.label.text()


def test_corpus_requests_go_through_the_state_to_the_corpus_control(window, qtbot):
    """What a panel's "Use sample corpus" does: AppState.request_corpus reaches the
    window's corpus control, which checks the files off the GUI thread, then shows and
    remembers them; a state with no control connected takes the paths at once."""
    from detokgui.gui.corpus import CORPUS
    from detokgui.gui.options import remembered
    from detokgui.gui.state import AppState

    lone = AppState()
    lone.request_corpus([sample_corpus()])
    assert lone.corpus == (str(sample_corpus()),)

    win = window
    assert win.state.corpus == ()
    win.state.request_corpus([sample_corpus()])
    assert win.corpus.label.text() == "checking corpus…"
    qtbot.waitUntil(lambda: win.state.corpus == (str(sample_corpus()),), timeout=10000)
    assert win.corpus.label.text().startswith("corpus: sample corpus (1 file, ")
    assert remembered(CORPUS, []) == [str(sample_corpus())]


def test_last_corpus_is_reopened_and_last_view_shown(qtbot, tiny_ckpt):
    from detokgui.gui.main_window import MainWindow
    from detokgui.gui.options import flush_settings

    win = open_window(qtbot, tiny_ckpt)
    win.corpus.use_sample()
    qtbot.waitUntil(lambda: bool(win.state.corpus), timeout=10000)
    win.show_view("neurons")
    assert win.current_panel().view_name == "neurons"
    close_jobs(win)
    win.close()
    flush_settings()

    again = MainWindow(model=None, device="cpu")
    qtbot.addWidget(again)
    qtbot.waitUntil(lambda: again.state.corpus == (str(sample_corpus()),), timeout=10000)
    assert again.current_panel().view_name == "neurons"
    wait_idle(qtbot, again)


def test_every_panel_is_reachable_by_its_view_name(window):
    for panel in window.panels[1:]:
        assert window.show_view(panel.view_name)
        assert window.current_panel() is panel


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX named pipes")
def test_a_folders_skipped_entries_are_shown(window, qtbot, tmp_path, monkeypatch):
    """A folder with a named pipe, a link to /dev/zero, a socket, a broken link and a .md
    file beside its corpus file: the corpus opens with that file, the label counts the
    skipped entries, its tooltip lists them and the status bar says so (issue 16, item 3)."""
    from test_corpus_paths import corpus_folder

    win = window
    folder, good, kinds = corpus_folder(tmp_path)
    monkeypatch.setattr(QFileDialog, "getExistingDirectory",
                        staticmethod(lambda *a, **k: str(folder)))
    win.corpus.ask_folder()
    qtbot.waitUntil(lambda: win.state.corpus == (str(folder),), timeout=10000)
    size = good.stat().st_size / 1e6
    assert win.corpus.label.text() == f"corpus: corpus (1 file, {size:.1f} MB, 5 skipped)"
    from detokgui.gui.corpus import TOOLTIP

    assert win.corpus.label.toolTip().endswith("\n".join([
        "", "Not read (skipped):", *(f"{folder / n} ({kinds[n]})" for n in sorted(kinds))]))
    assert TOOLTIP in win.corpus.label.toolTip()
    message = win.statusBar().currentMessage()
    assert message == (f"Corpus opened; 5 files skipped: {', '.join(sorted(kinds))} (the corpus "
                       "label's tooltip says why)")


def test_open_counts_drives_the_auroc_and_frequency_views(vocab_window, qtbot, tmp_path,
                                                          monkeypatch, modal_dialogs):
    """Corpus › Open counts… (a counts file written by `export counts --out FILE.npz`):
    the bigram AUROC and frequency views compute from it exactly what they compute from
    the corpus itself; a view that reads texts says it needs corpus files; counts of
    another tokenizer are refused naming both (issue 43)."""
    import numpy as np

    import detokgui as dg
    from detokgui.core.corpus.counts import layer_corpus_counts
    from detokgui.core.token_side import auroc as A
    from detokgui.core.token_side.frequency import frequency_stats

    win, state = vocab_window, vocab_window.state
    layer = state.layer
    corpus = tmp_path / "c.jsonl"
    with gzip.open(sample_corpus(), "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"][:3000] for line in f][:40]
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    npz = tmp_path / "c.npz"
    dg.counts(layer, corpus, out=npz, progress=False)
    monkeypatch.setattr(QFileDialog, "getOpenFileNames",
                        staticmethod(lambda *a, **k: ([str(npz)], "")))
    win.corpus.ask_counts()
    qtbot.waitUntil(lambda: win.state.corpus == (str(npz),), timeout=10000)
    assert win.corpus.label.text().startswith("counts c.npz (")
    counts = layer_corpus_counts(layer, corpus)
    win.show_view("auroc")
    wait_idle(qtbot, win, timeout=60000)
    panel = win.panel("auroc")
    np.testing.assert_array_equal(panel.result.auroc, A.bigram_auroc(layer, counts).auroc)
    win.show_view("frequency")
    wait_idle(qtbot, win, timeout=60000)
    fs = frequency_stats(layer, counts)
    np.testing.assert_array_equal(win.panel("frequency").result.rho_t_e, fs.rho_t_e)
    win.show_view("empirical")
    wait_idle(qtbot, win, timeout=60000)
    status = win.panel("empirical").status.text()
    assert f"{npz} is a counts file (token counts without the texts)" in status

    # the counting settings travel with the corpus; equal paths keep the views' results
    win.corpus.set_workers(1)
    assert win.state.corpus.workers == 1 and win.state.corpus == (str(npz),)

    # counts of another tokenizer: refused when opened, naming both
    other = tmp_path / "gpt2.npz"
    dg.counts(dg.load("demo"), corpus, out=other, progress=False)
    monkeypatch.setattr(QFileDialog, "getOpenFileNames",
                        staticmethod(lambda *a, **k: ([str(other)], "")))
    win.corpus.ask_counts()
    qtbot.waitUntil(lambda: bool(modal_dialogs), timeout=20000)
    name, args = modal_dialogs.pop()
    assert name == "QMessageBox.warning"
    assert "holds counts made with the tokenizer of demo" in args[2]
    assert f"the model {layer.name} has tokenizer" in args[2] and "V = 400" in args[2]
    assert win.state.corpus == (str(npz),)
