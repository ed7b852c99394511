"""How the text views show the six terms of the decomposition
(docs/math/terms.md#the-six-terms): one colour each,
the paper's names, a legend."""

from __future__ import annotations

from detokgui.core.model.conventions import TERM_COLOURS

#: One colour per term of the six-term decomposition (docs/math/terms.md#the-six-terms), the same in
#: every text view and figure (`core.model.conventions.TERM_COLOURS`).
TERM_COLORS = TERM_COLOURS


#: The terms as the paper writes them, for titles and legends (HTML).
TERM_HTML = {"ee": "T<sub>ee</sub>", "pp": "T<sub>pp</sub>", "pe": "T<sub>pe</sub>",
             "ep": "T<sub>ep</sub>", "e": "T<sub>e</sub>", "p": "T<sub>p</sub>"}


def term_legend(terms) -> str:
    """'T_ee T_pp …' in the terms' colours (HTML)."""
    return " ".join(f"<span style='color:{TERM_COLORS[t]}'>■ {TERM_HTML[t]}</span>"
                    for t in terms)
