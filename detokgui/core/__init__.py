"""The mathematics of detokgui. Nothing below this package imports Qt."""

from detokgui.core.errors import Cancelled, DetokError, InputError, ModelLoadError
from detokgui.core.terms import TERM_NAMES
from detokgui.core.weights import Layer0

__all__ = ["TERM_NAMES", "Cancelled", "DetokError", "InputError", "Layer0", "ModelLoadError"]
