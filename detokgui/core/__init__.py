"""The mathematics of detokgui, in parts named after the analysis (no Qt anywhere below):

    base           errors, progress, atomic writes, the disk cache, checks, tables and CSV
    model          the folded layer 0, sigma, the six terms, the conventions, tokens,
                   model families, and sources (local folders, the hub, the demo models)
    corpus         a user's documents and their unigram and bigram counts
    token_side     A2-A7: T_ee and top-k, head statistics, bigram AUROC, frequency
    position_side  B1-B7: positional bias and pattern, head classes, neurons, slopes
    composition    layer 0 -> layer 1: composition scores, induction and previous-token
                   scores (block 1 read on demand)
    text_side      C1-C5 and OV: layer 0 on real text
    compare        per-head metrics, two models side by side, training series

A part imports only the parts above it here (token_side, position_side and composition
not each other; `tests/test_architecture.py` checks it). Each part's `__init__` says what
it holds.

Importing the package is light (no torch, no numpy): `Layer0` and `TERM_NAMES` load on
first use, so that the command line can read the choices of `model.conventions` before it
loads a model."""

from detokgui.core.base.errors import Cancelled, DetokError, InputError, ModelLoadError

__all__ = ["TERM_NAMES", "Cancelled", "DetokError", "InputError", "Layer0", "ModelLoadError"]


def __getattr__(name: str):
    if name == "Layer0":
        from detokgui.core.model.weights import Layer0  # torch: `import detokgui.core` is light

        return Layer0
    if name == "TERM_NAMES":
        from detokgui.core.model.terms import TERM_NAMES  # torch, ditto

        return TERM_NAMES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
