"""Plots that are painted once per change: pyqtgraph's deferred updates done before the
window paints, not during it; and a long paint of the window split between event-loop
passes, past a budget a plot or table at a time, and not begun in a pass just after a
long one, so that the window answers in between."""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from functools import partial

import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QPainter, QRegion
from PySide6.QtWidgets import QWidget
from shiboken6 import isValid

from detokgui.gui import event_passes

_UPDATE_REQUEST = QEvent.Type.UpdateRequest
_META_CALL = QEvent.Type.MetaCall
_PAINT = QEvent.Type.Paint
_SHOW = QEvent.Type.Show

# GUI-thread CPU time one paint of a window may take before the plots and tables still to
# paint in it wait for the next event-loop pass. A page of two plots and a table took
# 15-20 ms on an idle machine, two to three times that on a busy one, in one pass.
PAINT_BUDGET_S = 0.005
MAX_PUT_OFF = event_passes.MAX_WAITS  # times in a row a viewport waits for a short pass
MOST_PUT_OFF = event_passes.MOST_WAITS  # times in a row a viewport may wait, in all


class PaintPreparer(QObject):
    """Before its window paints, lets the shown pyqtgraph views do what pyqtgraph defers
    to their paint, and hands the resulting scene changes in; then runs the paint with
    `_pacer` watching it.

    A pyqtgraph view computes its auto-range and view matrix at the start of its own paint
    (`prepareForPaint`). That moves items, and the scene reports the change later, as a
    queued call, so every plot was painted twice per change: once, and once more for the
    change its first paint made. Run on the window's update request, before anything is
    painted, the change is part of the one paint."""

    def __init__(self, window):
        super().__init__(window)
        self.views: weakref.WeakSet[pg.GraphicsView] = weakref.WeakSet()
        window.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:
        if event.type() == _UPDATE_REQUEST:
            return _pacer.paint_window(obj, event, self.prepare_views)
        return False

    def prepare_views(self) -> None:
        for view in list(self.views):
            if isValid(view) and view.isVisible() and view.scene() is not None:
                scene = view.scene()
                scene.prepareForPaint()
                QCoreApplication.sendPostedEvents(scene, _META_CALL)


class PaintPacer(QObject):
    """Splits a window's paint between event-loop passes: once a paint (an update request
    of the window) has taken PAINT_BUDGET_S of CPU time and painted one of the watched
    viewports (plots, tables), the watched viewports still to paint in it are put off to
    the next pass. The first of them is put off too where long work may not start
    (event_passes: this pass has been long already, or the one before was): at most
    MAX_PUT_OFF times in a row for the one before, MOST_PUT_OFF in all. So viewports
    that change on every pass (as under a dragged slider) take turns: one just painted
    waits after its own long pass, and one that has waited MAX_PUT_OFF passes goes. A
    viewport on the screen whose size has changed since its last paint is painted at
    once (a window being resized is painted whole).

    A watched viewport is marked as painting all its pixels (WA_OpaquePaintEvent) and its
    background is filled here, as Qt filled it before: so a viewport put off keeps what it
    showed before, not a blank; one just shown, with nothing of it on the screen yet, shows
    its background. Only paints of the window are paced: a grab or an export paints at
    once. `put_off[viewport]` counts the paints put off, for tests."""

    def __init__(self):
        super().__init__()
        self.started: float | None = None  # thread CPU time when the paint in progress began
        self.painted = 0  # watched viewports painted in it
        self.viewports: weakref.WeakSet = weakref.WeakSet()
        self.fresh: weakref.WeakSet = weakref.WeakSet()  # shown, not painted since
        self.put_off_in_a_row: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.sizes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # at last paint
        self.put_off: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def watch(self, viewport: QWidget) -> None:
        """Pace `viewport`'s paints; it must be one that Qt fills with its background
        (autoFillBackground, as a scroll area's viewport), else it is painted at once."""
        if viewport in self.viewports or not viewport.autoFillBackground():
            return
        viewport.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)
        viewport.installEventFilter(self)
        self.viewports.add(viewport)
        self.fresh.add(viewport)

    def paint_window(self, window, event, prepare: Callable[[], None]) -> bool:
        """`prepare()`, then deliver the window's update request (which paints it), both
        timed for pacing; True: the request was handled here."""
        if self.started is not None:  # a paint within a paint: part of the one timed
            prepare()
            return False
        self.started, self.painted = time.thread_time(), 0
        try:
            prepare()
            window.event(event)
        finally:
            self.started = None
        return True

    def eventFilter(self, viewport, event) -> bool:
        kind = event.type()
        if kind == _SHOW:
            self.fresh.add(viewport)
            self.put_off_in_a_row.pop(viewport, None)  # its waits while hidden are over
            preparer_of(viewport.window())  # whose update requests are paced
        elif kind == _PAINT:
            if self._puts_off(viewport):
                if viewport in self.fresh:
                    _fill_background(viewport, event)
                QTimer.singleShot(0, viewport, partial(viewport.update, QRegion(event.region())))
                self.put_off_in_a_row[viewport] = self.put_off_in_a_row.get(viewport, 0) + 1
                self.put_off[viewport] = self.put_off.get(viewport, 0) + 1
                return True
            if self.started is not None:
                self.painted += 1
            self.fresh.discard(viewport)
            self.put_off_in_a_row.pop(viewport, None)
            self.sizes[viewport] = viewport.size()
            _fill_background(viewport, event)
        return False

    def _puts_off(self, viewport) -> bool:
        """Whether this paint of `viewport` waits for the next pass."""
        if self.started is None:
            return False
        if viewport not in self.fresh and self.sizes.get(viewport) != viewport.size():
            return False  # on the screen and resized: what it shows there no longer fits
        waited = self.put_off_in_a_row.get(viewport, 0)
        if waited >= MOST_PUT_OFF:
            return False
        if self.painted:
            return time.thread_time() - self.started > PAINT_BUDGET_S
        return not event_passes.long_work_may_start(self.started, waited)


def _fill_background(widget: QWidget, event) -> None:
    """What Qt paints before a paint event of a widget that fills its background."""
    painter = QPainter(widget)
    painter.fillRect(event.rect(), widget.palette().brush(widget.backgroundRole()))
    painter.end()


_pacer = PaintPacer()


def preparer_of(window: QWidget) -> PaintPreparer:
    """The window's PaintPreparer, made the first time."""
    preparer = window.findChild(PaintPreparer, "", Qt.FindChildOption.FindDirectChildrenOnly)
    return preparer if preparer is not None else PaintPreparer(window)


def prepare_before_paint(view: pg.GraphicsView) -> None:
    """Prepare `view` before each paint of the window it is shown in, and pace its paints
    (call it when it is shown: a view moved to another window is then prepared there)."""
    preparer_of(view.window()).views.add(view)
    _pacer.watch(view.viewport())


def paints_put_off(viewport: QWidget) -> int:
    """How many paint events of `viewport` were put off to a later pass so far."""
    return _pacer.put_off.get(viewport, 0)


def pace_paints(viewport: QWidget) -> None:
    """Let the window put off `viewport`'s paints to a later event-loop pass when a paint
    of the window runs long (PaintPacer): for the viewports of big tables and plots."""
    _pacer.watch(viewport)
