"""What the main window shows of its models: the Model menu and the dialogs it opens
(model A from the hub, a folder, the demo models or the recent models; Compare with… B;
swap, match again, close the comparison), whose choices go to the model controller
(`gui.models`); and the status bar's model label with the model's facts."""

from __future__ import annotations

from PySide6.QtCore import QObject, Slot
from PySide6.QtGui import QCursor, QKeySequence
from PySide6.QtWidgets import QFileDialog, QInputDialog, QLabel, QMessageBox

from detokgui.core.model.sources.default_model import DEFAULT_MODEL
from detokgui.core.model.sources.demo import DEMO_LABELS
from detokgui.core.model.sources.hub import HUB_EXAMPLE, hub_request
from detokgui.core.model.titles import model_facts_text, model_status
from detokgui.gui.elided_label import ElidedLabel
from detokgui.gui.models import ModelController, recent_label, recent_models
from detokgui.gui.options import remember, remembered

# remembered between sessions
LAST_HUB, LAST_FOLDER = "models/last_hub", "models/last_folder"


class ModelMenu(QObject):
    """Fills `menu` (the window's Model menu) with actions made by `action(menu, text,
    slot, shortcut, tip)`; its dialogs open over `window`."""

    def __init__(self, window, models: ModelController, menu, action):
        super().__init__(window)
        self.window, self.models, self.state, self._action = window, models, models.state, action
        action(menu, "Open hub model…", self.ask_hub_model, QKeySequence("Ctrl+L"),
               "Load a Hugging Face model by name (gpt2, distilgpt2, EleutherAI/gpt-neo-125m, "
               "facebook/opt-125m, …); NAME@REVISION opens a branch, tag or commit, "
               "e.g. a training checkpoint")
        action(menu, "Open model folder…", self.ask_model_folder,
               QKeySequence.Open, "Load a local checkpoint folder (GPT-2, GPT-Neo or OPT)")
        action(menu, DEMO_LABELS["demo"], lambda: models.load_model("demo"),
               QKeySequence("Ctrl+D"),
               "A small GPT-2-architecture model trained on public-domain English, "
               "shipped with detokgui: try the interface without any download")
        action(menu, DEMO_LABELS["random-demo"],
               lambda: models.load_model("random-demo"), QKeySequence("Ctrl+Shift+D"),
               "Random weights with the real GPT-2 tokenizer: compare learned structure "
               "against noise")
        self.recent_menu = menu.addMenu("Recent models")
        menu.addSeparator()
        self.compare_menu = menu.addMenu("Compare with…")
        self.compare_menu.setToolTip("Open a second model, B, to compare with the one shown")
        action(self.compare_menu, "Hub model…", self.ask_compare_hub, None,
               "Compare with a Hugging Face model by name")
        action(self.compare_menu, "Model folder…", self.ask_compare_folder, None,
               "Compare with a local checkpoint folder")
        for demo_name, text in DEMO_LABELS.items():
            action(self.compare_menu, text, lambda _=False, n=demo_name: models.compare_with(n))
        self.compare_recent_menu = self.compare_menu.addMenu("Recent models")
        self.swap_action = action(menu, "Swap A and B", models.swap_models,
                                  QKeySequence("Ctrl+Shift+W"),
                                  "Make the compared model (B) the model shown (A)")
        self.rematch_action = action(menu, "Match heads of A and B", models.match_again, None,
                                     "Compute the head matching again (after a Cancel)")
        self.close_compare_action = action(menu, "Close comparison", models.close_comparison,
                                           None, "Close model B and free its memory")
        self.fill_recent()
        self.compare_actions()
        menu.addSeparator()
        action(menu, "Quit", window.close, QKeySequence.Quit)
        models.recentChanged.connect(self.fill_recent)
        models.folderWanted.connect(self.ask_model_folder)
        self.state.compareChanged.connect(self.compare_actions)
        self.state.matchingChanged.connect(self.compare_actions)
        self.state.compareRequested.connect(self.ask_compare)

    @Slot()
    def fill_recent(self) -> None:
        recent = recent_models()
        for menu, open_model in ((self.recent_menu, self.models.load_model),
                                 (self.compare_recent_menu, self.models.compare_with)):
            menu.clear()
            for name in recent:
                self._action(menu, recent_label(name),
                             lambda _=False, n=name, f=open_model: f(n))
            menu.setEnabled(bool(recent))

    @Slot()
    def compare_actions(self, *_) -> None:
        have = self.state.layer_b is not None
        self.swap_action.setEnabled(have)
        self.close_compare_action.setEnabled(have)
        self.rematch_action.setEnabled(have and self.state.matching is None)

    def ask_hub_model(self) -> None:
        """Ask for NAME or NAME@REVISION (branch, tag or commit) and load it; the name
        asked for last (with its revision) is offered next time."""
        text = remembered(LAST_HUB, DEFAULT_MODEL)
        while True:
            text, ok = QInputDialog.getText(
                self.window, "Open hub model",
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
            QMessageBox.warning(self.window, "Open hub model", problem)
        remember(LAST_HUB, name)
        self.models.load_model(name)

    @Slot()
    def ask_model_folder(self) -> None:
        self._ask_folder("Open checkpoint folder (GPT-2, GPT-Neo or OPT)", self.models.load_model)

    def _ask_folder(self, title: str, open_model) -> None:
        folder = QFileDialog.getExistingDirectory(self.window, title, remembered(LAST_FOLDER, ""))
        if folder:
            remember(LAST_FOLDER, folder)
            open_model(folder)

    @Slot()
    def ask_compare(self) -> None:
        """The Compare with… menu at the mouse (a panel's button asks for it)."""
        self.compare_menu.popup(QCursor.pos())

    def ask_compare_hub(self) -> None:
        name, ok = QInputDialog.getText(
            self.window, "Compare with a hub model", "Hugging Face model name to compare with:",
            text=remembered(LAST_HUB, "gpt2"))
        if ok and name.strip():
            remember(LAST_HUB, name.strip())
            self.models.compare_with(name)

    def ask_compare_folder(self) -> None:
        self._ask_folder("Compare with a checkpoint folder", self.models.compare_with)


class ModelStatus(QObject):
    """The status bar's `label` (the model shown, or "no model", with its architecture;
    the one being loaded; A and B when comparing) and `facts` beside it
    (`model_facts_text`, never elided: a long name gives way first)."""

    def __init__(self, models: ModelController, status_bar):
        super().__init__(status_bar)
        self.models, self.state = models, models.state
        self.label = ElidedLabel("no model", max_hint=420)
        self.label.setObjectName("model_label")
        status_bar.addPermanentWidget(self.label)
        self.facts = QLabel("")
        self.facts.setObjectName("model_facts")
        self.facts.setToolTip(
            "The model's device, vocabulary size V, positions L, heads, width d, softmax "
            "temperature τ, and the time it took to load and fold layer 0")
        status_bar.addPermanentWidget(self.facts)
        models.loadingChanged.connect(self.refresh)
        for signal in (self.state.modelChanged, self.state.compareChanged,
                       self.state.matchingChanged):
            signal.connect(self.refresh)

    @Slot()
    def refresh(self, *_) -> None:
        layer, m = self.state.layer, self.models
        self.facts.setText(model_facts_text(layer, m.load_seconds) if layer is not None else "")
        self.facts.setVisible(layer is not None)
        text, note = model_status(layer, self.state.layer_b, m.loading_name, m.loading_b_name,
                                  bool(self.state.matching))
        self.label.setText(text)
        self.label.set_note(note)
