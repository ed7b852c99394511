"""A1 Token search: the tokens of typed text, and vocabulary search by substring, prefix or
regular expression with completion. Clicking a token selects it as the query token
(Shift+click or the context menu: as the key token).

Everything slow runs off the GUI thread: indexing the vocabulary, reading a text file,
tokenising the text (in pieces, so a pasted book can be cancelled) and searching; a
regular expression gets a time limit over the whole vocabulary. A text longer than
BIG_TEXT_CHARS (opened with *Open text file…* or pasted) is not put into the editor, whose
layout of a 10 MB document blocks the GUI for seconds: the editor shows its first
PREVIEW_CHARS characters, read-only, and the tokens are the whole text's."""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QEvent, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
)
from superqt.utils import signals_blocked

from detokgui.core.model.encode import iter_encode
from detokgui.core.model.tokens import (
    SPACE_MARK,
    display_token,
    is_special,
    token_tooltip,
    vocabulary,
)
from detokgui.core.token_side.vocab_search import (
    MODES,
    REGEX_SECONDS,
    read_text_file,
    search_vocabulary,
)
from detokgui.gui.controls import wrapping_label
from detokgui.gui.option_rows import OptionRow, combo, option
from detokgui.gui.options import remember, remembered
from detokgui.gui.panels.base import Panel, StatusLine
from detokgui.gui.records import Column, RecordsModel, TokenTableView, select_row_token

DEFAULT_TEXT = " North Korea and South Korea. Albert Einstein met Michael Jackson."
TEXT_KEY = "tokens/text"
TEXT_REMEMBERED_CHARS = 4096  # the start of the text is remembered, not a pasted book
BIG_TEXT_CHARS = 200_000  # longer texts are shown as a read-only preview
PREVIEW_CHARS = 20_000
LAST_TEXT_DIR = "tokens/text-dir"
TEXT_FILTER = "Text files (*.txt *.md *.csv *.tsv *.json *.jsonl *.html *.xml *.py);;All files (*)"


class TextEdit(QPlainTextEdit):
    """The editor of the typed text. A paste that would make the text longer than
    BIG_TEXT_CHARS is not inserted (laying out megabytes blocks the GUI thread for
    seconds): the whole resulting text goes out through `bigText` instead."""

    bigText = Signal(object)  # str: object passes it on as is, not copied to a QString and back

    def insertFromMimeData(self, source) -> None:
        if source.hasText() and not self.isReadOnly():
            pasted = source.text()
            if len(pasted) + self.document().characterCount() > BIG_TEXT_CHARS:
                old = self.toPlainText()
                if old:
                    cursor = self.textCursor()
                    a, b = cursor.selectionStart(), cursor.selectionEnd()
                    pasted = old[:a] + pasted + old[b:]
                self.bigText.emit(pasted)
                return
        super().insertFromMimeData(source)


@dataclass(frozen=True, eq=False)
class Vocabulary:
    """The display strings of one model's vocabulary (compared by identity)."""

    strings: list[str]


@dataclass(frozen=True)
class VocabRequest:
    serial: int


@dataclass(frozen=True)
class TextRequest:
    serial: int
    text: str


@dataclass(frozen=True)
class SearchRequest:
    vocab: Vocabulary
    query: str
    mode: str


@dataclass(frozen=True)
class Options:
    mode: str = option("substring", combo(
        ((m, m) for m in MODES),
        "substring: anywhere; prefix: at the start (leading space ignored); "
        f"regex: regular expression (stopped after {REGEX_SECONDS:g} s)"))


def _token_table(first: str, state) -> TokenTableView:
    """A table of (first, id, token) rows; clicking a row selects its token."""
    view = TokenTableView(RecordsModel(
        [Column(first, lambda r: r[0], "d"), Column("id", lambda r: r[1], "d"),
         Column("token", lambda r: r[2] if len(r) > 2 else state.token_text(r[1]),
                tooltip=lambda r: _special_tip(state, r[1]))], token=lambda r: r[1]))
    view.tokenActivated.connect(select_row_token(state, False))
    return view


def _special_tip(state, token: int) -> str | None:
    """A special token's cell says so ("id 50256: special token <|endoftext|>"); other
    cells keep the table's own tooltip (None)."""
    tok = state.layer.tokenizer if state.layer is not None else None
    if not is_special(tok, token):
        return None
    return (token_tooltip(tok, token)
            + "\nClick: select as query token. Shift+click: select as key token.")


