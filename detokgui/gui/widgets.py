"""Small controls shared by several panels."""

from __future__ import annotations

import re
from collections.abc import Iterable

from PySide6.QtCore import QPoint, QRect, QSize, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLayout,
    QLineEdit,
    QSizePolicy,
    QSpacerItem,
    QSpinBox,
    QStatusBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)
from superqt.utils import signals_blocked

from detokgui.core.conventions import TOKEN_SIGMA_LABELS, TOKEN_SIGMAS, SigmaChoice

HEAD_MODES = (("selected", "Selected head"), ("all", "All heads"), ("set", "Chosen heads"))


def parse_heads(text: str, n_heads: int) -> list[int]:
    """'0,3,7' or '0-3 8' -> the valid heads, sorted, each once; others are ignored."""
    heads: set[int] = set()
    for a, b in re.findall(r"(\d+)(?:\s*-\s*(\d+))?", text or ""):
        lo, hi = int(a), int(b) if b else int(a)
        heads.update(h for h in range(min(lo, hi), max(lo, hi) + 1) if h < n_heads)
    return sorted(heads)


def chosen_heads(spec: str, selected: int, n_heads: int) -> list[int]:
    """The heads a HeadChooser value names ("selected", "all" or "set:0,3,7"); a set
    that names no valid head falls back to the selected one."""
    mode, _, head_set = str(spec).partition(":")
    if mode == "all":
        return list(range(n_heads))
    if mode == "set":
        return parse_heads(head_set, n_heads) or [min(selected, n_heads - 1)]
    return [min(selected, n_heads - 1)]


def state_heads(spec: str, state) -> list[int]:
    """chosen_heads for `state`'s selected head and model ([] while no model is loaded)."""
    layer = state.layer
    return [] if layer is None else chosen_heads(spec, state.head, layer.n_heads)


# --------------------------------------------------------------------------- control set-up


def spin_box(lo: int, hi: int, tip: str = "", *, tracking: bool = True,
             special: str = "") -> QSpinBox:
    """A QSpinBox over lo..hi with a tooltip. tracking=False: valueChanged only when typing
    ends (Enter, focus out), for a value that starts a computation; `special`: the text
    shown instead of `lo`."""
    spin = QSpinBox()
    spin.setRange(lo, hi)
    if special:
        spin.setSpecialValueText(special)
    if not tracking:
        spin.setKeyboardTracking(False)
    if tip:
        spin.setToolTip(tip)
    return spin


def check_box(text: str, tip: str = "") -> QCheckBox:
    """A QCheckBox labelled `text` with a tooltip."""
    box = QCheckBox(text)
    if tip:
        box.setToolTip(tip)
    return box


def combo_box(items: Iterable[tuple[object, str]], tip: str = "") -> QComboBox:
    """A QComboBox of (data, text) items, in order, with a tooltip: currentData() is the
    chosen item's data (what an Options field and the settings store)."""
    combo = QComboBox()
    for data, text in items:
        combo.addItem(text, data)
    if tip:
        combo.setToolTip(tip)
    return combo


def wrapping_label(text: str = " ") -> QLabel:
    """A QLabel that wraps its text (the one-space default keeps its line's height before
    anything is shown)."""
    label = QLabel(text)
    label.setWordWrap(True)
    return label


def bare_column() -> tuple[QWidget, QVBoxLayout]:
    """A QWidget with a margin-less vertical layout: one side of a splitter."""
    box = QWidget()
    lay = QVBoxLayout(box)
    lay.setContentsMargins(0, 0, 0, 0)
    return box, lay


