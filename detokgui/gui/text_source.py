"""The texts a text view reads: the shared corpus as a TextSource, and its options (how many
texts, whether <|endoftext|> is prepended)."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel

from detokgui.core.empirical import TextSource
from detokgui.gui.controls import check_box, spin_box


def text_source(state, max_texts: int, prepend: bool) -> TextSource | None:
    """The shared corpus as a TextSource (max_texts 0 = every text), None without one."""
    if not state.corpus:
        return None
    return TextSource.corpus(state.corpus, prepend_eos=prepend, max_texts=max_texts or None)


class TextSourceControls:
    """'texts' (how many corpus texts, 0 = all) and 'prepend <|endoftext|>', to add to a
    row of controls and bind with BoundOptions (fields max_texts, prepend)."""

    def __init__(self, row: QHBoxLayout, what: str = "texts"):
        row.addWidget(QLabel(what))
        self.max_texts = spin_box(
            0, 1_000_000, tracking=False, special="all",
            tip="Use the first N texts of the corpus (a text = a window of at most n_positions\n"
                "tokens of one document); 'all' reads the whole corpus")
        row.addWidget(self.max_texts)
        self.prepend = check_box("prepend <|endoftext|>",
                                 "Start every text with <|endoftext|>, as the authors did.\n"
                                 "Off: nothing is prepended.")
        row.addWidget(self.prepend)
