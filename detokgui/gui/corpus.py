"""The corpus the corpus and text views read: the Corpus menu, a status-bar label, and the
paths in AppState. Choosing files checks them off the GUI thread (a folder may hold many
files) before they become the shared corpus; the last corpus is remembered."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QFileDialog

from detokgui.gui.elided_label import ElidedLabel
from detokgui.gui.options import remember, remembered

CORPUS, LAST_FOLDER = "corpus/paths", "corpus/last_folder"
FILE_FILTER = "Corpus files (*.txt *.jsonl *.txt.gz *.jsonl.gz);;All files (*)"


TOOLTIP = "The corpus read by the corpus and text views (Corpus menu)"
TOOLTIP_SKIPPED = 20  # skipped entries listed in the label's tooltip


def describe(paths, n_files: int, n_bytes: int, n_skipped: int = 0) -> str:
    from detokgui.core.model.sources.demo import sample_corpus

    if [Path(p) for p in paths] == [sample_corpus()]:
        name = "sample corpus"
    elif len(paths) == 1:
        name = Path(paths[0]).name
    else:
        name = f"{Path(paths[0]).name} + {len(paths) - 1} more"
    skipped = f", {n_skipped} skipped" if n_skipped else ""
    return f"{name} ({n_files} file{'s' * (n_files != 1)}, {n_bytes / 1e6:.1f} MB{skipped})"


def check_corpus(paths):
    """Job body: the corpus files behind `paths` exist, are regular files, and each starts
    with a readable document (InputError if not: a named pipe or device, binary, empty,
    not UTF-8, bad JSON lines); returns the paths, a one-line description and the folder
    entries skipped (`core.corpus.documents.Skipped`). Later problems surface when a view reads
    on."""
    from detokgui.core.base.progress import Progress
    from detokgui.core.corpus.documents import CorpusReader, scan_corpus

    scan = scan_corpus(paths)
    files = scan.files
    for k, f in enumerate(files):
        next(iter(CorpusReader([f])))
        yield Progress((k + 1) / len(files), f"Checking {f.name}")
    n_bytes = sum(f.stat().st_size for f in files)
    return (tuple(str(p) for p in paths),
            describe(paths, len(files), n_bytes, len(scan.skipped)), tuple(scan.skipped))


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
        act(menu, "Open corpus files…", self.ask_files, QKeySequence("Ctrl+Shift+O"),
            ".txt or .jsonl files (a \"text\" field per line), optionally .gz")
        act(menu, "Open corpus folder…", self.ask_folder, None,
            "Every .txt / .jsonl (.gz) file below a folder")
        act(menu, "Use sample corpus", self.use_sample, QKeySequence("Ctrl+Shift+K"),
            "3 MB of public-domain English shipped with detokgui (Austen, Bibles, State of "
            "the Union addresses, Bierce)")
        act(menu, "Clear corpus", self.clear, None, "Use no corpus")
        self.state.corpusRequested.connect(self.open)  # e.g. a panel's "Use sample corpus"

    def restore(self) -> None:
        """Reopen the last corpus if its files are still there."""
        paths = remembered(CORPUS, [])
        if paths and all(Path(p).exists() for p in paths):
            self.open(paths, quiet=True)

    def ask_files(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(
            self.window, "Open corpus files", remembered(LAST_FOLDER, str(Path.home())),
            FILE_FILTER)
        if files:
            remember(LAST_FOLDER, str(Path(files[0]).parent))
            self.open(files)

    def ask_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self.window, "Open corpus folder", remembered(LAST_FOLDER, str(Path.home())))
        if folder:
            remember(LAST_FOLDER, folder)
            self.open([folder])

    def use_sample(self) -> None:
        from detokgui.core.model.sources.demo import sample_corpus

        self.open([str(sample_corpus())])

    def clear(self) -> None:
        self.state.set_corpus(())
        self._show("no corpus")
        remember(CORPUS, [])

    def open(self, paths, quiet: bool = False) -> None:
        paths = [str(p) for p in paths]
        self.label.setText("checking corpus…")
        self.window.jobs.submit("corpus", lambda: check_corpus(paths), self._opened,
                                label="Checking the corpus",
                                on_error=self._quiet_failure if quiet else self._failed)

    def _opened(self, result) -> None:
        paths, text, skipped = result
        self._show(f"corpus: {text}", skipped)
        self.state.set_corpus(paths)
        remember(CORPUS, list(paths))
        if skipped:
            n = len(skipped)
            self.window.show_message(
                f"Corpus opened; {n} file{'s' * (n != 1)} skipped: "
                f"{', '.join(s.path.name for s in skipped)} (the corpus label's tooltip says "
                "why)", 20000)
        else:
            self.window.show_message("Corpus opened: the views that read texts use it now",
                                     5000)

    def _show(self, text: str, skipped=()) -> None:
        """The label's text; its tooltip lists the folder entries skipped."""
        self.text = text
        self.label.setText(text)
        tip = TOOLTIP
        if skipped:
            lines = [f"{s.path} ({s.reason})" for s in skipped[:TOOLTIP_SKIPPED]]
            if len(skipped) > TOOLTIP_SKIPPED:
                lines.append(f"and {len(skipped) - TOOLTIP_SKIPPED} more")
            tip += "\n\nNot read (skipped):\n" + "\n".join(lines)
        self.label.set_note(tip)

    def _failed(self, exc, _message: str = "") -> None:
        from PySide6.QtWidgets import QMessageBox

        self.label.setText(self.text)
        QMessageBox.warning(self.window, "Corpus", f"The corpus cannot be used: {exc}")

    def _quiet_failure(self, exc, _message: str = "") -> None:
        self.label.setText(self.text)
        remember(CORPUS, [])