class SigmaControls(QWidget):
    """The token-only sigma convention (docs/math/sigma.md#token-only-views), read from and written
    to AppState."""

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(QLabel("LayerNorm σ:"))
        self.combo = QComboBox()
        for c in TOKEN_SIGMAS:
            self.combo.addItem(TOKEN_SIGMA_LABELS[c], c)
        self.combo.setToolTip(
            "How token-only views divide by the LayerNorm scale σ:\n"
            "mean over positions — σ_v = mean_j σ(e_v + p_j) (the paper's Table 1);\n"
            "at positions (i, j) — exact σ(e_u + p_i), σ(e_v + p_j);\n"
            "no LayerNorm — raw e W^QK e^T."
        )
        lay.addWidget(self.combo)
        self.i_label, self.i_spin = QLabel("i"), QSpinBox()
        self.j_label, self.j_spin = QLabel("j"), QSpinBox()
        self.i_spin.setToolTip("query position i")
        self.j_spin.setToolTip("key position j (a query at i attends to keys j ≤ i only)")
        for w in (self.i_label, self.i_spin, self.j_label, self.j_spin):
            lay.addWidget(w)
        self.note = QLabel()  # says when j was clamped to i
        self.note.setStyleSheet("color: #a15c00")
        self.note.hide()
        lay.addWidget(self.note)
        self._sync(state.sigma)
        self.combo.currentIndexChanged.connect(self._write)
        self.i_spin.valueChanged.connect(self._write)
        self.j_spin.valueChanged.connect(self._write)
        state.sigmaChanged.connect(self._sync)
        state.modelChanged.connect(self._on_model)

    @Slot(object)
    def _on_model(self, layer) -> None:
        top = (layer.n_positions - 1) if layer is not None else 0
        with signals_blocked(self.i_spin), signals_blocked(self.j_spin):
            self.i_spin.setRange(0, top)
            self.j_spin.setRange(0, top)

    @Slot(object)
    def _sync(self, choice: SigmaChoice) -> None:
        with signals_blocked(self.combo), signals_blocked(self.i_spin), \
                signals_blocked(self.j_spin):
            self.combo.setCurrentIndex(TOKEN_SIGMAS.index(choice.convention))
            self.i_spin.setValue(choice.positions[0])
            self.j_spin.setValue(choice.positions[1])
        at = choice.convention == "at"
        for w in (self.i_label, self.i_spin, self.j_label, self.j_spin):
            w.setVisible(at)
        if not at:
            self.note.hide()

    @Slot()
    def _write(self) -> None:
        """The choice as shown; a key position past the query position is clamped to it
        (causal attention: keys j <= i only), and the note says so."""
        i, j = self.i_spin.value(), self.j_spin.value()
        clamped = j > i
        if clamped:
            j = i
            self.note.setText(f"j clamped to i = {i}: keys j ≤ i only")
        self.note.setVisible(clamped)
        choice = SigmaChoice(self.combo.currentData(), (i, j))
        self.state.set_sigma(choice)
        self._sync(choice)


class HeadChooser(QWidget):
    """Which heads to plot: the selected head, all heads, or a typed set ("0,3,7").

    Its value is one string: "selected", "all" or "set:<heads>" (an option of the panel)."""

    valueChanged = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(QLabel("Heads"))
        self.combo = QComboBox()
        for mode, text in HEAD_MODES:
            self.combo.addItem(text, mode)
        self.combo.setToolTip("Which heads to plot: the head selected in the toolbar, a grid of\n"
                              "all heads, or the heads typed in the box (e.g. 0,3,7 or 0-5)")
        lay.addWidget(self.combo)
        self.edit = QLineEdit("0,1,2,3")
        self.edit.setPlaceholderText("e.g. 0,3,7")
        self.edit.setToolTip("Heads to plot (0-based): numbers and ranges, e.g. 0,3,7 or 0-5")
        self.edit.setMaximumWidth(110)
        lay.addWidget(self.edit)
        self.edit.setVisible(False)
        self.combo.currentIndexChanged.connect(self._edited)
        self.edit.editingFinished.connect(self._edited)

    @property
    def mode(self) -> str:
        return self.combo.currentData()

    def value(self) -> str:
        return f"set:{self.edit.text()}" if self.mode == "set" else self.mode

    def setValue(self, value: str) -> None:
        mode, _, head_set = str(value).partition(":")
        i = self.combo.findData(mode)
        self.combo.setCurrentIndex(max(0, i))
        if mode == "set":
            self.edit.setText(head_set)
        self.edit.setVisible(self.mode == "set")

    def set_mode(self, mode: str, head_set: str | None = None) -> None:
        """Choose a mode (and the typed set) as a user would."""
        if head_set is not None:
            self.edit.setText(head_set)
        self.setValue(f"set:{self.edit.text()}" if mode == "set" else mode)
        self.valueChanged.emit(self.value())

    def heads(self, selected: int, n_heads: int) -> list[int]:
        return chosen_heads(self.value(), selected, n_heads)

    @Slot()
    def _edited(self, *_) -> None:
        self.edit.setVisible(self.mode == "set")
        self.valueChanged.emit(self.value())


