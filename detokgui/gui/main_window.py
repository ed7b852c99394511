"""The main window: panels in tabs around one shared AppState, model loading on a
background thread, menus, status-bar progress with a cancel button."""

from __future__ import annotations

import threading
import time

from PySide6.QtCore import Qt, QTimer, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QSpinBox,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from detokgui.core.base.errors import ModelLoadError
from detokgui.core.model.conventions import default_query_position, temperature_label
from detokgui.core.model.families import family_label
from detokgui.core.model.sources.default_model import (
    DEFAULT_MODEL,
    NOT_PROBED,
    OFFLINE,
    REACHABLE,
    Unavailable,
    cached_locally,
    offline_mode,
    probe_hub,
    why_not_cached,
)
from detokgui.core.model.sources.demo import DEMO, DEMO_DESCRIPTION
from detokgui.gui.banner import NOTICE, Banner, BannerAction, carry_sentence
from detokgui.gui.elided_label import ElidedLabel, StatusBar
from detokgui.gui.jobs import JobRunner
from detokgui.gui.notices import LogNotices
from detokgui.gui.options import flush_settings, remember, remembered
from detokgui.gui.page_tabs import PageTabs
from detokgui.gui.plots import EXPORT_SHORTCUTS
from detokgui.gui.progress_bar import ProgressBar
from detokgui.gui.state import AppState

DEMO_LABELS = {
    "demo": "Demo model (trained, not GPT-2)",
    "random-demo": "Random demo model (random weights)",
}
MAX_RECENT = 8
#: An example for the hub dialog: a GPT-2 training checkpoint published as a branch.
HUB_EXAMPLE = "stanford-crfm/alias-gpt2-small-x21@checkpoint-300000"
DEFAULT_SIZE = (1400, 900)  # or the screen's available area, if smaller
NOTICE_MS = 15000  # how long a line the core logged stays in the status bar
# The progress bar and Cancel appear once jobs have run this long: a slider step's or a
# token change's jobs (a few ms) would show and hide them, relaying out the status bar,
# several times a second.
BUSY_SHOW_MS = 250
# remembered between sessions
VIEW, GEOMETRY = "window/view", "window/geometry"
RECENT, LAST_HUB, LAST_FOLDER = "models/recent", "models/last_hub", "models/last_folder"
# The family of each recent model that loaded, as a flat list name, family, name, family...
# (a key of its own: settings written before families existed still read as they were).
RECENT_FAMILIES = "models/recent_families"


#: One model loads at a time (A and B asked for together): transformers' lazy imports are
#: not safe from two threads at once, and two loads at once would double the peak memory.
_LOADING = threading.Lock()


def load_layer(name: str, device: str | None, report):
    """Job body: load a model (a demo model, a folder or a hub name), its sigma table and
    its tokenizer's pieces."""
    from detokgui.core import Layer0
    from detokgui.core.model.tokens import prepare as prepare_tokens

    report(0.0, "")  # cancelled while waiting: stop here
    with _LOADING:
        layer = Layer0.from_pretrained(name, device=device,
                                       progress=lambda f, m: report(0.7 * f, m))
        layer.sigma_stats(progress=lambda f, m: report(0.7 + 0.3 * f, m))
        prepare_tokens(layer.tokenizer)  # not on the GUI thread when the first token shows
    return layer


class NotCached(ModelLoadError):
    """The default model is not in the local cache (so it is not opened at start)."""


def load_default(name: str, device: str | None, report):
    """Job body of the first start: the default model when it is in the local cache
    (`load_layer`), else NotCached at once, without asking the hub."""
    if not cached_locally(name):
        raise NotCached(why_not_cached(name, None))
    return load_layer(name, device, report)


def hub_request(text: str) -> tuple[str, str | None]:
    """(model name to load, problem or None) for what was typed into *Open hub model…*:
    NAME or NAME@REVISION (a branch, tag or commit; `core.model.sources.hub.split_revision`), spaces
    around the parts dropped."""
    from detokgui.core.model.sources.hub import split_revision

    text = " ".join(str(text).split())
    name, revision = split_revision(text)
    if not name or name.startswith("@") or revision == "":
        return text, (f"Write the model's name, and after an @ the revision if you want one "
                      f"other than main: e.g. gpt2 or {HUB_EXAMPLE}.")
    if " " in name or " " in (revision or ""):
        return text, "A hub model's name and revision have no spaces."
    return f"{name}@{revision}" if revision else name, None


def short_commit(layer) -> str | None:
    """The commit a hub model resolved to, as people quote it
    (`core.model.sources.hub.short`), or None (a folder, a demo model, or a loader that does not say)."""
    from detokgui.core.model.sources.hub import short

    return short(getattr(layer, "revision", None)) or None


def make_pair(a, b):
    """Job body: the core.compare.pair.Pair of A and B, their tokens mapped both ways."""
    from detokgui.core.compare.pair import Pair
    from detokgui.core.compare.views import warm_pair

    return warm_pair(Pair(a, b))


