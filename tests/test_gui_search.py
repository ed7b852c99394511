"""The Tokens panel off the GUI thread: tokenising pasted text, vocabulary search with a
time limit for regular expressions, what is remembered of the text."""

from conftest import wait_idle
from PySide6.QtCore import QSettings
from tables import row_count
from test_panels import Submitted

from detokgui.gui.options import flush_settings
from detokgui.gui.panels import token_search


def search(qtbot, win, text, mode="substring"):
    panel = win.panel("tokens")
    qtbot.waitUntil(lambda: len(panel.strings) > 0, timeout=10000)
    box = panel.options.widget("mode")
    box.setCurrentIndex(box.findData(mode))
    panel.search.setText(text)
    qtbot.waitUntil(lambda: panel.settled() and not panel.search_timer.isActive(), timeout=20000)
    return panel


def test_catastrophic_regex_does_not_hang(window, qtbot):
    panel = search(qtbot, window, "(=+)+x", "regex")
    assert panel.search_info.text() == "0 matches" and row_count(panel.results) == 0
    panel = search(qtbot, window, "^(=+)+$", "regex")
    hits = [panel.strings[t] for t in panel.results.token_ids()]
    assert hits and all(set(s) == {"="} for s in hits)


def test_regex_time_limit_and_bad_pattern_say_so(window, qtbot, monkeypatch):
    monkeypatch.setattr(token_search, "REGEX_SECONDS", 1e-4)
    panel = search(qtbot, window, "a.*b", "regex")
    assert "did not finish within" in panel.search_info.text()
    assert "computing" not in panel.search_info.text()
    assert "did not finish" in window.statusBar().currentMessage()
    panel = search(qtbot, window, "(unclosed", "regex")
    assert "invalid regular expression" in panel.search_info.text()


def test_all_matches_are_listed(window, qtbot):
    panel = search(qtbot, window, "e")
    expected = [i for i, s in enumerate(panel.strings) if "e" in s]
    assert len(expected) > 5000
    assert row_count(panel.results) == len(expected)
    assert sorted(panel.results.token_ids()) == expected
    assert panel.search_info.text() == f"{len(expected):,} matches"


def test_text_is_tokenised_off_the_gui_thread_and_clearing_clears(window, qtbot):
    win, layer = window, window.state.layer
    panel = win.panel("tokens")
    seen = Submitted(win.jobs)
    text = " North Korea and South Korea.\n" * 400
    panel.set_text(text)
    assert "tokens:text" in seen.keys
    wait_idle(qtbot, win)
    ids = layer.tokenizer.encode(text)
    assert len(ids) > layer.n_positions
    assert win.state.token_set == ids[: layer.n_positions]
    assert panel.text_tokens.token_ids() == ids[: layer.n_positions]
    assert panel.text_info.text().startswith(f"{len(ids):,} tokens — only the first")
    flush_settings()  # written a few seconds after the change, or now
    stored = QSettings().value(token_search.TEXT_KEY)
    assert stored == text[: token_search.TEXT_REMEMBERED_CHARS]  # not the whole text
    win.show_view("heatmap")
    wait_idle(qtbot, win)
    assert win.panel("heatmap").tokens == ids[: layer.n_positions]
    panel.set_text("")
    wait_idle(qtbot, win)
    assert win.state.token_set == [] and row_count(panel.text_tokens) == 0
    assert win.panel("heatmap").values is None  # the heatmap shows no tokens


def _book(n_chars: int) -> str:
    """A text of about n_chars characters with lines, digits and punctuation."""
    lines, k = [], 0
    while sum(map(len, lines)) < n_chars:
        lines.append(f"Line {k}: North Korea and South Korea, said Albert Einstein.\n")
        k += 1
    return "".join(lines)