class TokenSearchPanel(Panel):
    title = "Tokens"
    view_name = "tokens"
    tooltip = "Tokenize text and search the vocabulary (A1)"

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        self.vocab: Vocabulary | None = None
        lay = QVBoxLayout(self)
        self._big: str | None = None  # where the long text shown as a preview came from
        head = QHBoxLayout()
        # wrapped: the button beside it must not widen the side panel
        head.addWidget(wrapping_label("<b>Text</b> — its tokens become the token set"), 1)
        self.open_button = QPushButton("Open text file…")
        self.open_button.setToolTip("Read a text file (any size) as the text; a long one is "
                                    "shown as a read-only preview (Ctrl+T)")
        self.open_button.clicked.connect(self.open_text_file)
        head.addWidget(self.open_button)
        lay.addLayout(head)
        self.text = TextEdit()
        self.text.setPlaceholderText("Type text, e.g.  North Korea and Albert Einstein")
        self.text.setMaximumHeight(90)
        self.text.setToolTip("The tokens of this text are listed below and used as the token set "
                             "of the heatmap")
        lay.addWidget(self.text)
        big_row = QHBoxLayout()
        self.big_note = wrapping_label("")
        big_row.addWidget(self.big_note, 1)
        self.clear_button = QPushButton("Clear")
        self.clear_button.setToolTip("Drop the long text and type a new one")
        self.clear_button.clicked.connect(lambda: self.set_text(""))
        big_row.addWidget(self.clear_button)
        self.big_note.hide()
        self.clear_button.hide()
        lay.addLayout(big_row)
        self.text.bigText.connect(lambda text: self.set_text(text, "the pasted text"))
        self.text_info = StatusLine()
        lay.addWidget(self.text_info)
        self.text_tokens = _token_table("pos", state)
        lay.addWidget(self.text_tokens, 2)

        lay.addWidget(QLabel("<b>Vocabulary search</b>"))
        row = QHBoxLayout()
        self.search = QLineEdit()
        self.search.setPlaceholderText("search tokens…  (a space = " + SPACE_MARK + ")")
        self.search.setClearButtonEnabled(True)
        self.search.setToolTip("Matches the display form; a typed space matches the leading-space "
                               "marker " + SPACE_MARK)
        row.addWidget(self.search, 1)
        self.options = OptionRow("tokens", Options, self)
        self.options.add_to(row)
        lay.addLayout(row)
        self.search_info = StatusLine()
        lay.addWidget(self.search_info)
        self.results = _token_table("#", state)
        lay.addWidget(self.results, 3)

        # The result list below is the completion (it follows every keystroke): no popup
        # to cover it. Down moves into the list, Enter takes the exact or the first match.
        self._take_when_drawn = False
        self.search.returnPressed.connect(self._take_match)
        self.search.installEventFilter(self)

        self.add_channel("vocab", self._vocab_request, self._index_vocabulary,
                         self._draw_vocabulary, status=self.search_info,
                         label="Indexing the vocabulary")
        self.add_channel("text", self._text_request, self._tokenize, self._draw_tokens,
                         status=self.text_info, label="Tokenising the text")
        self.add_channel("search", self._search_request, self._search, self._draw_search,
                         status=self.search_info, label="Vocabulary search")

        self._text = remembered(TEXT_KEY, DEFAULT_TEXT)[:TEXT_REMEMBERED_CHARS]
        self.text.setPlainText(self._text)
        self.text_timer = QTimer(self, singleShot=True, interval=250)
        self.text_timer.timeout.connect(self._text_edited)
        self.search_timer = QTimer(self, singleShot=True, interval=150)
        self.search_timer.timeout.connect(self.refresh)
        self.text.textChanged.connect(self.text_timer.start)
        self.search.textChanged.connect(self.search_timer.start)
        self.options.changed.connect(self.refresh)
        state.queryTokenChanged.connect(self._mark_query)
        self.refresh()

    @property
    def strings(self) -> list[str]:
        return self.vocab.strings if self.vocab is not None else []

    @Slot()
    def _mark_query(self, *_) -> None:
        for view in (self.text_tokens, self.results):
            view.select_token(self.state.query_token)

    # ------------------------------------------------------------------ vocabulary

    def model_changed(self, layer) -> None:
        self.vocab = None

    def _vocab_request(self):
        return VocabRequest(self.serial)

    @staticmethod
    def _index_vocabulary(layer, _req) -> Vocabulary:
        return Vocabulary(vocabulary(layer.tokenizer, layer.n_vocab))

    def _draw_vocabulary(self, vocab: Vocabulary | None) -> None:
        self.vocab = vocab
        self.refresh()  # the search can run now

    # ------------------------------------------------------------------ text

    def set_text(self, text: str, source: str = "the text") -> None:
        """Make `text` the text. One longer than BIG_TEXT_CHARS is shown as a read-only
        preview of its start (`source` names it in the note) and tokenised whole."""
        self.text_timer.stop()
        big = len(text) > BIG_TEXT_CHARS
        self._big = source if big else None
        with signals_blocked(self.text):
            self.text.setPlainText(text[:PREVIEW_CHARS] if big else text)
        self.text.setReadOnly(big)
        self.big_note.setVisible(big)
        self.clear_button.setVisible(big)
        if big:
            self.big_note.setText(
                f"<i>Showing the first {PREVIEW_CHARS:,} of {len(text):,} characters of "
                f"{html.escape(source, quote=False)} (read-only: too long to edit here). The "
                "tokens below are the whole text's.</i>")
        self._use_text(text)

    @Slot()
    def open_text_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open text file",
                                              remembered(LAST_TEXT_DIR, ""), TEXT_FILTER)
        if path:
            remember(LAST_TEXT_DIR, str(Path(path).parent))
            self.load_text_file(path)

    def load_text_file(self, path: str) -> None:
        """Read `path` off the GUI thread, then make it the text (see set_text)."""
        name = Path(path).name
        self.text_info.setText(f"reading {name}…")
        self.jobs.submit("text-file", lambda: read_text_file(path),
                         lambda text: self.set_text(text, name), label=f"Reading {name}",
                         on_error=lambda exc, _msg: self.text_info.setText(str(exc)))

    @property
    def current_text(self) -> str:
        """The whole text the tokens come from (a long one too, not its preview)."""
        return self._text

    @property
    def is_preview(self) -> bool:
        """True while the editor shows only the start of a long text."""
        return self._big is not None

    @Slot()
    def _text_edited(self) -> None:
        if self._big is None:
            self._use_text(self.text.toPlainText())

    def _use_text(self, text: str) -> None:
        self._text = text
        remember(TEXT_KEY, self._text[:TEXT_REMEMBERED_CHARS])
        self.refresh()

    def _text_request(self):
        layer = self.layer
        if layer.tokenizer is None or not self._text:
            return None
        return TextRequest(self.serial, self._text)

    @staticmethod
    def _tokenize(layer, req: TextRequest):
        ids = yield from iter_encode(layer.tokenizer, req.text)
        shown = ids[: layer.n_positions]
        rows = [(i, t, display_token(layer.tokenizer, t)) for i, t in enumerate(shown)]
        return len(ids), rows

    def _draw_tokens(self, result) -> None:
        layer = self.layer
        if result is None:
            self.text_tokens.records().set_records(())
            self.text_info.setText("this model has no tokenizer"
                                   if layer is not None and layer.tokenizer is None else "")
            if layer is not None:
                self.state.set_token_set([])
            return
        total, rows = result
        self.text_tokens.records().set_records(rows)
        note = f"{total:,} tokens"
        if total > layer.n_positions:
            note += f" — only the first {layer.n_positions} (the model's positions) are used"
        self.text_info.setText(note)
        self.state.set_token_set([r[1] for r in rows])
        self._mark_query()

    # ------------------------------------------------------------------ search

    def _search_request(self):
        query = self.search.text()
        if self.vocab is None or not query:
            return None
        return SearchRequest(self.vocab, query, self.options.value.mode)

    @staticmethod
    def _search(_layer, req: SearchRequest):
        strings = req.vocab.strings
        hits = yield from search_vocabulary(strings, req.query, req.mode, REGEX_SECONDS)
        return [(r + 1, i, strings[i]) for r, i in enumerate(hits)]

    def _draw_search(self, rows: list[tuple[int, int, str]] | None) -> None:
        if rows is None:
            self.results.records().set_records(())
            self.search_info.setText(f"{len(self.strings):,} tokens" if self.strings else "")
            return
        self.results.records().set_records(rows)
        self.search_info.setText(f"{len(rows):,} matches")
        self._mark_query()
        if self._take_when_drawn:
            self._take_match()

    @Slot()
    def _take_match(self) -> None:
        """Enter in the search box: the token shown exactly as typed, else the first match,
        becomes the query token."""
        shown = self.channel("search").shown
        typed = self.search.text()
        if shown is None or shown.query != typed:  # the list for this text is not drawn yet
            self._take_when_drawn = True
            self.search_timer.stop()
            self.refresh()
            return
        self._take_when_drawn = False
        rows = self.results.records().records
        if not rows:
            return
        exact = [r for r in rows if r[2] in (typed, typed.replace(" ", SPACE_MARK))]
        self.state.set_query_token((exact or rows)[0][1])

    def eventFilter(self, obj, event) -> bool:
        if obj is self.search and event.type() == QEvent.KeyPress and \
                event.key() == Qt.Key_Down and self.results.model().rowCount():
            self.results.setFocus()
            self.results.selectRow(0)
            return True
        return super().eventFilter(obj, event)
