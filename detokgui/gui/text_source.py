"""The texts a text view reads: the shared corpus as a TextSource, and its options (how many
texts, whether <|endoftext|> is prepended)."""

from __future__ import annotations

from detokgui.core.empirical import TextSource
from detokgui.gui.option_rows import check, option, spin


def text_source(state, max_texts: int, prepend: bool) -> TextSource | None:
    """The shared corpus as a TextSource (max_texts 0 = every text), None without one."""
    if not state.corpus:
        return None
    return TextSource.corpus(state.corpus, prepend_eos=prepend, max_texts=max_texts or None)


def max_texts_option(default: int, what: str = "texts"):
    """The Options field 'max_texts': how many corpus texts, 0 = all (a spin box labelled
    `what`)."""
    return option(default, spin(
        0, 1_000_000, "Use the first N texts of the corpus (a text = a window of at most "
                      "n_positions\ntokens of one document); 'all' reads the whole corpus",
        label=what, tracking=False, special="all"))


def prepend_option(default: bool = False):
    """The Options field 'prepend': whether every text starts with <|endoftext|>."""
    return option(default, check("prepend <|endoftext|>",
                                 "Start every text with <|endoftext|>, as the authors did.\n"
                                 "Off: nothing is prepended."))
