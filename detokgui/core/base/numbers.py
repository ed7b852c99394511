"""One way to show numbers to people: `num(x)` everywhere a value is displayed (labels,
tooltips, hover text, table cells), so that 0.00103 and 2.83e-04 never sit side by side."""

from __future__ import annotations

import math

DIGITS = 4  # significant digits shown


def num(x, digits: int = DIGITS) -> str:
    """A value with `digits` significant digits: plain notation for 1e-3 <= |x| < 1e5
    (trailing zeros dropped), scientific outside; integers with thousands separators;
    nan/inf spelled out."""
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return f"{x:,}"
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e5:
        decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
        text = f"{x:.{decimals}f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return text
    return f"{x:.{digits - 1}e}"
