"""File > Export all figures…: the same export as `detokgui export figures` (every paper
and study figure as PNG/SVG/PDF + CSV + index.md, `figures.iter_export_figures`), run on
the job runner with a progress dialog and Cancel.

The dialog asks for the output folder, the formats and whether to use the app's current
corpus (AppState.corpus; without it the corpus figures are listed as skipped). A
cancelled or failed export leaves no partial folder (the export stages everything in a
temporary folder and publishes it only when all figures are done); on success the status
bar says where the files are and the user may open the folder.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QUrl, Slot
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QProgressDialog,
    QPushButton,
    QSpinBox,
    QWidget,
)

from detokgui.figures.defaults import DEFAULT_MAX_TEXTS
from detokgui.gui.options import remember, remembered

JOB_KEY = "export-figures"
FORMATS = ("png", "svg", "pdf")
# remembered between sessions
FOLDER, FORMATS_KEY, USE_CORPUS, MAX_TEXTS = (
    "figures/folder", "figures/formats", "figures/use_corpus", "figures/max_texts")


@dataclass(frozen=True)
class FigureRequest:
    """What the dialog asks for: where, which formats, which corpus, how many texts."""

    folder: str
    formats: tuple[str, ...]
    corpus: tuple[str, ...]
    max_texts: int


class ExportDialog(QDialog):
    """What the File menu's export dialogs share: a line on what they write, the path row
    (`add_path`), "Use the current corpus" (`add_corpus_box`, `add_offer`), Export and Cancel
    (`finish`), Export enabled while `ready()`, and the choices remembered for next time
    (`choices`: option key -> the function reading its value)."""

    def __init__(self, parent, title: str, intro: str, corpus: tuple[str, ...]):
        super().__init__(parent)
        self.setWindowTitle(title)
        self.corpus = tuple(corpus)
        self.choices: dict[str, Callable] = {}
        self.form = QFormLayout(self)
        self.form.addRow(QLabel(intro))
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.ok_button.setText("Export")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

    @property
    def ok_button(self):
        return self.buttons.button(QDialogButtonBox.Ok)

    def add_path(self, label: str, key: str, default: str, browse, tip: str) -> QLineEdit:
        """A row `label`: a line edit holding the path remembered as option `key` (else
        `default`), and `browse` the Browse… button's."""
        row = QWidget()
        h = QHBoxLayout(row)
        h.setContentsMargins(0, 0, 0, 0)
        edit = QLineEdit(remembered(key, default))
        self.choices[key] = lambda: edit.text().strip()
        edit.setToolTip(tip)
        edit.textChanged.connect(self._update)
        self.browse = QPushButton("Browse…")
        self.browse.clicked.connect(browse)
        h.addWidget(edit, 1)
        h.addWidget(self.browse)
        self.form.addRow(label, row)
        return edit

    def add_offer(self, text: str, what: str | None, missing: str, key: str,
                  tip: str) -> QCheckBox:
        """"TEXT (WHAT)", checked as last time (option `key`), for something the window has
        open (`what` names it); disabled and unchecked, "TEXT (MISSING)", when it has none."""
        box = QCheckBox(f"{text} ({what if what is not None else missing})")
        box.setEnabled(what is not None)
        box.setChecked(what is not None and bool(remembered(key, True)))
        box.setToolTip(tip)
        self.form.addRow("", box)
        if what is not None:
            self.choices[key] = box.isChecked
        return box

    def add_corpus_box(self, corpus_text: str, key: str, tip: str) -> None:
        self.use_corpus = self.add_offer("Use the current corpus", corpus_text if self.corpus
                                         else None, "none is open: Corpus menu", key, tip)

    def chosen_corpus(self) -> tuple[str, ...]:
        return self.corpus if self.use_corpus.isChecked() else ()

    def ready(self) -> bool:
        """Whether what the dialog holds can be exported (each dialog says)."""
        raise NotImplementedError

    def finish(self) -> None:
        self.form.addRow(self.buttons)
        self._update()

    def remember_choices(self) -> None:
        for key, value in self.choices.items():
            remember(key, value())

    def _update(self, *_) -> None:
        self.ok_button.setEnabled(self.ready())