def match_heads(pair):
    """Job body (a generator): the head matching of a pair."""
    from detokgui.core.compare.pair import iter_match_heads

    return (yield from iter_match_heads(pair))


def short_name(name: str, most: int = 40) -> str:
    """A model's name for a crowded line: a folder's last part; at most `most` characters."""
    from pathlib import Path

    if Path(name).is_dir():  # not a hub name such as EleutherAI/gpt-neo-125m
        name = Path(name).name or name
    return name if len(name) <= most else name[: most - 1] + "…"


def with_family(name: str, family: str) -> str:
    """"gpt2 (GPT-2 architecture)": a model's name and its family's architecture, unless
    the name already says it (the demo models' names do) or the family is not known ("").
    "architecture", not the family alone: "random demo model (GPT-2)" read as GPT-2."""
    return f"{name} ({family} architecture)" if family and family not in name else name


def default_query(layer) -> int:
    """' Korea' (the paper's running example) when the tokenizer has it, else token 0."""
    from detokgui.core.model.tokens import encode_text

    tok = layer.tokenizer
    if tok is not None:
        ids = encode_text(tok, " Korea")
        if len(ids) == 1 and ids[0] < layer.n_vocab:
            return ids[0]
    return 0


class MainWindow(QMainWindow):
    def __init__(self, model: str | None = None, device: str | None = None):
        super().__init__()
        from detokgui.gui.panels import PANEL_GROUPS, SIDE_PANEL_CLASSES

        self.setWindowTitle("detokgui")
        self.resize(*default_size(self))
        self.device = device
        self.state = AppState(self)
        self.jobs = JobRunner(self)
        self.load_error: str | None = None
        self.loading_name: str | None = None
        #: Why the default model was not opened at start (the demo shown instead), while
        #: the demo it opened is what the window shows or loads.
        self.unavailable: Unavailable | None = None
        self.loading_b_name: str | None = None  # model B being loaded (Compare with…)
        self.compare_error: str | None = None
        self.load_started = 0.0  # perf_counter() when the model was asked for
        self.load_seconds: float | None = None  # wall time from request to ready
        self.help_dialog = None
        self._progress_message = ""
        self._notice = ""  # the last line the core logged while jobs ran

        central = QWidget()
        lay = QVBoxLayout(central)
        lay.setContentsMargins(4, 4, 4, 4)
        self.banner = Banner()
        lay.addWidget(self.banner)
        self.tabs = PageTabs()  # one tab per group of panels, each a QTabWidget of panels
        self.tabs.setDocumentMode(True)
        lay.addWidget(self.tabs)
        self.setCentralWidget(central)

        self.panels = []
        for cls in SIDE_PANEL_CLASSES:
            panel = cls(self.state, self.jobs)
            dock = QDockWidget(panel.title, self)
            dock.setObjectName(f"dock_{panel.view_name}")
            dock.setWidget(panel)
            dock.setFeatures(QDockWidget.DockWidgetMovable | QDockWidget.DockWidgetFloatable)
            self.addDockWidget(Qt.LeftDockWidgetArea, dock)
            self.panels.append(panel)
        for group, classes in PANEL_GROUPS:
            inner = PageTabs()
            inner.setDocumentMode(True)
            self.tabs.addTab(inner, group)
            for cls in classes:
                panel = cls(self.state, self.jobs)
                idx = inner.addTab(panel, panel.title)
                inner.setTabToolTip(idx, panel.tooltip)
                inner.currentChanged.connect(self._remember_view)
                self.panels.append(panel)
        self.tabs.currentChanged.connect(self._remember_view)

        self._build_toolbar()
        self._build_status_bar()
        self._build_menus()
        self.jobs.progress.connect(self._on_progress)
        self.jobs.submitted.connect(self.progress.start)
        self.jobs.failed.connect(self._on_job_failed)
        self.jobs.busyChanged.connect(self._on_busy)
        self.jobs.cancelled.connect(self._on_cancelled)
        self.notices = LogNotices(self)
        self.notices.line.connect(self._on_notice)
        self.state.modelChanged.connect(self._on_model)
        self.state.compareChanged.connect(self._on_compare)
        self.state.matchingChanged.connect(self._show_model_label)
        self.state.matchingChanged.connect(self._compare_actions)
        self.state.headBChanged.connect(self._show_selection)
        self.state.compareRequested.connect(self.ask_compare)
        self.state.modelRequested.connect(self.load_model)  # e.g. a training-series point
        self.state.headChanged.connect(self.head_spin.setValue)
        self.state.queryTokenChanged.connect(self._show_selection)
        self.state.keyTokenChanged.connect(self._show_selection)
        self.show_view(remembered(VIEW, "topk"))
        self.corpus.restore()
        geometry = remembered(GEOMETRY, None)
        if geometry is not None:
            self.restoreGeometry(geometry)
        if model:
            self.load_model(model)

    # ------------------------------------------------------------------ chrome

    def _build_toolbar(self) -> None:
        tb = self.addToolBar("Selection")
        tb.setObjectName("selection_toolbar")
        tb.setMovable(False)
        tb.addWidget(QLabel(" Head "))
        self.head_spin = QSpinBox()
        self.head_spin.setRange(0, 0)
        self.head_spin.setToolTip("Attention head shared by all panels (0-based). Keys: [ and ]")
        self.head_spin.valueChanged.connect(self.state.set_head)
        tb.addWidget(self.head_spin)
        tb.addSeparator()
        self.selection_label = ElidedLabel(max_hint=700)
        self.selection_label.setToolTip("The shared selection: click tokens in any panel")
        tb.addWidget(self.selection_label)
        self._show_selection()

    def _build_status_bar(self) -> None:
        sb = StatusBar()
        self.setStatusBar(sb)
        self.model_label = ElidedLabel("no model", max_hint=420)
        self.model_label.setObjectName("model_label")
        sb.addPermanentWidget(self.model_label)
        # the model's facts beside its name, never elided: a long name gives way first
        self.model_facts = QLabel("")
        self.model_facts.setObjectName("model_facts")
        self.model_facts.setToolTip(
            "The model's device, vocabulary size V, positions L, heads, width d, softmax "
            "temperature τ, and the time it took to load and fold layer 0")
        sb.addPermanentWidget(self.model_facts)
        self.progress = ProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.hide()
        sb.addPermanentWidget(self.progress)
        self.cancel_button = QToolButton()
        self.cancel_button.setText("Cancel")
        self.cancel_button.setToolTip("Cancel running computations (Esc)")
        self.cancel_button.clicked.connect(self.cancel_jobs)
        self.cancel_button.hide()
        sb.addPermanentWidget(self.cancel_button)
        self._busy_shown = QTimer(self)
        self._busy_shown.setSingleShot(True)
        self._busy_shown.setInterval(BUSY_SHOW_MS)
        self._busy_shown.timeout.connect(self._show_busy)

    def _build_menus(self) -> None:
        mb = self.menuBar()
        model_menu = mb.addMenu("&Model")
        self._action(model_menu, "Open hub model…", self.ask_hub_model, QKeySequence("Ctrl+L"),
                     "Load a Hugging Face model by name (gpt2, distilgpt2, EleutherAI/gpt-neo-125m, "
                     "facebook/opt-125m, …); NAME@REVISION opens a branch, tag or commit, "
                     "e.g. a training checkpoint")
        self._action(model_menu, "Open model folder…", self.ask_model_folder,
                     QKeySequence.Open, "Load a local checkpoint folder (GPT-2, GPT-Neo or OPT)")
        self._action(model_menu, DEMO_LABELS["demo"], lambda: self.load_model("demo"),
                     QKeySequence("Ctrl+D"),
                     "A small GPT-2-architecture model trained on public-domain English, "
                     "shipped with detokgui: try the interface without any download")
        self._action(model_menu, DEMO_LABELS["random-demo"],
                     lambda: self.load_model("random-demo"), QKeySequence("Ctrl+Shift+D"),
                     "Random weights with the real GPT-2 tokenizer: compare learned structure "
                     "against noise")
        self.recent_menu = model_menu.addMenu("Recent models")
        model_menu.addSeparator()
        self.compare_menu = model_menu.addMenu("Compare with…")
        self.compare_menu.setToolTip("Open a second model, B, to compare with the one shown")
        self._action(self.compare_menu, "Hub model…", self.ask_compare_hub, None,
                     "Compare with a Hugging Face model by name")
        self._action(self.compare_menu, "Model folder…", self.ask_compare_folder, None,
                     "Compare with a local checkpoint folder")
        for demo_name, text in DEMO_LABELS.items():
            self._action(self.compare_menu, text,
                         lambda _=False, n=demo_name: self.compare_with(n))
        self.compare_recent_menu = self.compare_menu.addMenu("Recent models")
        self.swap_action = self._action(model_menu, "Swap A and B", self.swap_models,
                                        QKeySequence("Ctrl+Shift+W"),
                                        "Make the compared model (B) the model shown (A)")
        self.rematch_action = self._action(model_menu, "Match heads of A and B",
                                           self.match_again, None,
                                           "Compute the head matching again (after a Cancel)")
        self.close_compare_action = self._action(model_menu, "Close comparison",
                                                 self.close_comparison, None,
                                                 "Close model B and free its memory")
        self._fill_recent()
        self._compare_actions()
        model_menu.addSeparator()
        self._action(model_menu, "Quit", self.close, QKeySequence.Quit)

        file_menu = mb.addMenu("&File")
        self._action(file_menu, "Open text file…", lambda: self.open_text_file(),
                     QKeySequence("Ctrl+T"),
                     "Read a text file as the Tokens view's text (any size: a long one is "
                     "shown as a read-only preview and tokenised whole)")
        file_menu.addSeparator()
        for fmt, key in EXPORT_SHORTCUTS.items():
            self._action(file_menu, f"Export current view as {fmt.upper()}…",
                         lambda _=False, f=fmt: self.export_current(f), QKeySequence(key))
        file_menu.addSeparator()
        from detokgui.gui.export_figures import FigureExporter

        self.figure_exporter = FigureExporter(self)
        self.export_figures_action = self._action(
            file_menu, "Export all figures…", self.figure_exporter.ask, QKeySequence("Ctrl+Shift+F"),
            "Every paper and study figure as PNG/SVG/PDF with CSV data and an index.md, "
            "like `detokgui export figures`")

        from detokgui.gui.corpus import CorpusControl

        self.corpus = CorpusControl(self, mb.addMenu("&Corpus"))
        self.statusBar().insertPermanentWidget(1, self.corpus.label)

        view_menu = mb.addMenu("&View")
        tabbed = [p for p in self.panels if self._inner_tabs(p) is not None]
        for i, panel in enumerate(tabbed):
            self._action(view_menu, panel.title,
                         lambda _=False, v=panel.view_name: self.show_view(v),
                         QKeySequence(f"Ctrl+{i + 1}") if i < 9 else None, panel.tooltip)
        view_menu.addSeparator()
        self._action(view_menu, "Previous head", lambda: self.state.set_head(self.state.head - 1),
                     QKeySequence("["))
        self._action(view_menu, "Next head", lambda: self.state.set_head(self.state.head + 1),
                     QKeySequence("]"))
        self._action(view_menu, "Cancel computations", self.cancel_jobs, QKeySequence("Esc"))

        help_menu = mb.addMenu("&Help")
        self._action(help_menu, "Views and shortcuts", lambda: self.show_help("views"),
                     QKeySequence.HelpContents,
                     "Every view with what it shows and its shortcut, and every shortcut")
        self._action(help_menu, "Conventions", lambda: self.show_help("conventions"), None,
                     "The σ conventions, the softmax temperature, the colour sign and the "
                     "default query position in brief, with the pages that explain them")
        help_menu.addSeparator()
        self._action(help_menu, "About detokgui", self.about)

    def _action(self, menu, text, slot, shortcut=None, tip=""):
        act = QAction(text, self)
        if shortcut is not None:
            act.setShortcut(shortcut)
        if tip:
            act.setStatusTip(tip)
            act.setToolTip(tip)
        act.triggered.connect(slot)
        menu.addAction(act)
        return act

    def _fill_recent(self) -> None:
        recent = self.recent_models()
        for menu, open_model in ((self.recent_menu, self.load_model),
                                 (self.compare_recent_menu, self.compare_with)):
            menu.clear()
            for name in recent:
                self._action(menu, self.recent_label(name),
                             lambda _=False, n=name, f=open_model: f(n))
            menu.setEnabled(bool(recent))

    def recent_models(self) -> list[str]:
        return remembered(RECENT, [])

    def recent_families(self) -> dict[str, str]:
        """The family key ("gpt2", "gpt_neo", "opt") of each recent model that loaded since
        families were remembered; older entries have none."""
        flat = remembered(RECENT_FAMILIES, [])
        return dict(zip(flat[0::2], flat[1::2]))

    def recent_label(self, name: str) -> str:
        """A recent model's menu entry: its name, and its family when known
        ("gpt2 (GPT-2)")."""
        family = self.recent_families().get(name)
        return with_family(DEMO_LABELS.get(name, name), family_label(family) if family else "")

    def _remember(self, name: str, family: str | None = None) -> None:
        recent = ([name] + [r for r in self.recent_models() if r != name])[:MAX_RECENT]
        remember(RECENT, recent)
        families = self.recent_families()
        if family:
            families[name] = family
        remember(RECENT_FAMILIES, [x for r in recent if r in families
                                   for x in (r, families[r])])
        self._fill_recent()

    # ------------------------------------------------------------------ model

    def open_default_model(self, name: str = DEFAULT_MODEL) -> None:
        """`detokgui` without --model: the default model when the local cache holds it;
        otherwise (or when it fails to load) the shipped demo model at once, with a
        banner that says it is the demo and why, and offers *Download gpt2* (when the
        hub answers: probed off the GUI thread) and *Open folder…*."""
        self.load_model(name, body=load_default,
                        on_error=lambda exc, _m="", n=name: self._open_demo_instead(n, exc))

    def _open_demo_instead(self, name: str, exc: BaseException) -> None:
        self.loading_name = None
        hub = OFFLINE if offline_mode() else None
        reason = (why_not_cached(name, hub) if isinstance(exc, NotCached)
                  else f"{name} could not be loaded: {exc}")
        self.load_model(DEMO)
        self.unavailable = Unavailable(name, reason, hub)
        self._show_unavailable()
        if hub is None:
            self.jobs.submit("hub-probe", probe_hub, self._hub_probed,
                             label="Checking whether the Hugging Face hub answers",
                             on_cancel=lambda: self._hub_probed(NOT_PROBED))

    def _hub_probed(self, hub: str) -> None:
        u = self.unavailable
        if u is None:
            return  # another model was asked for meanwhile
        reason = why_not_cached(u.name, hub) if u.reason == why_not_cached(u.name, None) \
            else u.reason
        self.unavailable = Unavailable(u.name, reason, hub)
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
        actions.append(BannerAction(
            "Open folder…", "Open a local checkpoint folder (GPT-2, GPT-Neo or OPT) that "
            "holds config.json and the weights", self.ask_model_folder))
        todo = {None: "(Checking whether the hub answers…)",
                OFFLINE: "Unset HF_HUB_OFFLINE to download it, or open a local checkpoint "
                         "folder.",
                REACHABLE: "Download it with the button below, or open a local checkpoint "
                           "folder.",
                }.get(u.hub, "Connect to the internet to download it, or open a local "
                             "checkpoint folder.")
        if u.hub not in (None, REACHABLE):
            todo += " " + carry_sentence(u.name)
        doing = "Opening" if self.state.layer is None else "This is"
        self.banner.show_text(
            f"<b>{doing} the demo model, a small model trained for detokgui — not GPT-2.</b>"
            f"<br>{_html(u.reason)} {_html(todo)}<br><small>{_html(DEMO_DESCRIPTION)}</small>",
            actions, kind=NOTICE)

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
        self.banner.dismiss()
        label = DEMO_LABELS.get(name, name)
        self._show_model_label()
        self.show_message(f"Loading {label}…")
        device = self.device
        body = body or (lambda n, d, report: load_layer(n, d, report))
        self.jobs.submit(
            "model",
            lambda report: body(name, device, report),
            lambda layer, n=name: self._loaded(n, layer),
            label=f"Loading {label}",
            on_error=on_error or self._load_failed,
            on_cancel=lambda n=name: self._load_cancelled(n),
        )

    def _loaded(self, name: str, layer) -> None:
        self.loading_name = None
        self.load_seconds = time.perf_counter() - self.load_started
        self._remember(name, layer.family)
        if self.state.layer is None:  # defaults first: one round of computations, not three
            if self.state.query_token < 0:
                self.state.set_query_token(default_query(layer))
            if self.state.model_serial == 0 and self.state.query_position == 0:
                self.state.set_query_position(default_query_position(layer.n_positions))
        self.state.set_model(layer)  # the previous model is freed once nothing holds it
        if self.state.query_token < 0:
            self.state.set_query_token(default_query(layer))
        for note in layer.notes:
            self.show_message(note)
        if name == DEMO:
            self._show_unavailable()  # the demo opened at start: say so again

    def _load_cancelled(self, name: str) -> None:
        """The banner says the load was cancelled and what is shown instead."""
        self.loading_name = None
        self._show_model_label()
        label = _html(DEMO_LABELS.get(name, name))
        again = BannerAction("Try again", f"Load {DEMO_LABELS.get(name, name)} again",
                             lambda: self.load_model(name))
        layer = self.state.layer
        if layer is not None:
            self.banner.show_text(
                f"Loading <b>{label}</b> was cancelled; {_html(self.model_title(layer))} "
                "is still open.", [again], kind=NOTICE)
            return
        self.banner.show_text(
            f"Loading <b>{label}</b> was cancelled; no model is open.",
            [again,
             BannerAction("Open the demo model", "The small trained model shipped with "
                          "detokgui: no download", lambda: self.load_model(DEMO)),
             BannerAction("Open folder…", "Open a local checkpoint folder",
                          self.ask_model_folder)],
            kind=NOTICE)

    def _load_failed(self, exc: BaseException, _message: str = "") -> None:
        self.loading_name = None
        self.load_error = str(exc)
        self._show_model_label()
        self.show_message("")
        self.banner.show_text(
            f"<b>The model could not be loaded.</b><br>{_html(str(exc))}<br>"
            "Use the <i>Model</i> menu to open another model, a local folder, or the demo model."
        )

    def model_facts_text(self, layer) -> str:
        """"CPU · V=50,257 · L=1,024 · 12 heads · d=768 · τ = √d′ = 8 · loaded in 2.1 s":
        what the status bar keeps in view whatever the window's width."""
        took = f" · loaded in {self.load_seconds:.1f} s" if self.load_seconds else ""
        return (f"{layer.device.type.upper()} · V={layer.n_vocab:,} · L={layer.n_positions:,} · "
                f"{layer.n_heads} heads · d={layer.d} · {temperature_label(layer, short=True)}"
                f"{took}")

    def _show_model_label(self, *_) -> None:
        """The model shown (or "no model") with its architecture, and its facts
        (`model_facts_text`) beside it; the one being loaded, if any."""
        layer = self.state.layer
        if layer is None:
            text = "no model"
        else:
            text = with_family(self.model_title(layer), layer.family_label)
        self.model_facts.setText(self.model_facts_text(layer) if layer is not None else "")
        self.model_facts.setVisible(layer is not None)
        revision = getattr(layer, "revision", None) if layer is not None else None
        note = f"Resolved commit {revision}" if revision else ""
        if layer is not None:
            note = "\n".join(t for t in (f"{layer.name}: {layer.summary}, "
                                         f"d′={layer.d_head}", note) if t)
        if self.loading_name is not None:
            # short: the download's progress message beside it needs the room
            text = f"loading {DEMO_LABELS.get(self.loading_name, self.loading_name)}…"
            if layer is not None:
                note = f"Showing {self.model_title(layer)} until the new model is ready"
        b = self.state.layer_b
        if b is not None and layer is not None:
            # both names first, short: the details of each are in the tooltip
            matching = "" if self.state.matching else " (matching heads…)"
            note = "\n".join(part for part in (
                f"A: {text}", f"B: {b.name} | {b.summary} | V={b.n_vocab:,} L={b.n_positions}",
                note) if part)
            text = (f"A: {short_name(self.model_title(layer))} ({layer.n_heads} heads)  ‖  "
                    f"B: {short_name(self.model_title(b))} ({b.n_heads} heads){matching}")
        elif self.loading_b_name is not None:
            loading_b = DEMO_LABELS.get(self.loading_b_name, self.loading_b_name)
            text += f"  ‖  B: loading {short_name(loading_b)}…"
        self.model_label.setText(text)
        self.model_label.set_note(note)

    @staticmethod
    def model_title(layer) -> str:
        """The model's name as typed (gpt2@step1000) and the commit it resolved to
        (`short_commit`), when it came from the hub."""
        commit = short_commit(layer)
        return f"{layer.name} (commit {commit})" if commit else layer.name

    @Slot(object)
    def _on_model(self, layer) -> None:
        self._show_selection()  # token names come from the model's tokenizer
        self._show_model_label()
        if layer is None:
            return
        self.head_spin.setRange(0, layer.n_heads - 1)
        self.head_spin.setValue(self.state.head)
        self.banner.dismiss()
        title = with_family(layer.name, layer.family_label)
        commit = short_commit(layer)
        self.setWindowTitle(f"detokgui — {title}" + (f" · commit {commit}" if commit else ""))
        self.show_message(f"Loaded {layer.name}", 5000)

    def ask_hub_model(self) -> None:
        """Ask for NAME or NAME@REVISION (branch, tag or commit) and load it; the name
        asked for last (with its revision) is offered next time."""
        text = remembered(LAST_HUB, DEFAULT_MODEL)
        while True:
            text, ok = QInputDialog.getText(
                self, "Open hub model",
                "Hugging Face model: NAME, or NAME@REVISION for a branch, tag or commit "
                "(default: main).\nNames: gpt2, gpt2-medium, gpt2-large, gpt2-xl, distilgpt2, "
                "EleutherAI/gpt-neo-125m, facebook/opt-125m, …\nA training checkpoint "
                f"published as a branch, e.g.: {HUB_EXAMPLE}",
                text=text,
            )
            if not ok or not text.strip():
                return
            name, problem = hub_request(text)
            if problem is None:
                break
            QMessageBox.warning(self, "Open hub model", problem)
        remember(LAST_HUB, name)
        self.load_model(name)

    def ask_model_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self, "Open checkpoint folder (GPT-2, GPT-Neo or OPT)", remembered(LAST_FOLDER, "")
        )
        if folder:
            remember(LAST_FOLDER, folder)
            self.load_model(folder)

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
        self._show_model_label()
        self.show_message(f"Loading {label} to compare with…")
        device = self.device
        self.jobs.submit(
            "model_b",
            lambda report: load_layer(name, device, report),
            lambda layer, n=name: self._compare_loaded(n, layer),
            label=f"Loading {label} (B)",
            on_error=self._compare_failed,
        )

    def _compare_loaded(self, name: str, layer) -> None:
        self.loading_b_name = None
        self._remember(name, layer.family)
        self.state.set_compare(layer)
        for note in layer.notes:
            self.show_message(f"B: {note}")

    def _compare_failed(self, exc: BaseException, _message: str = "") -> None:
        self.loading_b_name = None
        self.compare_error = str(exc)
        self._show_model_label()
        self.banner.show_text(f"<b>The model to compare with could not be loaded.</b><br>"
                              f"{_html(str(exc))}")

    def close_comparison(self) -> None:
        self.jobs.discard("model_b")
        self.jobs.discard("pair")
        self.jobs.discard("matching")
        self.loading_b_name = None
        self.state.set_compare(None)
        self._show_model_label()

    def swap_models(self) -> None:
        if self.state.layer_b is None or self.state.layer is None:
            self.show_message("Nothing to swap: open a model to compare with first "
                              "(Model > Compare with…).")
            return
        self.jobs.discard("pair")
        self.jobs.discard("matching")
        self.state.swap_models()

    @Slot(object)
    def _on_compare(self, layer_b) -> None:
        """B or A changed: pair the two (and then match their heads) when the pair is not
        made yet."""
        self._compare_actions()
        self._show_model_label()
        self._show_selection()
        s = self.state
        if layer_b is None or s.layer is None or s.pair is not None:
            return
        self.jobs.discard("matching")
        a, serial = s.layer, (s.model_serial, s.compare_serial)
        self.jobs.submit("pair", lambda: make_pair(a, layer_b),
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
        self.jobs.submit("matching", lambda: match_heads(pair),
                         lambda m, k=serial: self._matched(k, m),
                         label="Matching the heads of A and B")

    def _not_paired(self, serial, message: str) -> None:
        """A and B cannot be compared (their tokens cannot be mapped): B is closed."""
        if serial != (self.state.model_serial, self.state.compare_serial):
            return
        name = self.state.layer_b.name
        self.close_comparison()
        self.banner.show_text(f"<b>{_html(name)} cannot be compared with the model shown."
                              f"</b><br>{_html(message)}")

    def _matched(self, serial, matching) -> None:
        if serial == (self.state.model_serial, self.state.compare_serial):
            self.state.set_matching(matching)

    def _compare_actions(self, *_) -> None:
        have = self.state.layer_b is not None
        self.swap_action.setEnabled(have)
        self.close_compare_action.setEnabled(have)
        self.rematch_action.setEnabled(have and self.state.matching is None)

    def match_again(self) -> None:
        """Pair the tokens (if not done) and match the heads again: after a Cancel."""
        s = self.state
        if s.layer_b is None:
            return
        if s.pair is None:
            self._on_compare(s.layer_b)
        elif s.matching is None:
            self._paired((s.model_serial, s.compare_serial), s.pair, pair_set=True)

    def ask_compare(self) -> None:
        """The Compare with… menu at the mouse (a panel's button asks for it)."""
        from PySide6.QtGui import QCursor

        self.compare_menu.popup(QCursor.pos())

    def ask_compare_hub(self) -> None:
        name, ok = QInputDialog.getText(
            self, "Compare with a hub model", "Hugging Face model name to compare with:",
            text=remembered(LAST_HUB, "gpt2"))
        if ok and name.strip():
            remember(LAST_HUB, name.strip())
            self.compare_with(name)

    def ask_compare_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self, "Compare with a checkpoint folder", remembered(LAST_FOLDER, ""))
        if folder:
            remember(LAST_FOLDER, folder)
            self.compare_with(folder)

    # ------------------------------------------------------------------ jobs

    @Slot(str, float, str)
    def _on_progress(self, key: str, fraction: float, message: str) -> None:
        self.progress.set_fraction(fraction, key)
        if message:
            left = self.progress.left_text(key, fraction)
            self._progress_message = f"{message} — {left}" if left else message
            self.statusBar().showMessage(self._progress_message)
            self.progress.setToolTip(self._progress_message)  # whole, however narrow

    @Slot(bool)
    def _on_busy(self, busy: bool) -> None:
        if busy:
            self._busy_shown.start()
            return
        self._busy_shown.stop()
        if not self.progress.isHidden():
            self.progress.hide()
            self.cancel_button.hide()
        self.progress.set_fraction(0.0)
        self.progress.reset_jobs()
        if self._notice:  # progress messages covered it: show it again
            self.show_message(self._notice, NOTICE_MS)
            self._notice = ""
        elif self.statusBar().currentMessage() == self._progress_message:
            self.statusBar().clearMessage()

    @Slot()
    def _show_busy(self) -> None:
        if self.jobs.busy:
            self.progress.show()
            self.cancel_button.show()

    @Slot(str)
    def _on_notice(self, text: str) -> None:
        """A line the core logged (a damaged cache entry discarded, a run without the
        cache): shown now, and again when the running jobs end."""
        self.show_message(text, NOTICE_MS)
        if self.jobs.busy:
            self._notice = text

    @Slot(str, str, object)
    def _on_job_failed(self, key: str, message: str, exc) -> None:
        import torch

        if isinstance(exc, torch.cuda.OutOfMemoryError) and self.state.layer is not None:
            self.show_message("GPU out of memory: moving the model to the CPU.", 10000)
            self.state.set_model(self.state.layer.to("cpu"))
            return
        self.show_message(message, 15000)

    @Slot(str)
    def _on_cancelled(self, key: str) -> None:
        if key == "model_b":
            self.loading_b_name = None
            self._show_model_label()
        elif key in ("pair", "matching"):
            self.show_message("Head matching cancelled: Model > Match heads of A and B "
                              "computes it again.", 10000)
            return
        self.show_message("Cancelled.", 3000)

    def cancel_jobs(self) -> None:
        self.jobs.cancel()

    @Slot(str)
    def show_message(self, text: str, timeout: int = 8000) -> None:
        self.statusBar().showMessage(text, timeout)

    def _show_selection(self, *_):
        s = self.state

        def in_b(token: int, token_b: int | None) -> str:
            if s.pair is None or token < 0:
                return ""
            return f" (B: {s.token_text_b(token_b)})" if token_b is not None \
                else " (missing in B)"

        head_b = "" if s.head_b is None else f"B's head {s.head_b}    "
        self.selection_label.setText(
            f"  {head_b}Query: {s.token_text(s.query_token)}"
            f"{in_b(s.query_token, s.query_token_b)}"
            f"    Key: {s.token_text(s.key_token)}{in_b(s.key_token, s.key_token_b)}  "
        )

    # ------------------------------------------------------------------ export & misc

    def current_panel(self):
        inner = self.tabs.currentWidget()
        return inner.currentWidget() if isinstance(inner, QTabWidget) else inner

    def _inner_tabs(self, panel) -> QTabWidget | None:
        for g in range(self.tabs.count()):
            inner = self.tabs.widget(g)
            if isinstance(inner, QTabWidget) and inner.indexOf(panel) >= 0:
                return inner
        return None

    def _remember_view(self, *_) -> None:
        panel = self.current_panel()
        if panel is not None:
            remember(VIEW, panel.view_name)

    def view_names(self) -> list[str]:
        return [p.view_name for p in self.panels]

    def panel(self, view_name: str):
        return next((p for p in self.panels if p.view_name == view_name), None)

    def show_view(self, view_name: str) -> bool:
        """Bring a panel to the front by its view name; False if there is none."""
        panel = self.panel(view_name)
        if panel is None:
            return False
        inner = self._inner_tabs(panel)
        if inner is not None:
            inner.setCurrentWidget(panel)  # first: the group's other current tab never shows
            self.tabs.setCurrentWidget(inner)
        return True

    def open_text_file(self, path: str | None = None) -> None:
        """Show the Tokens view and read a text file (asked for when `path` is None)."""
        self.show_view("tokens")
        panel = self.panel("tokens")
        if path is None:
            panel.open_text_file()
        else:
            panel.load_text_file(path)

    def export_current(self, fmt: str) -> None:
        panel = self.current_panel()
        frames = panel.plot_frames() if panel is not None else []
        if not frames:
            self.show_message("This view has no plot to export.", 8000)
            return
        frame = frames[0]
        if len(frames) > 1:
            names = [f.name for f in frames]
            name, ok = QInputDialog.getItem(self, "Export", "Which plot of this view?", names,
                                            0, False)
            if not ok:
                return
            frame = frames[names.index(name)]
        frame.export_dialog(fmt)

    def view_groups(self) -> list[tuple[str, list]]:
        """(tab group, its views) in the window's order, the side panel first."""
        from detokgui.gui.panels import PANEL_GROUPS, SIDE_PANEL_CLASSES

        by_class = {type(p): p for p in self.panels}
        return [("side panel", [by_class[c] for c in SIDE_PANEL_CLASSES]),
                *((title, [by_class[c] for c in group]) for title, group in PANEL_GROUPS)]

    def show_help(self, page: str = "views") -> None:
        """The help dialog (one, not modal) at `page`, its texts made for the model now
        shown."""
        from detokgui.gui.help_dialog import HelpDialog

        if self.help_dialog is None:
            self.help_dialog = HelpDialog(self, page)
        else:
            self.help_dialog.refresh()
            self.help_dialog.show_page(page)
        self.help_dialog.show()
        self.help_dialog.raise_()

    def about(self) -> None:
        from detokgui import __version__

        QMessageBox.about(
            self, "About detokgui",
            f"<b>detokgui {__version__}</b><br>The first attention layer of GPT-2, GPT-Neo "
            "and OPT models, from the weights alone.<br>After Kamoda et al., <i>Weight-based Analysis "
            "of Detokenization in Language Models</i> (NAACL Findings 2025).",
        )

    def closeEvent(self, event):
        self.notices.close()
        remember(GEOMETRY, self.saveGeometry())
        flush_settings()
        self.jobs.cancel()
        self.jobs.wait(3000)
        super().closeEvent(event)


def default_size(window) -> tuple[int, int]:
    """DEFAULT_SIZE, or the available area of the window's screen where that is smaller."""
    screen = window.screen()
    w, h = DEFAULT_SIZE
    if screen is not None:
        area = screen.availableGeometry()
        w, h = min(w, area.width()), min(h, area.height())
    return w, h


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
