"""The shared query position on screen: a spin box (and slider) bound to it, a marker line
on plots, and the key position under the mouse.

Every control here reads `AppState.query_position` and writes it through
`set_query_position`; they follow its changes with their own signals blocked, so
nothing loops. While a slider or a marker is dragged, the shared position changes at most
once per DRAG_THROTTLE_MS (superqt's `qthrottled`: the first value at once, the newest at
the end of each interval, and the last when the drag ends): each change makes every
panel in view compute and redraw, and a drag gives a new value on every mouse move."""

from __future__ import annotations

from collections.abc import Callable

import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Slot
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSlider, QWidget
from superqt.utils import qthrottled, signals_blocked

from detokgui.core.model.conventions import POSITION_CONVENTIONS
from detokgui.core.position_side.titles import CONVENTION_NAMES
from detokgui.gui.controls import spin_box

DRAG_THROTTLE_MS = 66  # 15 values a second while dragged; the last one always


def position_at(vb: pg.ViewBox, scene_pos: QPointF, n_positions: int) -> int | None:
    """The position under a scene point of the view box `vb` (x rounded to the nearest
    integer, clamped to 0..n_positions-1); None outside the view box or without positions."""
    if n_positions <= 0 or not vb.sceneBoundingRect().contains(scene_pos):
        return None
    x = vb.mapSceneToView(scene_pos).x()
    return int(max(0, min(n_positions - 1, round(x))))


def connect_position_clicks(scene, locate: Callable[[QPointF], object | None],
                            choose: Callable[[object], None]) -> None:
    """A single left click on `scene` where locate(scene_pos) gives a position (or anything
    not None: a heatmap's cell) chooses it."""

    def clicked(ev):
        if ev.button() != Qt.LeftButton or ev.double():
            return
        j = locate(ev.scenePos())
        if j is not None:
            choose(j)
            ev.accept()

    scene.sigMouseClicked.connect(clicked)


class QueryPositionControl(QWidget):
    """'Query position i' as a spin box, optionally with a slider and "of L-1", bound to
    the shared query position."""

    def __init__(self, state, label: str = "Query position i", slider: bool = False,
                 tip: str = "Query position (0-based), shared with every panel", parent=None):
        super().__init__(parent)
        self.state = state
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(QLabel(label))
        self.slider: QSlider | None = None
        if slider:
            self.slider = QSlider(Qt.Horizontal)
            self.slider.setPageStep(16)
            self.slider.setToolTip(tip)
            lay.addWidget(self.slider, 1)
        self.spin = spin_box(0, 0, tip, tracking=False)
        lay.addWidget(self.spin)
        self.max_label = QLabel("of 0")
        lay.addWidget(self.max_label)
        self.max_label.setVisible(slider)
        self._widgets = [w for w in (self.slider, self.spin) if w is not None]
        self._model_changed(state.layer)
        self._dragged = qthrottled(state.set_query_position, timeout=DRAG_THROTTLE_MS,
                                   parent=self)
        for w in self._widgets:
            w.valueChanged.connect(self._changed)
        if self.slider is not None:
            self.slider.sliderReleased.connect(self._dragged.flush)
        state.modelChanged.connect(self._model_changed)
        state.queryPositionChanged.connect(self._show)

    @Slot(int)
    def _changed(self, i: int) -> None:
        """A widget's new value: shown by the other at once; the shared position set at
        once, or throttled while the slider is dragged."""
        self._show(i)
        if self.slider is not None and self.slider.isSliderDown():
            self._dragged(i)
        else:
            self._dragged.cancel()  # a drag's pending value must not come after this one
            self.state.set_query_position(i)

    @Slot(object)
    def _model_changed(self, layer) -> None:
        top = layer.n_positions - 1 if layer is not None else 0
        for w in self._widgets:
            with signals_blocked(w):
                w.setRange(0, top)
        self.max_label.setText(f"of {top}")
        self._show(self.state.query_position)

    @Slot(int)
    def _show(self, i: int) -> None:
        for w in self._widgets:
            if w.value() != i:
                with signals_blocked(w):
                    w.setValue(i)


class PositionMarker(pg.InfiniteLine):
    """A vertical line at the shared query position. A movable one sets the position
    while dragged (`live`, throttled) or when the drag ends. `when_visible` (its panel's
    `Panel.when_visible`): follow the position only while the panel is shown, and once
    when it is shown again."""

    def __init__(self, state, movable: bool = False, live: bool = True, when_visible=None,
                 **kw):
        kw.setdefault("pen", pg.mkPen((0, 0, 0, 170), width=1, style=Qt.DashLine))
        super().__init__(pos=state.query_position, angle=90, movable=movable, **kw)
        self.state = state
        self._dragged = None
        if movable and live:
            self._dragged = qthrottled(self._moved, timeout=DRAG_THROTTLE_MS, parent=self)
            self.sigDragged.connect(self._dragged)
            # the last value of the drag, if not passed on yet
            self.sigPositionChangeFinished.connect(self._dragged.flush)
        elif movable:
            self.sigPositionChangeFinished.connect(self._moved)
        follow = self._show if when_visible is None else \
            when_visible(lambda: self._show(self.state.query_position))
        state.queryPositionChanged.connect(follow)
        state.modelChanged.connect(self._model_changed)
        self._model_changed(state.layer)

    @Slot(object)
    def _model_changed(self, layer) -> None:
        if layer is not None:
            self.setBounds((0, layer.n_positions - 1))
        self._show(self.state.query_position)

    @Slot(int)
    def _show(self, i: int) -> None:
        # setValue emits sigPositionChanged (which moves the label), never the drag
        # signals this marker listens to: no loop.
        if self.value() != i:
            self.setValue(i)

    def _moved(self, *_) -> None:
        self.state.set_query_position(round(self.value()))
        self._show(self.state.query_position)


class ConventionBox(QComboBox):
    """The position-only sigma convention (core.model.conventions.POSITION_CONVENTIONS), the
    authors' "paper" first: a combo box whose value (currentData) is the convention's key."""

    def __init__(self, parent=None):
        super().__init__(parent)
        for c in POSITION_CONVENTIONS:
            self.addItem(CONVENTION_NAMES[c], c)
        self.setToolTip(
            "How the position-only terms divide by the LayerNorm scale σ:\n"
            "paper — the authors' figures: each key term divided by every token's own\n"
            "  σ(e_v + p_j) and averaged over the vocabulary, E_v[1/σ(e_v + p_j)]; σ mean /\n"
            "  max / min applies to the query position only; bands = 95% of the tokens;\n"
            "mean σ — 1 / mean_v σ(e_v + p) at both i and j; band = σ min…max.")
