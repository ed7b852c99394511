"""The texts a text view reads: the shared corpus as a TextSource, and its options (how many
texts, whether the model's BOS token is prepended)."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QWidget

from detokgui.core.text_side.empirical import TextSource
from detokgui.gui.option_rows import Control, option, spin

PREPEND_LABEL = "prepend BOS"
PREPEND_TIP = ("Start every text with the model's BOS token (the tokenizer's bos_token, else "
               "its eos_token:\n<|endoftext|> for GPT-2, as the authors did; </s> for OPT).\n"
               "Off: nothing is prepended.")


def text_source(state, max_texts: int, prepend: bool) -> TextSource | None:
    """The shared corpus as a TextSource (max_texts 0 = every text), None without one."""
    if not state.corpus:
        return None
    return TextSource.corpus(state.corpus, prepend_bos=prepend, max_texts=max_texts or None)


def max_texts_option(default: int, what: str = "texts"):
    """The Options field 'max_texts': how many corpus texts, 0 = all (a spin box labelled
    `what`)."""
    return option(default, spin(
        0, 1_000_000, "Use the first N texts of the corpus (a text = a window of at most "
                      "n_positions\ntokens of one document); 'all' reads the whole corpus",
        label=what, tracking=False, special="all"))


class BosCheckBox(QCheckBox):
    """The 'prepend BOS' check box. Once shown in a panel, it follows the panel's model:
    its tooltip names the model's BOS token (tokens.bos_description), and it is off and
    disabled when the tokenizer has neither a BOS nor an EOS token."""

    def __init__(self, tip: str = PREPEND_TIP):
        super().__init__(PREPEND_LABEL)
        self.tip = tip
        self.setToolTip(tip)
        self._state = None

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._state is None:
            widget: QWidget | None = self.parentWidget()
            while widget is not None and not hasattr(widget, "state"):
                widget = widget.parentWidget()
            state = getattr(widget, "state", None)
            if state is not None and hasattr(state, "modelChanged"):
                self._state = state
                state.modelChanged.connect(self.follow)
                self.follow(state.layer)

    def follow(self, layer) -> None:
        """Name `layer`'s BOS token in the tooltip; disable (and clear) the box without one."""
        from detokgui.core.model.tokens import bos_description, bos_id

        if layer is None:
            self.setEnabled(True)
            self.setToolTip(self.tip)
            return
        tok = layer.tokenizer
        has = bos_id(tok) is not None
        if not has and self.isChecked():
            self.setChecked(False)
        self.setEnabled(has)
        self.setToolTip(f"{self.tip}\nThis model's BOS token: {bos_description(tok)}.")


def bos_check(tip: str = PREPEND_TIP) -> Control:
    """A bool: the 'prepend BOS' check box (BosCheckBox)."""
    return Control(lambda: BosCheckBox(tip))


def prepend_option(default: bool = False):
    """The Options field 'prepend': whether every text starts with the model's BOS token."""
    return option(default, bos_check())
