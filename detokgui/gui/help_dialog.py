"""Help in the window: every view with one line on what it shows and its shortcut, every
keyboard shortcut, and the conventions in brief (sigma, temperature, colour sign, default
query position, KL definition) with the documentation pages they come from.

The texts are built from what they describe: the views' own titles and tooltips, the
window's menu actions and their shortcuts, and the labels of `core.model.conventions`, so that
the help cannot drift from the window."""

from __future__ import annotations

import html

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTabWidget, QTextBrowser, QVBoxLayout

from detokgui.core.model.conventions import (
    COLOUR_SIGN_NOTE,
    PAPER_QUERY_POSITION,
    TEMPERATURE_HINT,
    TOKEN_SIGMA_LABELS,
    position_text,
    temperature_label,
)
from detokgui.core.text_side.empirical import DEFINITION_LABELS
from detokgui.core.token_side.auroc import NO_BIGRAM_LABELS

#: Where the documentation of each part lives, relative to detokgui's source folder.
DOCS = {
    "views": "docs/views.md",
    "sigma": "docs/math/sigma.md",
    "terms": "docs/math/terms.md",
    "notation": "docs/math/notation.md",
    "position": "docs/math/position-side.md",
    "text": "docs/math/text-side.md",
    "token": "docs/math/token-side.md",
}

PAGES = ("views", "shortcuts", "conventions")
TABLE = "<table cellspacing='0' cellpadding='3' border='1' style='border-collapse:collapse'>"


def _doc(key: str) -> str:
    return f"<span style='color:#555'>({DOCS[key]})</span>"


def _items(labels: dict[str, str]) -> str:
    """A list item "<b>name</b>: label" per entry of `labels`."""
    return "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>"
                   for k, v in labels.items())


def views_html(groups, shortcuts: dict[str, str]) -> str:
    """One table row per view: the tab it is in, its title, what it shows (its tooltip),
    its shortcut. `groups`: (group title, panels); `shortcuts`: view title -> key."""
    rows = []
    for group, panels in groups:
        for k, panel in enumerate(panels):
            key = shortcuts.get(panel.title, "")
            rows.append(
                f"<tr><td>{html.escape(group) if k == 0 else ''}</td>"
                f"<td><b>{html.escape(panel.title)}</b></td>"
                f"<td>{html.escape(panel.tooltip)}</td><td>{html.escape(key)}</td></tr>")
    return (
        "<p>Every view reads and writes one shared selection (model, head, query and key "
        "token, query position, token set): choosing a token or a head in one view updates "
        "the others. Right-click a plot to export it as PNG, SVG or CSV; <i>File › Export "
        "all figures…</i> writes the paper's figures. What each view and its CSV columns "
        f"mean: {_doc('views')}.</p>{TABLE}"
        "<tr><th>tab</th><th>view</th><th>what it shows</th><th>shortcut</th></tr>"
        + "".join(rows) + "</table>")


def shortcuts_html(actions) -> str:
    """Every menu action that has a shortcut: (menu, action text, key)."""
    rows = "".join(
        f"<tr><td>{html.escape(key)}</td><td>{html.escape(menu)} › {html.escape(text)}</td></tr>"
        for menu, text, key in actions)
    return (f"{TABLE}<tr><th>key</th><th>action</th></tr>{rows}</table><p>Click a token to "
            "make it the query token, Shift+click to make it the key token; click a plot at a "
            "position to choose the query position.</p>")


