"""A1 Token search: the tokens of typed text, and vocabulary search by substring, prefix or
regular expression with completion. Clicking a token selects it as the query token
(Shift+click or the context menu: as the key token)."""

from __future__ import annotations

import re

from PySide6.QtCore import QSettings, QStringListModel, Qt, QTimer, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QComboBox,
    QCompleter,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QPlainTextEdit,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from detokgui.core.tokens import SPACE_MARK, vocabulary
from detokgui.gui.panels.base import Panel

MAX_RESULTS = 500
DEFAULT_TEXT = " North Korea and South Korea. Albert Einstein met Michael Jackson."
MODES = ("substring", "prefix", "regex")


def search_vocabulary(strings: list[str], query: str, mode: str, limit: int = MAX_RESULTS):
    """Ids whose display form matches; returns (ids[:limit], total). A typed space and the
    visible marker are the same thing; prefix mode ignores a leading space."""
    if not query:
        return [], 0
    q = query.replace(" ", SPACE_MARK)
    if mode == "substring":
        hits = [i for i, s in enumerate(strings) if q in s]
    elif mode == "prefix":
        bare = q.lstrip(SPACE_MARK)
        hits = [i for i, s in enumerate(strings) if s.startswith(q) or
                (q == bare and s.startswith(SPACE_MARK + bare))]
    elif mode == "regex":
        pattern = re.compile(query.replace(SPACE_MARK, " ").replace(" ", SPACE_MARK))
        hits = [i for i, s in enumerate(strings) if pattern.search(s)]
    else:
        raise ValueError(f"unknown search mode {mode!r}")
    hits.sort(key=lambda i: (len(strings[i]), i))
    return hits[:limit], len(hits)


class TokenTable(QTableWidget):
    """Rows of (position/rank, id, token); click selects query, Shift+click key."""

    def __init__(self, first_column: str, state, parent=None):
        super().__init__(0, 3, parent)
        self.state = state
        self.setHorizontalHeaderLabels([first_column, "id", "token"])
        self.verticalHeader().hide()
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.setSelectionMode(QAbstractItemView.SingleSelection)
        header = self.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.Stretch)
        self.verticalHeader().setDefaultSectionSize(22)
        self.setContextMenuPolicy(Qt.CustomContextMenu)
        self.customContextMenuRequested.connect(self._menu)
        self.cellClicked.connect(self._clicked)
        self.setToolTip("Click: select as query token. Shift+click: select as key token.")

    def fill(self, rows: list[tuple[int, int, str]]) -> None:
        self.setUpdatesEnabled(False)
        self.setRowCount(len(rows))
        for r, (first, tid, text) in enumerate(rows):
            for c, value in enumerate((str(first), str(tid), text)):
                item = QTableWidgetItem(value)
                if c < 2:
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.setItem(r, c, item)
        self.setUpdatesEnabled(True)

    def token_at(self, row: int) -> int:
        item = self.item(row, 1)
        return int(item.text()) if item is not None else -1

    @Slot(int, int)
    def _clicked(self, row: int, _col: int) -> None:
        tid = self.token_at(row)
        if tid < 0:
            return
        if QApplication.keyboardModifiers() & Qt.ShiftModifier:
            self.state.set_key_token(tid)
        else:
            self.state.set_query_token(tid)

    def _menu(self, pos) -> None:
        row = self.rowAt(pos.y())
        tid = self.token_at(row)
        if tid < 0:
            return
        menu = QMenu(self)
        menu.addAction("Select as query token", lambda: self.state.set_query_token(tid))
        menu.addAction("Select as key token", lambda: self.state.set_key_token(tid))
        menu.addAction("Copy id", lambda: QApplication.clipboard().setText(str(tid)))
        menu.exec(self.viewport().mapToGlobal(pos))


