"""The main window: panels in tabs around one shared AppState, model loading on a
background thread, menus, status-bar progress with a cancel button."""

from __future__ import annotations

import time
import weakref

from PySide6.QtCore import Qt, QTimer, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QSpinBox,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from detokgui.core.conventions import temperature_label
from detokgui.core.families import family_label
from detokgui.gui.banner import Banner
from detokgui.gui.elided_label import ElidedLabel, StatusBar
from detokgui.gui.jobs import JobRunner, dismantle, release_memory
from detokgui.gui.notices import LogNotices
from detokgui.gui.options import flush_settings, remember, remembered
from detokgui.gui.state import AppState

DEMO_LABELS = {
    "demo": "Demo model (trained, not GPT-2)",
    "random-demo": "Random demo model (random weights)",
}
MAX_RECENT = 8
DEFAULT_SIZE = (1400, 900)  # or the screen's available area, if smaller
DEFAULT_POSITION = 50  # the query position of a window's first model
NOTICE_MS = 15000  # how long a line the core logged stays in the status bar
# remembered between sessions
VIEW, GEOMETRY = "window/view", "window/geometry"
RECENT, LAST_HUB, LAST_FOLDER = "models/recent", "models/last_hub", "models/last_folder"
# The family of each recent model that loaded, as a flat list name, family, name, family...
# (a key of its own: settings written before families existed still read as they were).
RECENT_FAMILIES = "models/recent_families"


def load_layer(name: str, device: str | None, report):
    """Job body: load a model (a demo model, a folder or a hub name), its sigma table and
    its tokenizer's pieces."""
    from detokgui.core import Layer0
    from detokgui.core.tokens import prepare as prepare_tokens

    layer = Layer0.from_pretrained(name, device=device, progress=lambda f, m: report(0.7 * f, m))
    layer.sigma_stats(progress=lambda f, m: report(0.7 + 0.3 * f, m))
    prepare_tokens(layer.tokenizer)  # not on the GUI thread when the first token shows
    return layer


def with_family(name: str, family: str) -> str:
    """"gpt2 (GPT-2)": a model's name and its family, unless the name already says it
    (the demo models' names do) or the family is not known ("")."""
    return f"{name} ({family})" if family and family not in name else name