def test_long_text_file_is_a_preview_and_tokenised_whole(window, qtbot, tmp_path):
    """A text file over BIG_TEXT_CHARS: read off the GUI thread, the editor holds only its
    start (read-only, with a note), the tokens are the whole text's; Clear goes back to
    an empty editable text."""
    win, layer = window, window.state.layer
    panel = win.panel("tokens")
    text = _book(token_search.BIG_TEXT_CHARS + 50_000)
    path = tmp_path / "book.txt"
    path.write_text(text, encoding="utf-8")
    seen = Submitted(win.jobs)
    win.open_text_file(str(path))
    assert "text-file" in seen.keys
    qtbot.waitUntil(lambda: panel.is_preview, timeout=20000)
    wait_idle(qtbot, win)
    assert panel.isVisible()
    assert panel.text.isReadOnly()
    assert panel.text.toPlainText() == text[: token_search.PREVIEW_CHARS]
    assert panel.big_note.isVisible() and panel.clear_button.isVisible()
    assert f"{token_search.PREVIEW_CHARS:,} of {len(text):,} characters of book.txt" in \
        panel.big_note.text()
    ids = layer.tokenizer.encode(text)
    assert panel.text_info.text().startswith(f"{len(ids):,} tokens")
    assert win.state.token_set == ids[: layer.n_positions]
    panel.clear_button.click()
    wait_idle(qtbot, win)
    assert not panel.is_preview and not panel.text.isReadOnly()
    assert panel.text.toPlainText() == "" and not panel.big_note.isVisible()
    assert win.state.token_set == []


def test_long_paste_is_not_put_into_the_editor(window, qtbot):
    """Pasting more than BIG_TEXT_CHARS (with the cursor inside the typed text) makes the
    resulting text the text, shown as a preview; a short paste is an ordinary edit."""
    from PySide6.QtGui import QTextCursor
    from PySide6.QtWidgets import QApplication

    win, layer = window, window.state.layer
    panel = win.panel("tokens")
    panel.set_text("AB")
    cursor = panel.text.textCursor()
    cursor.setPosition(1)
    panel.text.setTextCursor(cursor)
    book = _book(token_search.BIG_TEXT_CHARS + 1000)
    QApplication.clipboard().setText(book)
    panel.text.paste()
    assert panel.is_preview and panel.text.isReadOnly()
    wait_idle(qtbot, win)
    whole = "A" + book + "B"
    assert panel.text.toPlainText() == whole[: token_search.PREVIEW_CHARS]
    assert "the pasted text" in panel.big_note.text()
    assert win.state.token_set == layer.tokenizer.encode(whole)[: layer.n_positions]
    panel.set_text("")
    QApplication.clipboard().setText(" Korea")
    panel.text.moveCursor(QTextCursor.End)
    panel.text.paste()
    assert not panel.is_preview and panel.text.toPlainText() == " Korea"


def test_unreadable_text_file_says_why(window, qtbot, tmp_path):
    panel = window.panel("tokens")
    panel.set_text(" Korea")
    wait_idle(qtbot, window)
    panel.load_text_file(str(tmp_path / "missing.txt"))
    qtbot.waitUntil(lambda: "missing.txt" in panel.text_info.text() and
                    "No such file" in panel.text_info.text(), timeout=10000)
    assert not panel.is_preview and panel.text.toPlainText() == " Korea"


def test_text_file_option(tmp_path):
    """--text-file is what File > Open text file reads at start; an unreadable one is a
    one-line error before any window opens."""
    import subprocess
    import sys

    from conftest import SUBPROCESS_ENV

    from detokgui.gui.launch import build_parser

    assert build_parser().parse_args(["--text-file", "book.txt"]).text_file == "book.txt"
    missing = tmp_path / "missing.txt"
    out = subprocess.run(
        [sys.executable, "-m", "detokgui", "--model", "demo", "--text-file", str(missing),
         "--screenshot", str(tmp_path / "x.png")],
        capture_output=True, text=True, timeout=120, env=SUBPROCESS_ENV, check=False)
    assert out.returncode == 2
    assert out.stderr.strip() == f"detokgui: error: --text-file: cannot read {missing}"
    assert not (tmp_path / "x.png").exists()
