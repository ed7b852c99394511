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
