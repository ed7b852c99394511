"""What the window says about typed input, in the same words as the CLI and the library
(issue 40): a token box given a text of several tokens (the analogy's a, b, c) shows the
pieces and the one-token spelling; a mistyped model name, with HF_HUB_OFFLINE set, is
told the close name and not to set what is set already."""

from __future__ import annotations

import html

from conftest import wait_idle

from detokgui.core.model.tokens import SPACE_MARK, encode_text


def type_into(panel, name, text):
    edit = panel.options.widget(name)
    edit.setText(text)
    edit.editingFinished.emit()


def test_analogy_box_refuses_a_word_without_its_space(window, qtbot):
    win = window
    win.show_view("neighbours")
    wait_idle(qtbot, win)
    panel = win.panel("neighbours")
    tok = win.state.layer.tokenizer
    for name, text in zip("abc", (" king", " man", " woman")):
        type_into(panel, name, text)
    wait_idle(qtbot, win)
    before = panel.analogy.token_ids()
    assert before

    type_into(panel, "a", "Korea")
    wait_idle(qtbot, win)
    shown = html.unescape(panel.analogy_status.text())
    assert 'The token a "Korea" is 2 tokens (K|orea), not one; did you mean " Korea"?' in shown
    assert "Traceback" not in shown and panel.analogy.token_ids() == before  # the last stays

    type_into(panel, "a", SPACE_MARK + "Korea")  # the display form, as tables show it
    wait_idle(qtbot, win)
    korea = encode_text(tok, " Korea")[0]
    assert "Korea" in panel.analogy_label.text() and "tokens" not in panel.analogy_status.text()
    assert panel.analogy.token_ids() != before and korea not in panel.analogy.token_ids()


def test_mistyped_model_offline_gets_the_close_name(window, qtbot, monkeypatch,
                                                    empty_hf_cache):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    win = window
    win.load_model("gtp2")
    qtbot.waitUntil(lambda: win.load_error is not None, timeout=30000)
    wait_idle(qtbot, win)
    text = win.banner.text()
    assert "could not be loaded" in text and "Did you mean 'gpt2'?" in text
    assert "HF_HUB_OFFLINE is set" in text and "HF_HUB_OFFLINE=1" not in text
