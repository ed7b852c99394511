"""The window's models: loading model A (the default model at first start, the demo
instead when that is not downloaded), model B and the pair compared, letting go of a
model replaced, and the recent models remembered.

`ModelController` holds no widget. It changes AppState (set_model, set_compare,
set_matching) and tells the window what to show through its signals: a status-bar
message, a banner, the loading state (for the model label), the recent models (for the
menus). A model replaced is handed to `JobRunner.release`, so that its last reference
goes on a pool thread (freeing a GPT-2-small-sized model's tensors and tables is tens of
ms that the GUI thread would otherwise stall for); the controller keeps none."""

from __future__ import annotations

import time
from functools import partial
from html import escape

from PySide6.QtCore import QObject, Signal, Slot

from detokgui.core.base.errors import ModelLoadError
from detokgui.core.compare.pair import Pair, iter_match_heads
from detokgui.core.compare.views import warm_pair
from detokgui.core.model.conventions import default_query_position
from detokgui.core.model.families import family_label, with_family
from detokgui.core.model.loading import default_query, load_layer
from detokgui.core.model.sources.default_model import (
    DEFAULT_MODEL,
    NOT_PROBED,
    OFFLINE,
    Unavailable,
    cached_locally,
    offline_mode,
    probe_hub,
    why_not_cached,
)
from detokgui.core.model.sources.demo import DEMO, DEMO_DESCRIPTION, DEMO_LABELS
from detokgui.core.model.titles import model_title
from detokgui.gui.banner import ERROR, NOTICE, BannerAction
from detokgui.gui.options import remember, remembered

MAX_RECENT = 8
# remembered between sessions
RECENT = "models/recent"
# The family of each recent model that loaded, as a flat list name, family, name, family...
# (a key of its own: settings written before families existed still read as they were).
RECENT_FAMILIES = "models/recent_families"
#: The jobs of a comparison after B has loaded.
PAIR_JOBS = ("pair", "matching")
html = partial(escape, quote=False)  # a text in the banner's rich text


class NotCached(ModelLoadError):
    """The default model is not in the local cache (so it is not opened at start)."""


def load_default(name: str, device: str | None, report):
    """Job body of the first start: the default model when it is in the local cache
    (`load_layer`), else NotCached at once, without asking the hub."""
    if not cached_locally(name):
        raise NotCached(why_not_cached(name, None))
    return load_layer(name, device, report)


def recent_models() -> list[str]:
    """The models opened last (A or B), newest first."""
    return remembered(RECENT, [])


def recent_families() -> dict[str, str]:
    """The family key ("gpt2", "gpt_neo", "opt") of each recent model that loaded since
    families were remembered; older entries have none."""
    flat = remembered(RECENT_FAMILIES, [])
    return dict(zip(flat[0::2], flat[1::2]))


def recent_label(name: str) -> str:
    """A recent model's menu entry: its name, and its family when known
    ("gpt2 (GPT-2 architecture)")."""
    family = recent_families().get(name)
    return with_family(DEMO_LABELS.get(name, name), family_label(family) if family else "")