def conventions_html(layer=None) -> str:
    """The conventions in brief, with the loaded model's own values when there is one."""
    tau = (f" The model shown uses {html.escape(temperature_label(layer))}."
           if layer is not None else "")
    position = (f" For the model shown: {html.escape(position_text(layer.n_positions))}."
                if layer is not None else "")
    return f"""
<h3>LayerNorm scale σ</h3>
<p>Every term is divided by the LayerNorm scale σ(e + p) of the token at its position.
A view that knows only tokens, or only positions, needs a stand-in for it
{_doc('sigma')}.</p>
<p><b>Token-only views</b> (top-k, heatmap, head statistics, AUROC, frequency), the
<i>LayerNorm σ</i> box, shared by all of them:</p><ul>{_items(TOKEN_SIGMA_LABELS)}</ul>
<p>"mean over positions" is the paper's (Table 1, Fig 2-B).</p>
<p><b>Position-only views</b> (positional bias and pattern, key-position slopes, empirical
prediction):</p>
<ul><li><b>paper</b> (default, the authors' figures): key side E<sub>v</sub>[1/σ(e<sub>v</sub>
+ p<sub>j</sub>)], the query side's σ the vocabulary mean, max or min (the three lines of
Fig 3-B), bands the 95% interval over the vocabulary;</li>
<li><b>mean-sigma</b>: 1 / (vocabulary mean σ) on both sides;</li>
<li><b>none</b>: without LayerNorm (raw products).</li></ul>
<h3>Temperature τ</h3>
<p>{html.escape(TEMPERATURE_HINT)}. Every softmax is written "/ τ" and says which τ.{tau}
{_doc('terms')}</p>
<h3>Colours</h3>
<p>Signed heatmaps (T<sub>ee</sub>, the six terms): {html.escape(COLOUR_SIGN_NOTE)}, the scale
symmetric around 0, in the window, the exported figures and <code>dg.plot</code> alike
{_doc('notation')}.</p>
<h3>Default query position</h3>
<p>Views and commands that need a query position i start at the paper's i =
{PAPER_QUERY_POSITION} (Fig 3-B to 3-E), scaled to a model with fewer than 1024 positions:
round(500 (L − 1) / 1023).{position} {_doc('notation')}</p>
<h3>Six-term contribution (KL)</h3><ul>{_items(DEFINITION_LABELS)}</ul><p>{_doc('text')}</p>
<h3>Bigram AUROC: tokens without bigrams</h3><ul>{_items(NO_BIGRAM_LABELS)}</ul>
<p>{_doc('token')}</p>
<p>The documentation pages named here are in the <code>docs/</code> folder of detokgui's
source (<code>mkdocs serve</code> shows them as a site).</p>
"""


class HelpDialog(QDialog):
    """Help › Views and shortcuts (F1) and Help › Conventions: three pages of text built
    from the window (`views_html`, `shortcuts_html`, `conventions_html`). Not modal: it
    stays open beside the views."""

    def __init__(self, window, page: str = "views"):
        super().__init__(window)
        self.setWindowTitle("detokgui help")
        self.resize(820, 640)
        lay = QVBoxLayout(self)
        self.tabs = QTabWidget()
        self.browsers: dict[str, QTextBrowser] = {}
        for name, title in zip(PAGES, ("Views", "Shortcuts", "Conventions")):
            browser = QTextBrowser()
            browser.setOpenExternalLinks(False)
            self.browsers[name] = browser
            self.tabs.addTab(browser, title)
        lay.addWidget(self.tabs)
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        buttons.rejected.connect(self.close)
        lay.addWidget(buttons)
        self.window_ = window
        self.refresh()
        self.show_page(page)

    def refresh(self) -> None:
        """Fill the pages from the window as it is now (its model, its actions)."""
        w = self.window_
        actions = menu_shortcuts(w)
        shortcuts = {text: key for _, text, key in actions}
        self.browsers["views"].setHtml(views_html(w.view_groups(), shortcuts))
        self.browsers["shortcuts"].setHtml(shortcuts_html(actions))
        self.browsers["conventions"].setHtml(conventions_html(w.state.layer))

    def show_page(self, page: str) -> None:
        self.tabs.setCurrentIndex(PAGES.index(page))

    def text(self, page: str) -> str:
        return self.browsers[page].toPlainText()


def menu_shortcuts(window) -> list[tuple[str, str, str]]:
    """(menu, action text, key) of every action in the window's menus that has a
    shortcut, in menu order."""
    out = []

    def walk(menu, path):
        for act in menu.actions():
            if act.menu() is not None:
                walk(act.menu(), f"{path} › {act.menu().title().replace('&', '')}")
            elif not act.shortcut().isEmpty():
                out.append((path, act.text().replace("&", ""),
                            act.shortcut().toString(QKeySequence.NativeText)))

    for top in window.menuBar().actions():
        if top.menu() is not None:
            walk(top.menu(), top.menu().title().replace("&", ""))
    return out
