"""The mathematics of detokgui. Nothing below this package imports Qt.

Importing the package is light (no torch, no numpy): `Layer0` and `TERM_NAMES` load on
first use, so that the command line can read the choices of `core.conventions` before it
loads a model."""

from detokgui.core.errors import Cancelled, DetokError, InputError, ModelLoadError

__all__ = ["TERM_NAMES", "Cancelled", "DetokError", "InputError", "Layer0", "ModelLoadError"]


def __getattr__(name: str):
    if name == "Layer0":
        from detokgui.core.weights import Layer0

        return Layer0
    if name == "TERM_NAMES":
        from detokgui.core.terms import TERM_NAMES

        return TERM_NAMES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
