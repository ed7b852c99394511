"""What every panel has: the shared state, the job runner, its exportable plots, and the
refresh cycle that turns the selection into drawn results.

A panel writes three methods (see docs/panels.md):

    def request(self) -> Request | None      # GUI thread: what to compute, a frozen
                                              # dataclass with state.model_serial in it
    @staticmethod
    def compute(layer, request) -> result     # worker thread: plain or a generator
    def draw(self, result) -> None            # GUI thread: result None = nothing to show

and the base class does the rest (`Channel`): any change of the shared state or of the
panel's options calls `refresh()`; a visible panel then asks `request()` and submits
`compute` when the request differs from what is shown or being computed; a hidden one
only remembers that it is out of date and computes when shown (just after its first
paint). A result is drawn only if its request is still the current one (the single stale
check); a cancelled or failed computation leaves a message, never "computing…", and the
view keeps the last result it drew. A panel with several independent computations adds
channels with `add_channel`. No channel asks its `request()` while no model is loaded:
without one there is nothing to compute, and `draw(None)` is called.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from functools import partial

from PySide6.QtCore import QObject, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

from detokgui.core.model.conventions import COLOUR_SIGN_NOTE, POSITION_CONVENTIONS
from detokgui.core.model.titles import model_text
from detokgui.gui.jobs import JobRunner
from detokgui.gui.state import AppState

BUSY_TEXT = "computing…"
BUSY_SHOW_MS = 150  # how long a computation runs before its panel says BUSY_TEXT


class StatusLine(QLabel):
    """A line under a panel's plots: a summary of what is shown (`setText`, plain text),
    "computing…" while its channels compute, once they have for BUSY_SHOW_MS (then the
    text from before comes back), and
    what happened when one was cancelled or failed, with a link that computes again
    (`retry`)."""

    retry = Signal(str)  # the name of the channel to compute again
    busyChanged = Signal(bool)

    def __init__(self, text: str = " ", parent=None):
        super().__init__(parent)
        self._busy: set[str] = set()
        self._before = " "  # the text before "computing…"
        # Shown after BUSY_SHOW_MS: a slider step's computation (a few ms) would otherwise
        # set the text twice more per step, each time relaying out the panel.
        self._busy_timer = QTimer(self)
        self._busy_timer.setSingleShot(True)
        self._busy_timer.setInterval(BUSY_SHOW_MS)
        self._busy_timer.timeout.connect(self._show_busy)
        # A long message wraps to the width it gets: it never widens the window.
        self.setWordWrap(True)
        self.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.setText(text)
        self.linkActivated.connect(lambda link: self.retry.emit(link.partition(":")[2]))

    def setText(self, text: str) -> None:
        self.setTextFormat(Qt.PlainText)
        super().setText(text or " ")

    @property
    def busy(self) -> bool:
        return bool(self._busy)

    def begin(self, name: str) -> None:
        was = self.busy
        self._busy.add(name)
        if self.textFormat() == Qt.RichText:  # a stopped one's message goes at once
            self._show_busy()
        elif not was:
            self._busy_timer.start()  # "computing…" only if it takes a while
        if not was:
            self.busyChanged.emit(True)

    def _show_busy(self) -> None:
        if self._busy and self.text() != BUSY_TEXT:  # a summary comes back afterwards
            stopped = self.textFormat() == Qt.RichText  # the message of a stopped one does not
            self._before = " " if stopped else self.text()
            self.setText(BUSY_TEXT)

    def end(self, name: str) -> None:
        was = self.busy
        self._busy.discard(name)
        if not self._busy:
            self._busy_timer.stop()
            if self.text() == BUSY_TEXT:
                self.setText(self._before)
        if was and not self.busy:
            self.busyChanged.emit(False)

    def stopped(self, name: str, what: str) -> None:
        was = self.busy
        self._busy.discard(name)
        if not self._busy:
            self._busy_timer.stop()
        self.setTextFormat(Qt.RichText)
        super().setText(f"{html.escape(what)} — <a href='retry:{name}'>compute again</a>")
        if was and not self.busy:
            self.busyChanged.emit(False)


class Channel(QObject):
    """One computation of a panel: request() -> compute(layer, request) on the job
    runner -> draw(result). `shown` is the request of the drawn result, `pending` the one
    being computed, `result` what was drawn."""

    def __init__(self, panel: Panel, name: str, request: Callable, compute: Callable,
                 draw: Callable, status: StatusLine, label: str, coalesce: bool = False):
        super().__init__(panel)
        self.panel = panel
        self.name = name
        self.request = request
        self.compute = compute
        self.draw = draw
        self.status = status
        self.label = label
        self.coalesce = coalesce
        self.shown = None
        self.pending = None
        self.failed = None  # a request that failed: not retried until asked or changed
        self.result = None
        self.blank = False  # drawn with None since the last result or model change
        self.dirty = True
        self.started = 0.0  # perf_counter() at the last submit
        self.seconds = 0.0  # from submit to result, of the drawn result
        status.retry.connect(self.retry)

    @property
    def key(self) -> str:
        return self.panel.job_key(self.name)

    def wanted(self):
        """The current request: None while no model is loaded (nothing to compute, whatever
        `request` would say), else what `request()` returns."""
        return None if self.panel.layer is None else self.request()

    def forget(self) -> None:
        """Drop the result and every request (the model changed; the next update
        computes or draws afresh)."""
        if self.pending is not None:
            self.panel.jobs.discard(self.key)
            self.status.end(self.name)
        self.shown = self.pending = self.failed = self.result = None
        self.blank = False
        self.dirty = True

    @Slot(str)
    def retry(self, name: str | None = None) -> None:
        """Compute again (when `name`, the name of the channel asked for, is this one's)."""
        if name is None or name == self.name:
            self.update(force=True)

    def update(self, force: bool = False) -> None:
        """Compute what the current request needs, if the panel is visible."""
        if not self.panel.isVisible():
            self.dirty = True
            return
        self.dirty = False
        req = self.wanted()
        if req is None:
            if not self.blank:
                self.forget()
                self.blank, self.dirty = True, False
                self.status.end(self.name)
                self.draw(None)
            return
        self.blank = False
        if not force:
            if req == self.shown and self.pending is not None:  # back to what is shown
                self.panel.jobs.discard(self.key)
                self.pending = None
                self.status.end(self.name)
            if req in (self.shown, self.pending, self.failed):
                return
        self.pending, self.failed = req, None
        self.started = time.perf_counter()
        self.status.begin(self.name)
        self.panel.jobs.submit(
            self.key, partial(self.compute, self.panel.job_input(), req),
            partial(self._done, req), label=self.label, coalesce=self.coalesce,
            on_error=partial(self._failed, req), on_cancel=partial(self._cancelled, req))

    def _done(self, req, result) -> None:
        if req == self.pending:
            self.pending = None
            self.status.end(self.name)
        if req != self.wanted():
            self.dirty = True
            return  # made for an older selection
        self.shown, self.result = req, result
        self.seconds = time.perf_counter() - self.started
        self.draw(result)
        self.panel.drawn.emit(self.name)

    def _cancelled(self, req) -> None:
        if req == self.pending:
            self.pending = None
            self.dirty = True
            shown = "; still showing the previous result" if self.result is not None else ""
            self.status.stopped(self.name, f"{self.label} cancelled{shown}")

    def _failed(self, req, _exc, message: str) -> None:
        if req == self.pending:
            self.pending = None
            self.failed = req
            shown = " (still showing the previous result)" if self.result is not None else ""
            self.status.stopped(self.name, message + shown)


class Panel(QWidget):
    """Base for panels. Subclasses set `title` and `view_name` (used by --view and the
    export commands), keep their PlotFrame in `self.frame` (several: return them from
    `plot_frames()`), place `self.status`, and write request / compute / draw (or add
    channels)."""

    title = "Panel"
    view_name = "panel"
    tooltip = ""

    drawn = Signal(str)  # a channel drew a new result (the channel's name)

    def __init__(self, state: AppState, jobs: JobRunner, parent=None):
        super().__init__(parent)
        self.state = state
        self.jobs = jobs
        self.setToolTip(self.tooltip)
        self.status = StatusLine()
        self.channels: dict[str, Channel] = {}
        self._on_show: dict[Callable, None] = {}  # redraws put off while hidden, in order
        if type(self).request is not Panel.request:
            self.add_channel("", self.request, self.compute, self.draw, label=self.title)
        state.modelChanged.connect(self._model_changed)
        self.status.busyChanged.connect(self._busy_changed)
        for signal in (state.headChanged, state.queryTokenChanged, state.keyTokenChanged,
                       state.queryPositionChanged, state.tokenSetChanged, state.sigmaChanged,
                       state.corpusChanged):
            signal.connect(self.refresh)

    # ------------------------------------------------------------------ for subclasses

    def request(self):
        """What to compute now: a frozen dataclass (equal requests give equal results;
        include state.model_serial), or None when there is nothing to compute. Only asked
        while a model is loaded (`self.layer` is not None)."""
        raise NotImplementedError

    @staticmethod
    def compute(layer, request):
        """The job, on a worker thread: no widgets, no state; a generator may yield
        core.base.progress.Progress and return the result."""
        raise NotImplementedError

    def draw(self, result) -> None:
        """Show `result` (None: nothing to show)."""
        raise NotImplementedError

    def model_changed(self, layer) -> None:
        """A new model (or None): adjust ranges and widgets; results are recomputed."""

    def add_channel(self, name: str, request: Callable, compute: Callable, draw: Callable, *,
                    status: StatusLine | None = None, label: str = "",
                    coalesce: bool = False) -> Channel:
        ch = Channel(self, name, request, compute, draw, status or self.status,
                     label or self.title, coalesce)
        self.channels[name] = ch
        return ch

    def plot_frames(self) -> list:
        """The panel's PlotFrames (what its exports and screenshots cover): by default its
        `frame`, where it has one."""
        frame = getattr(self, "frame", None)
        return [] if frame is None else [frame]

    #: Whether the empty view (`draw(None)`) names what the user has to give (a corpus):
    #: it is then drawn again when the computation starts and ends, its text from
    #: `empty_message`, so that it never asks for what is already being used.
    empty_names_input = False

    def empty_message(self, missing: str, computing: str) -> str:
        """What an empty view says: nothing without a model; `missing` while the request
        is None (what to choose); `computing` while the result is being computed (where the
        progress is); after a cancelled or failed computation, where to read why."""
        if self.layer is None or "" not in self.channels:
            return " "
        ch = self.channels[""]
        if ch.wanted() is None:
            return missing
        if ch.pending is not None:
            return computing
        return "Not computed: see the line below the plots."

    def clear_empty_status(self) -> None:
        """An empty view's status line: cleared when there is nothing to compute, but a
        computation's "computing…" or why it stopped stays."""
        if "" in self.channels and self.channels[""].wanted() is None:
            self.status.setText(" ")

    @Slot(bool)
    def _busy_changed(self, _busy: bool) -> None:
        if self.empty_names_input and "" in self.channels and self.result is None:
            self.draw(None)

    #: Whether the plots colour signed values (T_ee, the six terms): the footer then says
    #: which colour is which sign.
    signed_colours = False

    def export_footer(self) -> list[str]:
        """The footer of this panel's exported PNG and SVG files, as every exported figure
        has one (`figures.style.new_figure`): detokgui and its version, the model
        (`core.model.titles.model_text`: name, commit, family, shapes, temperature), the view
        and the conventions of the drawn result (`result_conventions`)."""
        from detokgui import __version__

        parts = [f"detokgui {__version__}"]
        if self.layer is not None:
            parts.append(model_text(self.layer))
        parts.append(f"view: {self.title}")
        parts += self.result_conventions()
        if self.signed_colours:
            parts.append(COLOUR_SIGN_NOTE)
        return parts

    def result_conventions(self) -> list[str]:
        """The conventions the drawn result was computed with, read from it: its token
        sigma (`SigmaChoice`) and its position convention; panels with others add them."""
        res = self.result if "" in self.channels else None
        parts = []
        sigma = getattr(res, "sigma", None)
        if hasattr(sigma, "label"):
            parts.append(sigma.label())
        convention = getattr(res, "convention", None)
        if convention in POSITION_CONVENTIONS:
            parts.append(f"position σ: {convention} convention")
        return parts

    def job_input(self):
        """What `compute` is given besides the request: the model (A); a comparison
        panel gives the pair of models."""
        return self.state.layer

    # ------------------------------------------------------------------ the cycle

    def channel(self, name: str = "") -> Channel:
        return self.channels[name]

    @property
    def result(self):
        """The main channel's drawn result."""
        return self.channels[""].result

    @property
    def shown_request(self):
        """The request of the main channel's drawn result."""
        return self.channels[""].shown

    def settled(self) -> bool:
        """Nothing is being computed and every channel shows its current request."""
        return all(ch.pending is None and not ch.dirty and
                   (ch.shown == ch.wanted() or ch.failed is not None)
                   for ch in self.channels.values())

    @Slot()
    def refresh(self, *_) -> None:
        """Bring every channel up to date (when visible; else when shown)."""
        for ch in self.channels.values():
            ch.update()

    def redraw(self, *_) -> None:
        """Draw the main channel's result again (a change that needs no computation);
        a hidden panel does it when shown."""
        self.when_visible(self._redraw_now)()

    def _redraw_now(self) -> None:
        self.draw(self.result)

    def when_visible(self, fn: Callable[[], None]) -> Callable:
        """A slot that calls fn() now if the panel is visible, else once when it is shown
        (for updates of what is drawn that need no computation)."""
        def slot(*_):
            if self.isVisible():
                fn()
            else:
                self._on_show[fn] = None
        return slot

    @Slot(object)
    def _model_changed(self, layer) -> None:
        for ch in self.channels.values():
            ch.forget()
        self.model_changed(layer)
        self.refresh()

    def showEvent(self, event):
        super().showEvent(event)
        self._catch_up()
        # Computing starts once the page is painted: a worker that starts now holds the
        # GIL and a core in the middle of the page's first paint.
        QTimer.singleShot(0, self, self.refresh)

    def _catch_up(self) -> None:
        """Do the redraws put off while hidden, now that it is shown (before its first
        paint: the page never shows what it drew before the change)."""
        pending, self._on_show = self._on_show, {}
        for fn in pending:
            fn()

    @property
    def layer(self):
        return self.state.layer

    @property
    def serial(self) -> int:
        return self.state.model_serial

    def job_key(self, what: str = "") -> str:
        return f"{self.view_name}:{what}" if what else self.view_name