class ModelController(QObject):
    """Loads model A and model B on the job runner, pairs and matches them, and keeps the
    recent models; its attributes (set in `__init__`) say what is going on."""

    message = Signal(str, int)  # a status-bar line and how long it stays (ms)
    banner = Signal(str, object, str)  # html, [BannerAction], kind (banner.ERROR/NOTICE)
    bannerDismissed = Signal()
    loadingChanged = Signal()  # loading_name, loading_b_name or an error changed
    recentChanged = Signal()
    folderWanted = Signal()  # a banner's "Open folder…": the window asks for one

    def __init__(self, state, jobs, device: str | None = None, parent=None):
        super().__init__(parent)
        self.state, self.jobs, self.device = state, jobs, device
        self.load_error: str | None = None
        #: The names models A and B were opened by (as typed: "gpt2", a folder, "demo"),
        #: None when none is open: what a session saves to open them again.
        self.opened_a: str | None = None
        self.opened_b: str | None = None
        self.loading_name: str | None = None
        #: Why the default model was not opened at start (the demo shown instead), while
        #: the demo it opened is what the window shows or loads.
        self.unavailable: Unavailable | None = None
        self.loading_b_name: str | None = None  # model B being loaded (Compare with…)
        self.compare_error: str | None = None
        self.load_started = 0.0  # perf_counter() when the model was asked for
        self.load_seconds: float | None = None  # wall time from request to ready
        state.compareChanged.connect(self._pair)
        jobs.cancelled.connect(self._cancelled)

    def _say(self, text: str, timeout: int = 8000) -> None:
        self.message.emit(text, timeout)

    def _show(self, html_text: str, actions=(), kind: str = ERROR) -> None:
        self.banner.emit(html_text, list(actions), kind)

    def _folder_action(self, tip: str) -> BannerAction:
        return BannerAction("Open folder…", tip, self.folderWanted.emit)

    # ------------------------------------------------------------------ model A

    def open_default_model(self, name: str = DEFAULT_MODEL) -> None:
        """`detokgui` without --model: the default model when the local cache holds it;
        otherwise (or when it fails to load) the shipped demo model at once, with a
        banner that says it is the demo and why, and offers *Download gpt2* (when the
        hub answers: probed off the GUI thread) and *Open folder…*."""
        self.load_model(name, body=load_default,
                        on_error=lambda exc, _m="", n=name: self._open_demo_instead(n, exc))

    def _open_demo_instead(self, name: str, exc: BaseException) -> None:
        hub = OFFLINE if offline_mode() else None
        reason = (why_not_cached(name, hub) if isinstance(exc, NotCached)
                  else f"{name} could not be loaded: {exc}")
        self.load_model(DEMO)
        self.unavailable = Unavailable(name, reason, hub)
        self._show_unavailable()
        if hub is None:
            self.jobs.submit("hub-probe", lambda: probe_hub(), self._hub_probed,
                             label="Checking whether the Hugging Face hub answers",
                             on_cancel=lambda: self._hub_probed(NOT_PROBED))

    def _hub_probed(self, hub: str) -> None:
        if self.unavailable is not None:  # else another model was asked for meanwhile
            self.unavailable = self.unavailable.probed(hub)
            self._show_unavailable()

    def _show_unavailable(self) -> None:
        """The first start's banner: the demo is shown, not the default model, and why."""
        u = self.unavailable
        if u is None:
            return
        actions = []
        if u.downloadable:
            actions.append(BannerAction(
                f"Download {u.name}", f"Download {u.name} from the Hugging Face "
                "hub and open it (progress in the status bar; Esc cancels)",
                lambda n=u.name: self.load_model(n)))
        actions.append(self._folder_action(
            "Open a local checkpoint folder (GPT-2, GPT-Neo or OPT) that holds config.json "
            "and the weights"))
        doing = "Opening" if self.state.layer is None else "This is"
        self._show(
            f"<b>{doing} the demo model, a small model trained for detokgui — not GPT-2.</b>"
            f"<br>{html(u.reason)} {html(u.what_to_do())}"
            f"<br><small>{html(DEMO_DESCRIPTION)}</small>", actions, kind=NOTICE)

    def load_model(self, name: str, body=None, on_error=None) -> None:
        """Load `name` (a hub name, NAME@REVISION, a folder or a demo name) in the
        "model" job; the model shown stays until the new one is ready. `body(name,
        device, report)` replaces `load_layer`; `on_error(exc, message)` replaces the
        error banner."""
        name = str(name).strip()
        if not name:
            return
        self.unavailable = None
        self.loading_name = name
        self.load_error = None
        self.load_started = time.perf_counter()
        self.bannerDismissed.emit()
        label = DEMO_LABELS.get(name, name)
        self._submit_load("model", name, body, self._loaded, f"Loading {label}…",
                          label=f"Loading {label}", on_error=on_error or self._load_failed,
                          on_cancel=lambda: self._load_cancelled(name))

    def _submit_load(self, key: str, name: str, body, done, saying: str, **submit) -> None:
        """Load `name` in the job `key` with `body(name, device, report)` (default:
        `load_layer`, looked up when the job runs); then `done(name, layer)`."""
        self.loadingChanged.emit()
        self._say(saying)
        device = self.device
        self.jobs.submit(key, lambda report: (body or load_layer)(name, device, report),
                         lambda layer: done(name, layer), **submit)

    def _loaded(self, name: str, layer) -> None:
        self.loading_name = None
        self.load_seconds = time.perf_counter() - self.load_started
        self.remember(name, layer.family)
        self.opened_a = name
        if self.state.layer is None:  # defaults first: one round of computations, not three
            if self.state.query_token < 0:
                self.state.set_query_token(default_query(layer))
            if self.state.model_serial == 0 and self.state.query_position == 0:
                self.state.set_query_position(default_query_position(layer.n_positions))
        replaced = [self.state.layer, self.state.pair]
        self.state.set_model(layer)
        self.jobs.release(replaced)  # freed on a pool thread once nothing shown holds it
        if self.state.query_token < 0:
            self.state.set_query_token(default_query(layer))
        for note in layer.notes:
            self._say(note)
        if name == DEMO:
            self._show_unavailable()  # the demo opened at start: say so again

    def _load_cancelled(self, name: str) -> None:
        """The banner says the load was cancelled and what is shown instead."""
        self.loading_name = None
        self.loadingChanged.emit()
        label = html(DEMO_LABELS.get(name, name))
        again = BannerAction("Try again", f"Load {DEMO_LABELS.get(name, name)} again",
                             lambda: self.load_model(name))
        layer = self.state.layer
        if layer is not None:
            self._show(f"Loading <b>{label}</b> was cancelled; {html(model_title(layer))} "
                       "is still open.", [again], kind=NOTICE)
            return
        self._show(
            f"Loading <b>{label}</b> was cancelled; no model is open.",
            [again,
             BannerAction("Open the demo model", "The small trained model shipped with "
                          "detokgui: no download", lambda: self.load_model(DEMO)),
             self._folder_action("Open a local checkpoint folder")],
            kind=NOTICE)

    def _load_failed(self, exc: BaseException, _message: str = "") -> None:
        self.loading_name = None
        self.load_error = str(exc)
        self.loadingChanged.emit()
        self._say("")
        self._show(
            f"<b>The model could not be loaded.</b><br>{html(str(exc))}<br>"
            "Use the <i>Model</i> menu to open another model, a local folder, or the demo model."
        )

    def remember(self, name: str, family: str | None = None) -> None:
        """`name` first among the recent models, with its family when known."""
        recent = ([name] + [r for r in recent_models() if r != name])[:MAX_RECENT]
        remember(RECENT, recent)
        families = recent_families()
        if family:
            families[name] = family
        remember(RECENT_FAMILIES, [x for r in recent if r in families
                                   for x in (r, families[r])])
        self.recentChanged.emit()

    # ------------------------------------------------------------------ model B

    def compare_with(self, name: str) -> None:
        """Load `name` as model B in the background (as A loads); then pair its tokens
        with A's and match the heads, also in the background."""
        name = str(name).strip()
        if not name:
            return
        self.loading_b_name = name
        self.compare_error = None
        label = DEMO_LABELS.get(name, name)
        self._submit_load("model_b", name, None, self._compare_loaded,
                          f"Loading {label} to compare with…", label=f"Loading {label} (B)",
                          on_error=self._compare_failed)

    def _compare_loaded(self, name: str, layer) -> None:
        self.loading_b_name = None
        self.remember(name, layer.family)
        self.opened_b = name
        replaced = [self.state.layer_b, self.state.pair]
        self.state.set_compare(layer)
        self.jobs.release(replaced)
        for note in layer.notes:
            self._say(f"B: {note}")

    def _compare_failed(self, exc: BaseException, _message: str = "") -> None:
        self.loading_b_name = None
        self.compare_error = str(exc)
        self.loadingChanged.emit()
        self._show(f"<b>The model to compare with could not be loaded.</b><br>"
                   f"{html(str(exc))}")

    def close_comparison(self) -> None:
        for key in ("model_b", *PAIR_JOBS):
            self.jobs.discard(key)
        self.loading_b_name = None
        self.opened_b = None
        replaced = [self.state.layer_b, self.state.pair]
        self.state.set_compare(None)
        self.jobs.release(replaced)
        self.loadingChanged.emit()

    def swap_models(self) -> None:
        if self.state.layer_b is None or self.state.layer is None:
            self._say("Nothing to swap: open a model to compare with first "
                      "(Model > Compare with…).")
            return
        for key in PAIR_JOBS:
            self.jobs.discard(key)
        self.opened_a, self.opened_b = self.opened_b, self.opened_a
        self.state.swap_models()

    @Slot(object)
    def _pair(self, layer_b) -> None:
        """B or A changed: pair the two (and then match their heads) when the pair is not
        made yet."""
        s = self.state
        if layer_b is None or s.layer is None or s.pair is not None:
            return
        self.jobs.discard("matching")
        a, serial = s.layer, (s.model_serial, s.compare_serial)
        self.jobs.submit("pair", lambda: warm_pair(Pair(a, layer_b)),
                         lambda pair, k=serial: self._paired(k, pair),
                         label="Pairing the tokens of A and B",
                         on_error=lambda _exc, message, k=serial: self._not_paired(k, message))

    def _paired(self, serial, pair, pair_set: bool = False) -> None:
        s = self.state
        if serial != (s.model_serial, s.compare_serial):
            return  # made for models no longer shown
        if not pair_set:
            s.set_compare(s.layer_b, pair)
        serial = (s.model_serial, s.compare_serial)
        self.jobs.submit("matching", lambda: iter_match_heads(pair),
                         lambda m, k=serial: self._matched(k, m),
                         label="Matching the heads of A and B")

    def _not_paired(self, serial, message: str) -> None:
        """A and B cannot be compared (their tokens cannot be mapped): B is closed."""
        if serial != (self.state.model_serial, self.state.compare_serial):
            return
        name = self.state.layer_b.name
        self.close_comparison()
        self._show(f"<b>{html(name)} cannot be compared with the model shown.</b><br>"
                   f"{html(message)}")

    def _matched(self, serial, matching) -> None:
        if serial == (self.state.model_serial, self.state.compare_serial):
            self.state.set_matching(matching)

    def match_again(self) -> None:
        """Pair the tokens (if not done) and match the heads again: after a Cancel."""
        s = self.state
        if s.layer_b is None:
            return
        if s.pair is None:
            self._pair(s.layer_b)
        elif s.matching is None:
            self._paired((s.model_serial, s.compare_serial), s.pair, pair_set=True)

    @Slot(str)
    def _cancelled(self, key: str) -> None:
        if key == "model_b":
            self.loading_b_name = None
            self.loadingChanged.emit()
        elif key in PAIR_JOBS:
            self._say("Head matching cancelled: Model > Match heads of A and B computes it "
                      "again.", 10000)