class ExportFiguresDialog(ExportDialog):
    """Output folder, format checkboxes, "use the current corpus", the text cap."""

    def __init__(self, parent, corpus: tuple[str, ...], corpus_text: str):
        super().__init__(parent, "Export all figures",
                         "Every figure of the paper and of the layer-0 studies that "
                         "detokgui computes,\nwith its data as CSV and an index.md.", corpus)
        self.folder = self.add_path(
            "Folder", FOLDER, str(Path.home() / "detokgui-figures"), self.ask_folder,
            "Created if missing; an existing folder gets the new files only once every "
            "figure is done")
        fmts = QWidget()
        h = QHBoxLayout(fmts)
        h.setContentsMargins(0, 0, 0, 0)
        chosen = set(remembered(FORMATS_KEY, ["png", "svg", "pdf"]))
        self.format_boxes = {}
        for f in FORMATS:
            box = QCheckBox(f.upper())
            box.setChecked(f in chosen)
            box.toggled.connect(self._update)
            self.format_boxes[f] = box
            h.addWidget(box)
        self.form.addRow("Formats", fmts)
        self.choices[FORMATS_KEY] = lambda: list(self.formats())
        self.add_corpus_box(corpus_text, USE_CORPUS, "Without a corpus the corpus figures "
                            "(Fig 2-C, 2-D, 3-E, 4, 5, 6 left, 11, 13) are listed as skipped "
                            "in index.md")
        self.max_texts = QSpinBox()
        self.max_texts.setRange(1, 100000)
        self.max_texts.setValue(int(remembered(MAX_TEXTS, DEFAULT_MAX_TEXTS)))
        self.max_texts.setToolTip("Corpus windows read by the text figures (observed "
                                  "attention, six-term KL); the counts use the whole corpus")
        self.form.addRow("Texts", self.max_texts)
        self.choices[MAX_TEXTS] = self.max_texts.value
        self.finish()

    def ask_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Folder for the figures",
                                                  self.folder.text())
        if folder:
            self.folder.setText(folder)

    def formats(self) -> tuple[str, ...]:
        return tuple(f for f, box in self.format_boxes.items() if box.isChecked())

    def ready(self) -> bool:
        return bool(self.folder.text().strip()) and bool(self.formats())

    def request(self) -> FigureRequest:
        return FigureRequest(self.folder.text().strip(), self.formats(), self.chosen_corpus(),
                             self.max_texts.value())


def export_job(layer, req: FigureRequest, session: str | None = None):
    """Job body (a generator on a worker thread): the figure export of `req`; `session`,
    the window's session file, is named in every file's provenance record."""
    from detokgui.figures.export import iter_export_figures

    return (yield from iter_export_figures(layer, req.folder, req.formats, req.corpus,
                                           max_texts=req.max_texts, session=session))


class FigureExporter(QObject):
    """The File menu's "Export all figures…" of a main window: a job with a progress
    dialog and Cancel (`export_report.ReportExporter` is the same with another job)."""

    job_key = JOB_KEY
    title = "Export all figures"
    what, target = "Figure", "folder"  # the request's field that names where it writes

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.progress: QProgressDialog | None = None
        self.request: FigureRequest | None = None
        window.jobs.progress.connect(self._on_progress)

    def ask(self) -> None:
        w = self.window
        if w.state.layer is None:
            w.show_message("Load a model first (Model menu).", 5000)
            return
        dialog = self.dialog(w.corpus.text.removeprefix("corpus: "))
        if dialog.exec() != QDialog.Accepted:
            return
        dialog.remember_choices()
        self.start(dialog.request())

    def dialog(self, corpus_text: str) -> ExportDialog:
        return ExportFiguresDialog(self.window, self.window.state.corpus, corpus_text)

    def start(self, req: FigureRequest) -> None:
        layer = self.window.state.layer
        session = self.window.state.session_path
        self.submit(req, lambda: export_job(layer, req, session), "Exporting figures")

    def submit(self, req, job, label: str) -> None:
        """Run `job` (a generator function) on the job runner with the progress dialog."""
        self.request = req
        self._close_progress()
        dlg = QProgressDialog(f"{label}…", "Cancel", 0, 1000, self.window)
        dlg.setWindowTitle(self.title)
        dlg.setWindowModality(Qt.NonModal)
        dlg.setAutoClose(False)
        dlg.setAutoReset(False)
        dlg.setMinimumDuration(0)
        dlg.setMinimumWidth(420)
        dlg.canceled.connect(self.cancel)
        self.progress = dlg
        self.window.jobs.submit(self.job_key, job, self._done, label=label,
                                on_error=self._failed, on_cancel=self._cancelled)
        dlg.show()

    @property
    def running(self) -> bool:
        return self.job_key in self.window.jobs.running_keys()

    @Slot()
    def cancel(self) -> None:
        self.window.jobs.cancel(self.job_key)

    @Slot(str, float, str)
    def _on_progress(self, key: str, fraction: float, message: str) -> None:
        if key == self.job_key and self.progress is not None:
            self.progress.setValue(int(1000 * max(0.0, min(1.0, fraction))))
            if message:
                self.progress.setLabelText(message)

    def _close_progress(self) -> None:
        if self.progress is not None:
            self.progress.canceled.disconnect(self.cancel)
            self.progress.close()
            self.progress.deleteLater()
            self.progress = None

    @Slot(object)
    def _done(self, report) -> None:
        skipped = f" ({len(report.skipped)} skipped, see index.md)" if report.skipped else ""
        self._offer(f"Wrote {len(report.built)} figures to {report.out}{skipped}",
                    "Open the folder?", report.out)

    def _offer(self, text: str, question: str, path) -> None:
        """The job is done: `text` in the status bar and a question whether to open `path`."""
        self._close_progress()
        self.window.show_message(text, 15000)
        answer = QMessageBox.question(self.window, self.title, f"{text}.\n\n{question}",
                                      QMessageBox.Open | QMessageBox.Close, QMessageBox.Open)
        if answer == QMessageBox.Open:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))

    @Slot(object, str)
    def _failed(self, exc, _message: str = "") -> None:
        self._close_progress()  # the main window shows the message (JobRunner.failed)

    @Slot()
    def _cancelled(self) -> None:
        self._close_progress()
        where = getattr(self.request, self.target)  # the request is set before its job starts
        self.window.show_message(f"{self.what} export cancelled: nothing was written to "
                                 f"{where}.", 8000)
