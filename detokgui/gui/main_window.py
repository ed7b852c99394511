"""The main window: panels in tabs around one shared AppState, menus, the toolbar's
selection, the status bar (the model shown, progress with a cancel button) and help.
Loading, comparing and letting go of models is the model controller's (`gui.models`),
which the window shows through its signals."""

from __future__ import annotations

import torch
from PySide6.QtCore import QSize, Qt, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from detokgui import __version__
from detokgui.core.model.families import with_family
from detokgui.core.model.titles import model_title, short_commit
from detokgui.gui import session
from detokgui.gui.banner import Banner
from detokgui.gui.corpus import CorpusControl
from detokgui.gui.elided_label import ElidedLabel, StatusBar
from detokgui.gui.export_figures import FigureExporter
from detokgui.gui.export_report import ReportExporter
from detokgui.gui.help_dialog import HelpDialog
from detokgui.gui.job_status import JobStatus
from detokgui.gui.jobs import JobRunner
from detokgui.gui.model_menu import ModelMenu, ModelStatus
from detokgui.gui.models import ModelController, recent_families, recent_models
from detokgui.gui.options import flush_settings, remember, remembered
from detokgui.gui.page_tabs import PageTabs
from detokgui.gui.panels import PANEL_GROUPS, SIDE_PANEL_CLASSES
from detokgui.gui.plots import EXPORT_SHORTCUTS
from detokgui.gui.state import AppState

DEFAULT_SIZE = (1400, 900)
# remembered between sessions
VIEW, GEOMETRY = "window/view", "window/geometry"


def _delegate(name: str, doc: str | None = None) -> property:
    """A read-only attribute (or method) of the window that is its model controller's."""
    return property(lambda self: getattr(self.models, name),
                    doc=doc or f"The model controller's `{name}`.")


