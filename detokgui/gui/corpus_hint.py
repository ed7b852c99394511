"""'No corpus is open' with a *Use sample corpus* button, for the views that need texts."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton

from detokgui.core.model.sources.demo import sample_corpus


class CorpusHint(QFrame):
    """Shown while no corpus is open (and `needed()` says one is): what needs one and how
    to choose it. Call `update_shown()` when what `needed` reads changes."""

    def __init__(self, state, what: str, needed: Callable[[], bool] | None = None,
                 parent=None):
        super().__init__(parent)
        self.state = state
        self.needed = needed
        self.setFrameShape(QFrame.StyledPanel)
        self.setStyleSheet("CorpusHint { background: #fff8e1; border: 1px solid #f0d98c; }")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 4, 8, 4)
        self.label = QLabel(
            f"<b>No corpus is open.</b> {what} Choose texts with <i>Corpus › Open corpus "
            "files…</i> or <i>Open corpus folder…</i> (.txt / .jsonl, optionally .gz or .zst; "
            ".parquet; .arrow), open counts made elsewhere with <i>Open counts…</i>, or use "
            "the sample corpus shipped with detokgui.")
        self.label.setWordWrap(True)
        lay.addWidget(self.label, 1)
        self.button = QPushButton("Use sample corpus")
        self.button.setToolTip("3 MB of public-domain English (Austen, Bibles, State of the "
                               "Union addresses, Bierce)")
        # checked and remembered like a chosen corpus (`AppState.request_corpus`)
        self.button.clicked.connect(lambda: state.request_corpus([str(sample_corpus())]))
        lay.addWidget(self.button)
        state.corpusChanged.connect(self.update_shown)
        self.update_shown()

    @Slot()
    def update_shown(self, *_) -> None:
        self.setVisible(not self.state.corpus and (self.needed is None or self.needed()))
