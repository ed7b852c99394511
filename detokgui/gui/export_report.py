"""File > Export report…: the same page as `detokgui export report` (`figures.report`: the
model card, the figures, the head cards and a token search in one self-contained HTML
file), run on the job runner with a progress dialog and Cancel.

The dialog asks for the file, whether to use the app's current corpus and model B (when
they are open), whether to draw the figures, and the page's size budget. A
cancelled or failed export writes nothing (the page is written atomically at the end);
on success the status bar says where it is and the user may open it in the browser.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QCheckBox, QDoubleSpinBox, QFileDialog

from detokgui.figures.defaults import DEFAULT_PAGE_MB
from detokgui.gui.export_figures import ExportDialog, FigureExporter
from detokgui.gui.options import remembered

JOB_KEY = "export-report"
# remembered between sessions
FILE, USE_CORPUS, USE_B, FIGURES, PAGE_MB = (
    "report/file", "report/use_corpus", "report/use_b", "report/figures", "report/page_mb")


@dataclass(frozen=True)
class ReportRequest:
    """What the dialog asks for."""

    file: str
    corpus: tuple[str, ...]
    compare: bool  # model B of the window's comparison
    figures: bool
    page_mb: float


class ExportReportDialog(ExportDialog):
    """The file, "use the current corpus", "compare with model B", "figures", page MB."""

    def __init__(self, parent, corpus: tuple[str, ...], corpus_text: str, b_name: str | None):
        super().__init__(parent, "Export report",
                         "One HTML file to open in any browser, offline: the model card,\n"
                         "the figures, a card per head and a token search.", corpus)
        self.file = self.add_path("File", FILE, str(Path.home() / "detokgui-report.html"),
                                  self.ask_file, "Written only when complete")
        self.add_corpus_box(corpus_text, USE_CORPUS, "The corpus figures, the token table's "
                            "most frequent tokens and the bigram partners' counts")
        self.use_b = self.add_offer("Compare with model B", b_name,
                                    "none: Model › Compare with…", USE_B, "Model B's card, "
                                    "the matched heads and the comparison figures")
        self.figures = QCheckBox("Draw the figures (the slowest part)")
        self.figures.setChecked(bool(remembered(FIGURES, True)))
        self.form.addRow("", self.figures)
        self.choices[FIGURES] = self.figures.isChecked
        self.page_mb = QDoubleSpinBox()
        self.page_mb.setRange(1.0, 1000.0)
        self.page_mb.setDecimals(1)
        self.page_mb.setSuffix(" MB")
        self.page_mb.setValue(float(remembered(PAGE_MB, DEFAULT_PAGE_MB)))
        self.page_mb.setToolTip("The page's size: the token search's table gets what the "
                                "figures leave, all tokens when they fit, else the most "
                                "frequent that do")
        self.form.addRow("Page size", self.page_mb)
        self.choices[PAGE_MB] = self.page_mb.value
        self.finish()

    def ask_file(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Report file", self.file.text(),
                                              "HTML (*.html *.htm)")
        if path:
            self.file.setText(path)

    def ready(self) -> bool:
        return bool(self.file.text().strip())

    def request(self) -> ReportRequest:
        return ReportRequest(self.file.text().strip(), self.chosen_corpus(),
                             self.use_b.isChecked(), self.figures.isChecked(),
                             self.page_mb.value())


def report_job(layer, layer_b, req: ReportRequest, session: str | None = None):
    """Job body (a generator on a worker thread): the report of `req`; `session`: the
    window's session file, named in the page's provenance record."""
    from detokgui.figures.report import iter_report

    return (yield from iter_report(layer, req.file, compare=layer_b if req.compare else None,
                                   corpus=req.corpus, figures=req.figures,
                                   page_mb=req.page_mb, session=session))


class ReportExporter(FigureExporter):
    """The File menu's "Export report…" of a main window."""

    job_key = JOB_KEY
    title = "Export report"
    what, target = "Report", "file"

    def dialog(self, corpus_text: str) -> ExportDialog:
        b = self.window.state.layer_b
        return ExportReportDialog(self.window, self.window.state.corpus, corpus_text,
                                  None if b is None else str(b.name))

    def start(self, req: ReportRequest) -> None:
        state = self.window.state
        layer, layer_b, session = state.layer, state.layer_b, state.session_path
        self.submit(req, lambda: report_job(layer, layer_b, req, session),
                    "Exporting the report")

    @Slot(object)
    def _done(self, result) -> None:
        self._offer(f"Wrote the report {result.out} ({result.bytes / 1e6:.1f} MB)",
                    "Open it in the browser?", result.out)