def default_query(layer) -> int:
    """' Korea' (the paper's running example) when the tokenizer has it, else token 0."""
    from detokgui.core.tokens import encode_text

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
        self.load_started = 0.0  # perf_counter() when the model was asked for
        self.load_seconds: float | None = None  # wall time from request to ready
        self._progress_message = ""
        self._notice = ""  # the last line the core logged while jobs ran

        central = QWidget()
        lay = QVBoxLayout(central)
        lay.setContentsMargins(4, 4, 4, 4)
        self.banner = Banner()
        lay.addWidget(self.banner)
        self.tabs = QTabWidget()  # one tab per group of panels, each a QTabWidget of panels
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
            inner = QTabWidget()
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
        self.jobs.failed.connect(self._on_job_failed)
        self.jobs.busyChanged.connect(self._on_busy)
        self.jobs.cancelled.connect(self._on_cancelled)
        self.notices = LogNotices(self)
        self.notices.line.connect(self._on_notice)
        self.state.modelChanged.connect(self._on_model)
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
        self.model_label = ElidedLabel("no model", max_hint=560)
        self.model_label.setObjectName("model_label")
        sb.addPermanentWidget(self.model_label, 2)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(False)
        self.progress.hide()
        sb.addPermanentWidget(self.progress)
        self.cancel_button = QToolButton()
        self.cancel_button.setText("Cancel")
        self.cancel_button.setToolTip("Cancel running computations (Esc)")
        self.cancel_button.clicked.connect(self.cancel_jobs)
        self.cancel_button.hide()
        sb.addPermanentWidget(self.cancel_button)

    def _build_menus(self) -> None:
        mb = self.menuBar()
        model_menu = mb.addMenu("&Model")
        self._action(model_menu, "Open hub model…", self.ask_hub_model, QKeySequence("Ctrl+L"),
                     "Load a Hugging Face model by name (gpt2, distilgpt2, EleutherAI/gpt-neo-125m, "
                     "facebook/opt-125m, …)")
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
        self._fill_recent()
        model_menu.addSeparator()
        self._action(model_menu, "Quit", self.close, QKeySequence.Quit)

        file_menu = mb.addMenu("&File")
        self._action(file_menu, "Open text file…", lambda: self.open_text_file(),
                     QKeySequence("Ctrl+T"),
                     "Read a text file as the Tokens view's text (any size: a long one is "
                     "shown as a read-only preview and tokenised whole)")
        file_menu.addSeparator()
        for fmt, key in (("png", "Ctrl+Shift+P"), ("svg", "Ctrl+Shift+S"), ("csv", "Ctrl+Shift+C")):
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
        self.recent_menu.clear()
        recent = self.recent_models()
        for name in recent:
            self._action(self.recent_menu, self.recent_label(name),
                         lambda _=False, n=name: self.load_model(n))
        self.recent_menu.setEnabled(bool(recent))

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

    def load_model(self, name: str) -> None:
        name = str(name).strip()
        if not name:
            return
        self.loading_name = name
        self.load_error = None
        self.load_started = time.perf_counter()
        self.banner.dismiss()
        label = DEMO_LABELS.get(name, name)
        self._show_model_label()
        self.show_message(f"Loading {label}…")
        device = self.device
        self.jobs.submit(
            "model",
            lambda report: load_layer(name, device, report),
            lambda layer, n=name: self._loaded(n, layer),
            label=f"Loading {label}",
            on_error=self._load_failed,
        )

    def _loaded(self, name: str, layer) -> None:
        self.loading_name = None
        self.load_seconds = time.perf_counter() - self.load_started
        self._remember(name, layer.family)
        if self.state.layer is None:  # defaults first: one round of computations, not three
            if self.state.query_token < 0:
                self.state.set_query_token(default_query(layer))
            if self.state.model_serial == 0 and self.state.query_position == 0:
                self.state.set_query_position(min(DEFAULT_POSITION, layer.n_positions - 1))
        # The previous model, held only here from now on, is freed off the GUI thread,
        # then its memory handed back.
        previous = [self.state.layer] if self.state.layer is not None else []
        old = weakref.ref(previous[0]) if previous else None
        self.state.set_model(layer)
        if self.state.query_token < 0:
            self.state.set_query_token(default_query(layer))
        if previous:
            after = lambda *_: QTimer.singleShot(0, self, lambda: release_memory(old))
            self.jobs.submit("release", lambda: dismantle(previous), after,
                             label="Freeing the previous model", on_error=after,
                             on_cancel=after)
        else:
            QTimer.singleShot(0, self, release_memory)
        for note in layer.notes:
            self.show_message(note)

    def _load_failed(self, exc: BaseException, _message: str = "") -> None:
        self.loading_name = None
        self.load_error = str(exc)
        self._show_model_label()
        self.show_message("")
        self.banner.show_text(
            f"<b>The model could not be loaded.</b><br>{_html(str(exc))}<br>"
            "Use the <i>Model</i> menu to open another model, a local folder, or the demo model."
        )

    def _show_model_label(self) -> None:
        """The model shown (or "no model"), and the one being loaded, if any."""
        layer = self.state.layer
        if layer is None:
            text = "no model"
        else:
            took = f" | loaded in {self.load_seconds:.1f} s" if self.load_seconds else ""
            text = (f"{layer.name} | {layer.summary}, {temperature_label(layer)} | "
                    f"{layer.device.type.upper()} | V={layer.n_vocab:,} L={layer.n_positions} "
                    f"d′={layer.d_head}{took}")
        if self.loading_name is not None:
            loading = f"loading {DEMO_LABELS.get(self.loading_name, self.loading_name)}…"
            text = loading if layer is None else f"{loading} (showing {layer.name})"
        self.model_label.setText(text)

    @Slot(object)
    def _on_model(self, layer) -> None:
        self._show_selection()  # token names come from the model's tokenizer
        self._show_model_label()
        if layer is None:
            return
        self.head_spin.setRange(0, layer.n_heads - 1)
        self.head_spin.setValue(self.state.head)
        self.banner.dismiss()
        self.setWindowTitle(f"detokgui — {with_family(layer.name, layer.family_label)}")
        self.show_message(f"Loaded {layer.name}", 5000)

    def ask_hub_model(self) -> None:
        name, ok = QInputDialog.getText(
            self, "Open hub model",
            "Hugging Face model name (gpt2, gpt2-medium, gpt2-large, gpt2-xl, distilgpt2, …):",
            text=remembered(LAST_HUB, "gpt2"),
        )
        if ok and name.strip():
            remember(LAST_HUB, name.strip())
            self.load_model(name)

    def ask_model_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self, "Open checkpoint folder (GPT-2, GPT-Neo or OPT)", remembered(LAST_FOLDER, "")
        )
        if folder:
            remember(LAST_FOLDER, folder)
            self.load_model(folder)

    # ------------------------------------------------------------------ jobs

    @Slot(str, float, str)
    def _on_progress(self, key: str, fraction: float, message: str) -> None:
        self.progress.setValue(int(1000 * max(0.0, min(1.0, fraction))))
        if message:
            self._progress_message = message
            self.statusBar().showMessage(message)

    @Slot(bool)
    def _on_busy(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy)
        if not busy:
            self.progress.setValue(0)
            if self._notice:  # progress messages covered it: show it again
                self.show_message(self._notice, NOTICE_MS)
                self._notice = ""
            elif self.statusBar().currentMessage() == self._progress_message:
                self.statusBar().clearMessage()

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
        if key == "model":
            self.loading_name = None
            self._show_model_label()
        self.show_message("Cancelled.", 3000)

    def cancel_jobs(self) -> None:
        self.jobs.cancel()

    @Slot(str)
    def show_message(self, text: str, timeout: int = 8000) -> None:
        self.statusBar().showMessage(text, timeout)

    def _show_selection(self, *_):
        s = self.state
        self.selection_label.setText(
            f"  Query: {s.token_text(s.query_token)}    Key: {s.token_text(s.key_token)}  "
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