class TokenSearchPanel(Panel):
    title = "Tokens"
    view_name = "tokens"
    tooltip = "Tokenize text and search the vocabulary (A1)"

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        self.strings: list[str] = []
        lay = QVBoxLayout(self)
        lay.addWidget(QLabel("<b>Text</b> — its tokens become the token set"))
        self.text = QPlainTextEdit()
        self.text.setPlaceholderText("Type text, e.g.  North Korea and Albert Einstein")
        self.text.setMaximumHeight(90)
        self.text.setToolTip("The tokens of this text are listed below and used as the token set "
                             "of the heatmap")
        lay.addWidget(self.text)
        self.text_info = QLabel()
        lay.addWidget(self.text_info)
        self.text_tokens = TokenTable("pos", state)
        lay.addWidget(self.text_tokens, 2)

        lay.addWidget(QLabel("<b>Vocabulary search</b>"))
        row = QHBoxLayout()
        self.search = QLineEdit()
        self.search.setPlaceholderText("search tokens…  (a space = " + SPACE_MARK + ")")
        self.search.setClearButtonEnabled(True)
        self.search.setToolTip("Matches the display form; a typed space matches the leading-space "
                               "marker " + SPACE_MARK)
        row.addWidget(self.search, 1)
        self.mode = QComboBox()
        self.mode.addItems(MODES)
        self.mode.setToolTip("substring: anywhere; prefix: at the start (leading space ignored); "
                             "regex: Python regular expression")
        row.addWidget(self.mode)
        lay.addLayout(row)
        self.search_info = QLabel()
        lay.addWidget(self.search_info)
        self.results = TokenTable("#", state)
        lay.addWidget(self.results, 3)

        self.completer_model = QStringListModel(self)
        self.completer = QCompleter(self.completer_model, self)
        self.completer.setCaseSensitivity(Qt.CaseSensitive)
        self.completer.setFilterMode(Qt.MatchContains)
        self.completer.setMaxVisibleItems(12)
        self.completer.activated[str].connect(self._completed)
        self.search.setCompleter(self.completer)

        self.text_timer = QTimer(self, singleShot=True, interval=250)
        self.text_timer.timeout.connect(self._tokenize)
        self.search_timer = QTimer(self, singleShot=True, interval=150)
        self.search_timer.timeout.connect(self._search)
        self.text.textChanged.connect(self.text_timer.start)
        self.search.textChanged.connect(self.search_timer.start)
        self.mode.currentIndexChanged.connect(self._mode_changed)
        state.modelChanged.connect(self._on_model)
        self.text.setPlainText(QSettings().value("tokens/text", DEFAULT_TEXT))
        self.text.textChanged.connect(
            lambda: QSettings().setValue("tokens/text", self.text.toPlainText()))

    # ------------------------------------------------------------------ model

    @Slot(object)
    def _on_model(self, layer) -> None:
        self.strings = []
        self.completer_model.setStringList([])
        if layer is None:
            return
        self.search_info.setText("indexing vocabulary…")
        self.jobs.submit(self.job_key("vocab"), lambda: vocabulary(layer.tokenizer, layer.n_vocab),
                         lambda strings, lay=layer: self._vocab_ready(lay, strings),
                         label="Indexing the vocabulary")
        self._tokenize()

    def _vocab_ready(self, layer, strings: list[str]) -> None:
        if layer is not self.layer:
            return
        self.strings = strings
        self.completer_model.setStringList(strings)
        self.search_info.setText(f"{len(strings):,} tokens")
        self._search()

    # ------------------------------------------------------------------ text

    def set_text(self, text: str) -> None:
        self.text.setPlainText(text)
        self._tokenize()

    @Slot()
    def _tokenize(self) -> None:
        layer = self.layer
        text = self.text.toPlainText()
        if layer is None or layer.tokenizer is None or not text:
            self.text_tokens.fill([])
            self.text_info.setText("" if layer is None or layer.tokenizer is not None
                                   else "this model has no tokenizer")
            return
        from detokgui.core.tokens import display_token

        ids = layer.tokenizer.encode(text)
        shown = ids[: layer.n_positions]
        self.text_tokens.fill([(i, t, display_token(layer.tokenizer, t)) for i, t in enumerate(shown)])
        note = f"{len(ids)} tokens"
        if len(ids) > layer.n_positions:
            note += f" — only the first {layer.n_positions} (the model's positions) are used"
        self.text_info.setText(note)
        self.state.set_token_set(shown)

    # ------------------------------------------------------------------ search

    def _mode_changed(self) -> None:
        mode = self.mode.currentText()
        self.completer.setFilterMode(Qt.MatchStartsWith if mode == "prefix" else Qt.MatchContains)
        self.completer.setCompletionMode(
            QCompleter.UnfilteredPopupCompletion if mode == "regex" else QCompleter.PopupCompletion
        )
        self._search()

    @Slot()
    def _search(self) -> None:
        query = self.search.text()
        if not self.strings:
            return
        try:
            hits, total = search_vocabulary(self.strings, query, self.mode.currentText())
        except re.error as exc:
            self.search_info.setText(f"invalid regular expression: {exc}")
            self.results.fill([])
            return
        self.results.fill([(r + 1, i, self.strings[i]) for r, i in enumerate(hits)])
        if query:
            more = f" (showing {len(hits)})" if total > len(hits) else ""
            self.search_info.setText(f"{total:,} matches{more}")
        else:
            self.search_info.setText(f"{len(self.strings):,} tokens")

    @Slot(str)
    def _completed(self, text: str) -> None:
        try:
            tid = self.strings.index(text)
        except ValueError:
            return
        self.state.set_query_token(tid)
