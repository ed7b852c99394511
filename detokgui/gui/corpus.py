"""The corpus the corpus and text views read: the Corpus menu, a status-bar label, and the
corpus in AppState, a `core.corpus.spec.Corpus` with the menu's *Text column…* and how it
is counted (*Counting processes*, one per core by default, or *Count on a Dask cluster…*),
as the command line's --text-column, --workers and --scheduler. Chosen files are checked
off the GUI thread (`core.corpus.check`; a folder may hold many files) before they become
the shared corpus; the last corpus is remembered. *Open counts…* opens a counts file
(.npz, `detokgui export counts --out FILE.npz`): the views that need counts (bigram
AUROC, frequency) use it, those that need texts say they need corpus files."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtGui import QActionGroup, QKeySequence
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox

from detokgui.core.base.pools import default_workers
from detokgui.core.corpus.check import check_corpus
from detokgui.core.corpus.documents import skipped_items
from detokgui.core.corpus.readers import TEXT_COLUMN
from detokgui.core.corpus.spec import Corpus, counted_by
from detokgui.gui.elided_label import ElidedLabel
from detokgui.gui.options import remember, remembered

CORPUS, LAST_FOLDER = "corpus/paths", "corpus/last_folder"
TEXT_COLUMN_KEY, WORKERS_KEY, SCHEDULER_KEY = ("corpus/text_column", "corpus/workers",
                                               "corpus/scheduler")
FILE_FILTER = ("Corpus files (*.txt *.jsonl *.txt.gz *.jsonl.gz *.txt.zst *.jsonl.zst "
               "*.parquet *.arrow);;All files (*)")
COUNTS_FILTER = "Counts files (*.npz);;All files (*)"
WORKER_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128)


TOOLTIP = "The corpus read by the corpus and text views (Corpus menu)"
TOOLTIP_SKIPPED = 20  # skipped entries listed in the label's tooltip


class CorpusControl(QObject):
    """Corpus menu entries and the status-bar label of a main window."""

    def __init__(self, window, menu):
        super().__init__(window)
        self.window = window
        self.state = window.state
        self.text = "no corpus"
        self.label = ElidedLabel(self.text, max_hint=320)
        self.label.set_note(TOOLTIP)
        act = window._action
        act(menu, "Open corpus files…", lambda: self.ask_files(), QKeySequence("Ctrl+Shift+O"),
            ".txt or .jsonl files (a \"text\" field per line), optionally .gz or .zst; "
            ".parquet and .arrow files (a \"text\" column)")
        act(menu, "Open corpus folder…", self.ask_folder, None,
            "Every corpus file below a folder (a folder written by datasets' save_to_disk "
            "too)")
        act(menu, "Open counts…", self.ask_counts, None,
            "A counts file (.npz) written by detokgui export counts --out FILE.npz: the "
            "counts of a corpus counted elsewhere")
        act(menu, "Use sample corpus", self.use_sample, QKeySequence("Ctrl+Shift+K"),
            "3 MB of public-domain English shipped with detokgui (Austen, Bibles, State of "
            "the Union addresses, Bierce)")
        menu.addSeparator()
        act(menu, "Text column…", self.ask_text_column, None,
            "The column of parquet and arrow files, and the field of jsonl lines, that "
            "holds the text (default: text)")
        self.workers_menu = menu.addMenu("Counting processes")
        self.workers_group = QActionGroup(self)
        self.workers_actions = {}
        cores = default_workers()
        for n in (0, *(n for n in WORKER_CHOICES if n < cores)):
            a = self.workers_menu.addAction(f"One per core ({cores})" if n == 0 else str(n))
            a.setCheckable(True)
            a.setStatusTip("Worker processes that count the corpus (the counts are the same "
                           "whatever their number)")
            a.triggered.connect(lambda _=False, n=n: self.set_workers(n))
            self.workers_group.addAction(a)
            self.workers_actions[n] = a
        act(menu, "Count on a Dask cluster…", self.ask_scheduler, None,
            "Count corpora on an existing Dask cluster (its scheduler's address) instead "
            "of local processes")
        menu.addSeparator()
        act(menu, "Clear corpus", self.clear, None, "Use no corpus")
        self.text_column = remembered(TEXT_COLUMN_KEY, TEXT_COLUMN) or TEXT_COLUMN
        self.workers = int(remembered(WORKERS_KEY, 0) or 0)
        self.scheduler = remembered(SCHEDULER_KEY, "") or ""
        self.workers_actions.get(self.workers, self.workers_actions[0]).setChecked(True)
        self.state.corpusRequested.connect(self.open)  # e.g. a panel's "Use sample corpus"

    # ------------------------------------------------------------------ settings

    def corpus(self, paths) -> Corpus:
        """`paths` with the menu's text column and counting settings."""
        return Corpus([str(p) for p in paths], text_column=self.text_column,
                      workers=self.workers or None, scheduler=self.scheduler or None)

    def set_workers(self, n: int) -> None:
        """Count with `n` processes (0: one per core) from now on."""
        self.workers = int(n)
        remember(WORKERS_KEY, self.workers)
        if n in self.workers_actions:
            self.workers_actions[n].setChecked(True)
        self._apply_counting()

    def set_scheduler(self, address: str) -> None:
        """Count on the Dask cluster at `address` ("" for local processes) from now on."""
        self.scheduler = address.strip()
        remember(SCHEDULER_KEY, self.scheduler)
        self._apply_counting()
        self.window.show_message(
            f"Corpora are counted on the Dask cluster at {self.scheduler}" if self.scheduler
            else "Corpora are counted by local processes", 5000)

    def _apply_counting(self) -> None:
        if self.state.corpus:
            self.state.set_corpus(self.corpus(self.state.corpus))
        self._show(self.text)

    def ask_scheduler(self) -> None:
        address, ok = QInputDialog.getText(
            self.window, "Count on a Dask cluster",
            "Address of the Dask scheduler (tcp://host:port); empty: local processes",
            text=self.scheduler)
        if ok:
            self.set_scheduler(address)

    def ask_text_column(self) -> None:
        column, ok = QInputDialog.getText(
            self.window, "Text column",
            "The column of parquet and arrow files (and the field of jsonl lines) that "
            "holds the text", text=self.text_column)
        if ok:
            self.set_text_column(column)

    def set_text_column(self, column: str) -> None:
        """Read the text from `column` ("" for the default) from now on; the open corpus
        is checked again with it."""
        self.text_column = column.strip() or TEXT_COLUMN
        remember(TEXT_COLUMN_KEY, self.text_column)
        if self.state.corpus:
            self.open(list(self.state.corpus))

    # ------------------------------------------------------------------ opening

    def restore(self) -> None:
        """Reopen the last corpus if its files are still there."""
        paths = remembered(CORPUS, [])
        if paths and all(Path(p).exists() for p in paths):
            self.open(paths, quiet=True)

    def ask_files(self, caption: str = "Open corpus files", file_filter: str = FILE_FILTER
                  ) -> None:
        files, _ = QFileDialog.getOpenFileNames(
            self.window, caption, remembered(LAST_FOLDER, str(Path.home())), file_filter)
        if files:
            remember(LAST_FOLDER, str(Path(files[0]).parent))
            self.open(files)

    def ask_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self.window, "Open corpus folder", remembered(LAST_FOLDER, str(Path.home())))
        if folder:
            remember(LAST_FOLDER, folder)
            self.open([folder])

    def ask_counts(self) -> None:
        self.ask_files("Open counts", COUNTS_FILTER)

    def use_sample(self) -> None:
        from detokgui.core.model.sources.demo import sample_corpus

        self.open([str(sample_corpus())])

    def clear(self) -> None:
        self.state.set_corpus(())
        self._show("no corpus")
        remember(CORPUS, [])

    def open(self, paths, quiet: bool = False) -> None:
        corpus = self.corpus(paths)
        layer = self.state.layer
        self.label.setText("checking corpus…")
        self.window.jobs.submit("corpus", lambda: check_corpus(corpus, layer), self._opened,
                                label="Checking the corpus",
                                on_error=self._quiet_failure if quiet else self._failed)

    def _opened(self, result) -> None:
        corpus, text, skipped = result
        self._show(text, skipped)
        self.state.set_corpus(corpus)
        remember(CORPUS, list(corpus))
        if skipped:
            n = len(skipped)
            self.window.show_message(
                f"Corpus opened; {n} file{'s' * (n != 1)} skipped: "
                f"{', '.join(s.path.name for s in skipped)} (the corpus label's tooltip says "
                "why)", 20000)
        elif text.startswith("counts"):
            self.window.show_message("Counts opened: the bigram AUROC and frequency views use "
                                     "them; the views that read texts need corpus files", 8000)
        else:
            self.window.show_message("Corpus opened: the views that read texts use it now",
                                     5000)

    def _show(self, text: str, skipped=()) -> None:
        """The label's text; its tooltip says how the corpus is counted and lists the
        folder entries skipped."""
        self.text = text
        self.label.setText(text)
        tip = (f"{TOOLTIP}\nText column: {self.text_column}; counted "
               f"{counted_by(self.workers, self.scheduler)}")
        if skipped:
            items = skipped_items(skipped, TOOLTIP_SKIPPED)
            tip += "\n\nNot read (skipped):\n" + "\n".join(items)
        self.label.set_note(tip)

    def _failed(self, exc, _message: str = "") -> None:
        self.label.setText(self.text)
        hint = (" Choose the column with Corpus › Text column…"
                if "name the column that holds the text" in str(exc) else "")
        QMessageBox.warning(self.window, "Corpus", f"The corpus cannot be used: {exc}{hint}")

    def _quiet_failure(self, exc, _message: str = "") -> None:
        self.label.setText(self.text)
        remember(CORPUS, [])