class ElidedLabel(QLabel):
    """A one-line plain-text label that never asks for more width than `max_hint` pixels:
    a longer text is elided (…) to the width it gets, and the full text is its tooltip.
    A long file name or message thus cannot widen the window. `set_note` gives it a
    tooltip of its own, shown whatever the width (after the full text when elided)."""

    def __init__(self, text: str = "", parent=None, max_hint: int = 480,
                 elide=Qt.ElideRight):
        super().__init__(parent)
        self._full = ""
        self._note = ""
        self.max_hint = max_hint
        self.elide = elide
        self.setTextFormat(Qt.PlainText)
        # its size hint (at most max_hint) when there is room, down to "……" when not
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:
        self._full = str(text or "")
        shown = self._elided()
        self._tip(shown)
        super().setText(shown)
        self.updateGeometry()

    def set_note(self, note: str) -> None:
        self._note = str(note or "")
        self._tip(super().text())

    def _tip(self, shown: str) -> None:
        self.setToolTip("\n\n".join(t for t in (self._full if shown != self._full else "",
                                                 self._note) if t))

    def text(self) -> str:  # the full text, not the elided one on screen
        return self._full

    def shown_text(self) -> str:
        return super().text()

    def _elided(self) -> str:
        width = self.contentsRect().width()
        if width <= 1:  # not laid out yet
            width = self.max_hint
        return self.fontMetrics().elidedText(self._full, self.elide, width)

    def sizeHint(self) -> QSize:
        fm = self.fontMetrics()
        w = min(fm.horizontalAdvance(self._full) + 8, self.max_hint)
        return QSize(w, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        return QSize(self.fontMetrics().horizontalAdvance("……") + 8,
                     super().minimumSizeHint().height())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        shown = self._elided()
        if shown != super().text():
            super().setText(shown)
            self._tip(shown)


class StatusBar(QStatusBar):
    """A status bar whose messages live in their own elided label (left, stretching), so
    they never run under the permanent widgets on the right nor widen the window.
    showMessage / clearMessage / currentMessage work as QStatusBar's."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.message_label = ElidedLabel(max_hint=600)
        self.message_label.setObjectName("status_message")
        self.addWidget(self.message_label, 1)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.clearMessage)

    @Slot(str)
    @Slot(str, int)
    def showMessage(self, text: str, timeout: int = 0) -> None:
        self.message_label.setText(text)
        if timeout > 0:
            self._timer.start(timeout)
        else:
            self._timer.stop()

    @Slot()
    def clearMessage(self) -> None:
        self._timer.stop()
        self.message_label.setText("")

    def currentMessage(self) -> str:
        return self.message_label.text()


class Banner(QFrame):
    """A dismissible error banner: rich text that wraps (never widens the window) and a
    close button. `show_text(html)` shows it; the button or `dismiss()` hides it."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("banner")
        self.setStyleSheet(
            "QFrame#banner { background: #fdecea; border: 1px solid #f5c6cb;"
            " border-radius: 4px; } QLabel { color: #611a15; }")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 6, 4, 6)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.label.setMinimumWidth(100)
        lay.addWidget(self.label, 1)
        self.close_button = QToolButton()
        self.close_button.setText("✕")
        self.close_button.setAutoRaise(True)
        self.close_button.setToolTip("Dismiss this message")
        self.close_button.clicked.connect(self.dismiss)
        lay.addWidget(self.close_button, 0, Qt.AlignTop)
        self.hide()

    def show_text(self, html: str) -> None:
        self.label.setText(html)
        self.show()

    def text(self) -> str:
        return self.label.text()

    @Slot()
    def dismiss(self) -> None:
        self.hide()

    def heightForWidth(self, w: int) -> int:
        return self.layout().heightForWidth(w)

    def hasHeightForWidth(self) -> bool:
        return True


