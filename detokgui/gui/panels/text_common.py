"""What the text panels (C1-C3, C5) share: the corpus they read, a hint with a "Use sample
corpus" button while there is none, the text-source options (how many texts, whether
<|endoftext|> is prepended), one colour per term, the per-head plots over positions of C2
and C3, and the head-set checkboxes of C5."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QWidget,
)
from superqt.utils import signals_blocked

from detokgui.core.empirical import TextSource
from detokgui.gui.panels.base import Panel
from detokgui.gui.head_grid import HeadGrid
from detokgui.gui.plots import PlotFrame
from detokgui.gui.position import connect_position_clicks
from detokgui.gui.widgets import check_box, parse_heads, spin_box

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


def use_sample_corpus(state) -> None:
    """Open the sample corpus shipped with detokgui as the Corpus menu does (checked and
    remembered like a chosen corpus; see `AppState.request_corpus`)."""
    from detokgui.core.demo import sample_corpus

    state.request_corpus([str(sample_corpus())])


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
        self.button.clicked.connect(lambda: use_sample_corpus(state))
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
        self.max_texts = spin_box(
            0, 1_000_000, tracking=False, special="all",
            tip="Use the first N texts of the corpus (a text = a window of at most n_positions\n"
                "tokens of one document); 'all' reads the whole corpus")
        row.addWidget(self.max_texts)
        self.prepend = check_box("prepend <|endoftext|>",
                                 "Start every text with <|endoftext|>, as the authors did.\n"
                                 "Off: nothing is prepended.")
        row.addWidget(self.prepend)


class CorpusGridPanel(Panel):
    """A panel of per-head plots over positions computed on corpus texts (C2, C3): one
    PlotFrame of HeadGrid cells (`build_cell` adds a new cell's curves), hover text from
    `describe(head, position)`, a click that chooses the query position."""

    frame_name = "plot"

    def add_grid(self, layout, tip: str) -> None:
        self.frame = PlotFrame(self.frame_name, self.table)
        self.grid = HeadGrid(self.frame, "", self.build_cell, self.state)
        layout.addWidget(self.frame, 1)
        self.status.setWordWrap(True)
        self.status.setToolTip(tip)
        layout.addWidget(self.status)
        scene = self.frame.view.scene()
        connect_position_clicks(scene, lambda p: self.grid.position(p, self.n_positions()),
                                self.state.set_query_position)
        scene.sigMouseMoved.connect(self._hover)

    def build_cell(self, cell) -> None:
        raise NotImplementedError

    def describe(self, head: int, position: int) -> str:
        raise NotImplementedError

    def table(self):
        raise NotImplementedError

    def plot_frames(self):
        return [self.frame]

    def n_positions(self) -> int:
        return self.layer.n_positions if self.layer is not None else 0

    def draw_nothing(self, what: str) -> None:
        """No result: with a model, say that a corpus is needed to `what`."""
        self.grid.set_heads([])
        self.grid.set_title(f"Choose a corpus (Corpus menu) to {what}."
                            if self.layer is not None else " ")
        self.status.setText(" ")

    def _hover(self, pos) -> None:
        res = self.result
        hit = self.grid.at(pos, self.n_positions())
        if res is not None and hit is not None and hit[0] in res.heads:
            self.status.setText(self.describe(*hit))


class HeadSet(QWidget):
    """The heads of the circuit: "b4" (the heads B4 classifies as contextual, shown ticked
    once known) or "set:0,1,3" (ticked by the user)."""

    valueChanged = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.lay = QHBoxLayout(self)
        self.lay.setContentsMargins(0, 0, 0, 0)
        self.lay.addWidget(QLabel("Contextual heads"))
        self.auto = QCheckBox("as classified")
        self.auto.setChecked(True)
        self.auto.setToolTip("The heads the head classification (Positional pattern view) "
                             "calls contextual.\nUntick to choose the heads yourself.")
        self.auto.toggled.connect(self._changed)
        self.lay.addWidget(self.auto)
        self.boxes: list[QCheckBox] = []
        self._set = ""  # the typed set, kept while there are no boxes

    def set_count(self, n: int) -> None:
        for b in self.boxes:
            self.lay.removeWidget(b)
            b.deleteLater()
        self.boxes = []
        for h in range(n):
            b = check_box(str(h), f"head {h} in the circuit")
            b.toggled.connect(self._changed)
            self.lay.addWidget(b)
            self.boxes.append(b)
        self._show(parse_heads(self._set, n))

    def value(self) -> str:
        return "b4" if self.auto.isChecked() else "set:" + self._set

    def setValue(self, value: str) -> None:
        mode, _, heads = str(value).partition(":")
        with signals_blocked(self.auto):
            self.auto.setChecked(mode != "set")
        if mode == "set":
            self._set = heads
            self._show(parse_heads(heads, len(self.boxes)))
        self._enable()

    def show_heads(self, heads) -> None:
        """Tick the heads of a computed circuit (B4 mode: what the classification found)."""
        if self.auto.isChecked():
            self._show(heads)

    def _show(self, heads) -> None:
        for h, b in enumerate(self.boxes):
            with signals_blocked(b):
                b.setChecked(h in heads)
        self._enable()

    def _enable(self) -> None:
        for b in self.boxes:
            b.setEnabled(not self.auto.isChecked())

    @Slot()
    def _changed(self, *_) -> None:
        if self.sender() is not self.auto:
            self._set = ",".join(str(h) for h, b in enumerate(self.boxes) if b.isChecked())
        self._enable()
        self.valueChanged.emit(self.value())