class MainWindow(QMainWindow):
    """The window around one AppState and one JobRunner. Its model methods and attributes
    (load_model, compare_with, loading_name, ...) are its ModelController's (`models`)."""

    def __init__(self, model: str | None = None, device: str | None = None):
        super().__init__()
        self.setWindowTitle("detokgui")
        screen, size = self.screen(), QSize(*DEFAULT_SIZE)  # or the screen's area, if smaller
        self.resize(size if screen is None else size.boundedTo(screen.availableGeometry().size()))
        self.state = AppState(self)
        self.jobs = JobRunner(self)
        self.models = ModelController(self.state, self.jobs, device, self)
        self.help_dialog = None

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
        self.tab_group = {}  # each tabbed panel's group: the QTabWidget it is a tab of
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
                self.panels.append(panel)
                self.tab_group[panel] = inner
            inner.currentChanged.connect(self._remember_view)
        self.tabs.currentChanged.connect(self._remember_view)

        self._build_toolbar()
        self._build_status_bar()
        self._build_menus()
        self.jobs.failed.connect(self._on_job_failed)
        m = self.models
        m.message.connect(self.show_message)
        m.banner.connect(self.banner.show_text)
        m.bannerDismissed.connect(self.banner.dismiss)
        s = self.state
        s.modelChanged.connect(self._on_model)
        s.modelRequested.connect(self.load_model)  # e.g. a training-series point
        s.headChanged.connect(self.head_spin.setValue)
        for signal in (s.compareChanged, s.headBChanged, s.queryTokenChanged, s.keyTokenChanged):
            signal.connect(self._show_selection)
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
        self.model_status = ModelStatus(self.models, sb)
        self.model_label, self.model_facts = self.model_status.label, self.model_status.facts
        self.job_status = JobStatus(self, self.jobs, sb)
        self.progress, self.cancel_button = self.job_status.progress, self.job_status.cancel_button

    def _build_menus(self) -> None:
        mb = self.menuBar()
        self.model_menu = ModelMenu(self, self.models, mb.addMenu("&Model"), self._action)
        mm = self.model_menu
        self.recent_menu, self.compare_menu = mm.recent_menu, mm.compare_menu
        self.rematch_action = mm.rematch_action

        file_menu = mb.addMenu("&File")
        self._action(file_menu, "Open text file…", lambda: self.open_text_file(),
                     QKeySequence("Ctrl+T"),
                     "Read a text file as the Tokens view's text (any size: a long one is "
                     "shown as a read-only preview and tokenised whole)")
        self._action(file_menu, "Open session…", lambda: session.ask_open(self),
                     QKeySequence("Ctrl+Shift+R"),
                     "Restore a saved session: models, A/B pair, selection, corpus, view and "
                     "every view's options")
        self._action(file_menu, "Save session…", lambda: session.ask_save(self),
                     QKeySequence("Ctrl+S"),
                     "Save what the window shows (models, A/B pair, selection, corpus, view, "
                     "options) to a small JSON file to reopen or send")
        file_menu.addSeparator()
        for fmt, key in EXPORT_SHORTCUTS.items():
            self._action(file_menu, f"Export current view as {fmt.upper()}…",
                         lambda _=False, f=fmt: self.export_current(f), QKeySequence(key))
        file_menu.addSeparator()
        self.figure_exporter = FigureExporter(self)
        self.export_figures_action = self._action(
            file_menu, "Export all figures…", self.figure_exporter.ask, QKeySequence("Ctrl+Shift+F"),
            "Every paper and study figure as PNG/SVG/PDF with CSV data and an index.md, "
            "like `detokgui export figures`")
        self.report_exporter = ReportExporter(self)
        self.export_report_action = self._action(
            file_menu, "Export report…", self.report_exporter.ask, None,
            "One self-contained HTML page (model card, figures, head cards, token search) "
            "to open offline in a browser, like `detokgui export report`")

        self.corpus = CorpusControl(self, mb.addMenu("&Corpus"))
        self.statusBar().insertPermanentWidget(1, self.corpus.label)

        view_menu = mb.addMenu("&View")
        for i, panel in enumerate(self.tab_group):
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

    recent_models = staticmethod(recent_models)
    recent_families = staticmethod(recent_families)

    # ------------------------------------------------------------------ model

    loading_name = _delegate("loading_name", "The model A being loaded, or None.")
    load_error = _delegate("load_error", "Why model A could not be loaded, or None.")
    load_seconds = _delegate("load_seconds", "How long model A took to load (s).")
    loading_b_name = _delegate("loading_b_name", "The model B being loaded, or None.")
    compare_error = _delegate("compare_error", "Why model B could not be loaded, or None.")

    open_default_model = _delegate("open_default_model")
    load_model = _delegate("load_model")
    compare_with = _delegate("compare_with")
    close_comparison = _delegate("close_comparison")
    swap_models = _delegate("swap_models")
    match_again = _delegate("match_again")

    def ask_hub_model(self) -> None:
        self.model_menu.ask_hub_model()

    model_title = staticmethod(model_title)

    @Slot(object)
    def _on_model(self, layer) -> None:
        self._show_selection()  # token names come from the model's tokenizer
        if layer is None:
            return
        self.head_spin.setRange(0, layer.n_heads - 1)
        self.head_spin.setValue(self.state.head)
        self.banner.dismiss()
        title = with_family(layer.name, layer.family_label)
        commit = short_commit(layer)
        self.setWindowTitle(f"detokgui — {title}" + (f" · commit {commit}" if commit else ""))
        self.show_message(f"Loaded {layer.name}", 5000)

    # ------------------------------------------------------------------ jobs

    @Slot(str, str, object)
    def _on_job_failed(self, key: str, message: str, exc) -> None:
        if isinstance(exc, torch.cuda.OutOfMemoryError) and self.state.layer is not None:
            self.show_message("GPU out of memory: moving the model to the CPU.", 10000)
            self.state.set_model(self.state.layer.to("cpu"))
            return
        self.show_message(message, 15000)

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
        inner = self.tab_group.get(panel)
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
        by_class = {type(p): p for p in self.panels}
        return [("side panel", [by_class[c] for c in SIDE_PANEL_CLASSES]),
                *((title, [by_class[c] for c in group]) for title, group in PANEL_GROUPS)]

    def show_help(self, page: str = "views") -> None:
        """The help dialog (one, not modal) at `page`, its texts made for the model now
        shown."""
        if self.help_dialog is None:
            self.help_dialog = HelpDialog(self, page)
        else:
            self.help_dialog.refresh()
            self.help_dialog.show_page(page)
        self.help_dialog.show()
        self.help_dialog.raise_()

    def about(self) -> None:
        QMessageBox.about(
            self, "About detokgui",
            f"<b>detokgui {__version__}</b><br>The first attention layer of GPT-2, GPT-Neo "
            "and OPT models, from the weights alone.<br>After Kamoda et al., <i>Weight-based Analysis "
            "of Detokenization in Language Models</i> (NAACL Findings 2025).",
        )

    def closeEvent(self, event):
        self.job_status.close()
        remember(GEOMETRY, self.saveGeometry())
        flush_settings()
        self.jobs.cancel()
        self.jobs.wait(3000)
        super().closeEvent(event)