class FlowLayout(QLayout):
    """A row of controls that wraps onto further lines when the panel is narrow, so that a
    long row of options never sets the window's minimum width. addWidget / addLayout /
    addSpacing / addStretch as in QHBoxLayout (a stretch only ends nothing: items flow)."""

    def __init__(self, parent=None, spacing: int = 6):
        super().__init__(parent)
        self._items: list = []
        self.setSpacing(spacing)
        self.setContentsMargins(0, 0, 0, 0)

    def addItem(self, item) -> None:
        self._items.append(item)

    def addSpacing(self, size: int) -> None:
        self.addItem(QSpacerItem(size, 0, QSizePolicy.Fixed, QSizePolicy.Minimum))

    def addStretch(self, _stretch: int = 0) -> None:
        self.addSpacing(12)

    def addLayout(self, layout) -> None:
        box = QWidget()
        box.setLayout(layout)
        layout.setContentsMargins(0, 0, 0, 0)
        self.addWidget(box)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int):
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int):
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self):
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        # Qt asks for the same widths many times per layout pass (every ancestor's size
        # hint): cached until the layout is invalidated.
        cache = self.__dict__.setdefault("_hfw", {})
        h = cache.get(width)
        if h is None:
            h = cache[width] = self._arrange(QRect(0, 0, width, 0), move=False)
        return h

    def invalidate(self) -> None:
        self.__dict__["_hfw"] = {}
        super().invalidate()

    def setGeometry(self, rect) -> None:
        super().setGeometry(rect)
        self._arrange(rect, move=True)

    def sizeHint(self) -> QSize:
        """One line with everything on it."""
        items = [i for i in self._items if not i.isEmpty()]
        w = sum(i.sizeHint().width() for i in items) + self.spacing() * max(0, len(items) - 1)
        h = max((i.sizeHint().height() for i in items), default=0)
        m = self.contentsMargins()
        return QSize(w + m.left() + m.right(), h + m.top() + m.bottom())

    def minimumSize(self) -> QSize:
        """The widest single item: anything wider wraps."""
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        m = self.contentsMargins()
        return size + QSize(m.left() + m.right(), m.top() + m.bottom())

    def _arrange(self, rect, move: bool) -> int:
        m = self.contentsMargins()
        r = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        x, y, line_h, gap = r.x(), r.y(), 0, self.spacing()
        line: list = []

        def place(line, y, line_h):
            for item, px in line:  # each item vertically centred on its line
                h = item.sizeHint().height()
                item.setGeometry(QRect(QPoint(px, y + (line_h - h) // 2),
                                       QSize(item.sizeHint().width(), h)))

        for item in self._items:
            if item.isEmpty():
                continue
            hint = item.sizeHint()
            if line and x + hint.width() > r.right() + 1:
                if move:
                    place(line, y, line_h)
                x, y, line, line_h = r.x(), y + line_h + gap, [], 0
                if isinstance(item, QSpacerItem):  # no spacing at the start of a line
                    continue
            line.append((item, x))
            x += hint.width() + gap
            line_h = max(line_h, hint.height())
        if move and line:
            place(line, y, line_h)
        return y + line_h - rect.y() + m.bottom()
