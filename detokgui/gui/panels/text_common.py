"""What the text panels (C1-C3, C5) share: the corpus they read, a hint with a "Use sample
corpus" button while there is none, the text-source options (how many texts, whether
<|endoftext|> is prepended) and one colour per term."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QCheckBox, QFrame, QHBoxLayout, QLabel, QPushButton, QSpinBox

from detokgui.core.empirical import TextSource

#: One colour per term of the six-term decomposition (SPEC §1), the same in every text view.
TERM_COLORS = {"ee": "#d62728", "pp": "#1f77b4", "pe": "#2ca02c", "ep": "#9467bd",
               "e": "#ff7f0e", "p": "#8c564b"}
#: The terms as the paper writes them, for titles and legends (HTML).
TERM_HTML = {"ee": "T<sub>ee</sub>", "pp": "T<sub>pp</sub>", "pe": "T<sub>pe</sub>",
             "ep": "T<sub>ep</sub>", "e": "T<sub>e</sub>", "p": "T<sub>p</sub>"}


def term_legend(terms) -> str:
    """'T_ee T_pp …' in the terms' colours (HTML)."""
    return " ".join(f"<span style='color:{TERM_COLORS[t]}'>■ {TERM_HTML[t]}</span>"
                    for t in terms)


def text_source(state, max_texts: int, prepend: bool) -> TextSource | None:
    """The shared corpus as a TextSource (max_texts 0 = every text), None without one."""
    if not state.corpus:
        return None
    return TextSource.corpus(state.corpus, prepend_eos=prepend, max_texts=max_texts or None)


def use_sample_corpus(widget, state) -> None:
    """Open the sample corpus shipped with detokgui, through the window's Corpus menu
    when there is one (checked and remembered like a chosen corpus)."""
    control = getattr(widget.window(), "corpus", None)
    if control is not None and hasattr(control, "use_sample"):
        control.use_sample()
        return
    from detokgui.core.demo import sample_corpus

    state.set_corpus([str(sample_corpus())])


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
            "files…</i> or <i>Open corpus folder…</i> (.txt / .jsonl, optionally .gz), or use "
            "the sample corpus shipped with detokgui.")
        self.label.setWordWrap(True)
        lay.addWidget(self.label, 1)
        self.button = QPushButton("Use sample corpus")
        self.button.setToolTip("3 MB of public-domain English (Austen, Bibles, State of the "
                               "Union addresses, Bierce)")
        self.button.clicked.connect(lambda: use_sample_corpus(self, state))
        lay.addWidget(self.button)
        state.corpusChanged.connect(self.update_shown)
        self.update_shown()

    @Slot()
    def update_shown(self, *_) -> None:
        self.setVisible(not self.state.corpus and (self.needed is None or self.needed()))


class TextSourceControls:
    """'texts' (how many corpus texts, 0 = all) and 'prepend <|endoftext|>', to add to a
    row of controls and bind with BoundOptions (fields max_texts, prepend)."""

    def __init__(self, row: QHBoxLayout, what: str = "texts"):
        row.addWidget(QLabel(what))
        self.max_texts = QSpinBox()
        self.max_texts.setRange(0, 1_000_000)
        self.max_texts.setSpecialValueText("all")
        self.max_texts.setKeyboardTracking(False)
        self.max_texts.setToolTip(
            "Use the first N texts of the corpus (a text = a window of at most n_positions\n"
            "tokens of one document); 'all' reads the whole corpus")
        row.addWidget(self.max_texts)
        self.prepend = QCheckBox("prepend <|endoftext|>")
        self.prepend.setToolTip("Start every text with <|endoftext|>, as the authors did.\n"
                                "Off: nothing is prepended.")
        row.addWidget(self.prepend)
