"""Training series (issue 20): a per-head metric against the training step, a line per
head, for the checkpoints of a training series; the selected head is drawn thick, and a
click on a point opens that checkpoint as the main model.

The computation is `core.compare.series.iter_series` (one checkpoint per worker process, cached
per checkpoint), started by "Compute" as a job with progress and Cancel; it needs no main
model. The step axis is the figure's symlog axis (`core.compare.series.step_position`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import QFileDialog, QLabel, QListWidget, QPushButton, QVBoxLayout

from detokgui.core.base.errors import InputError
from detokgui.core.compare.head_metrics import CORPUS_METRICS, HEAD_METRICS, METRIC_LABELS
from detokgui.core.compare.series import (
    iter_series,
    series_folder,
    series_steps,
    step_position,
    step_ticks,
)
from detokgui.core.model.conventions import INK_COLOUR
from detokgui.core.position_side.positional import HEAD_LABELS
from detokgui.gui.controls import check_box, combo_box, spin_box
from detokgui.gui.flow_layout import FlowLayout
from detokgui.gui.panels.base import Panel
from detokgui.gui.plots import PlotFrame, add_plot, head_color, set_title

JOB_KEY = "series"


def _button(text: str, slot, tip: str = "") -> QPushButton:
    button = QPushButton(text)
    button.setToolTip(tip)
    button.clicked.connect(slot)
    return button


class SeriesPanel(Panel):
    title = "Training series"
    view_name = "series"
    tooltip = ("Per-head metrics against the training step for the checkpoints of a training "
               "series; click a point to open that checkpoint")

    def __init__(self, state, jobs, parent=None):
        super().__init__(state, jobs, parent)
        self.checkpoints: list[tuple[str, int]] = []
        self.series = None  # the drawn core.compare.series.SeriesResult
        lay = QVBoxLayout(self)

        pick = FlowLayout()  # rows wrap: the window's minimum width is not theirs
        pick.addWidget(_button("Series folder…", lambda: self.choose_folder(),
                               "A folder of step-* checkpoint folders (as "
                               "scripts/train_series.py writes): its checkpoints, by step"))
        pick.addWidget(_button("Add checkpoint…", lambda: self.add_checkpoint(),
                               "Add one checkpoint folder (its step read from the name, e.g. "
                               "step-000128, else its place in the list)"))
        pick.addWidget(_button("Clear", lambda: self.set_checkpoints([])))
        lay.addLayout(pick)
        self.list = QListWidget()
        self.list.setMaximumHeight(72)
        self.list.setToolTip("The checkpoints of the series and their steps")
        lay.addWidget(self.list)

        row = FlowLayout()
        row.addWidget(QLabel("metric"))
        self.metric_box = combo_box((m, m) for m in HEAD_METRICS)
        for i, m in enumerate(HEAD_METRICS):
            self.metric_box.setItemData(i, METRIC_LABELS[m], Qt.ToolTipRole)
        self.metric_box.currentIndexChanged.connect(lambda _: self.draw_series())
        row.addWidget(self.metric_box)
        row.addWidget(QLabel("query tokens"))
        self.queries = spin_box(1, 50257, "Seeded sample of query tokens per checkpoint")
        self.queries.setValue(256)
        row.addWidget(self.queries)
        self.use_corpus = check_box("with corpus", "Compute the corpus metrics (mean bigram "
                                    "AUROC, Spearman ρ(T_e, count)) with the chosen corpus")
        self.run_button = _button("Compute", lambda: self.start())
        self.cancel_button = _button("Cancel", lambda: self.cancel())
        self.cancel_button.setEnabled(False)
        for w in (self.use_corpus, self.run_button, self.cancel_button):
            row.addWidget(w)
        lay.addLayout(row)

        self.frame = PlotFrame("Training series", self.table, analysis="series")
        self.plot = add_plot(self.frame, bottom="training step", grid="xy")
        self.plot.addLegend(offset=(-10, 10), labelTextSize="8pt", labelTextColor=INK_COLOUR)
        lay.addWidget(self.frame, 1)
        lay.addWidget(self.status)

        jobs.progress.connect(self._progress)
        self.status.retry.connect(lambda name: self.start() if name == JOB_KEY else None)
        state.headChanged.connect(self.when_visible(self.draw_series))
        self.status.setText("Choose a series folder (step-* checkpoints) or add checkpoints, "
                            "then Compute.")

    # ------------------------------------------------------------------ checkpoints

    def choose_folder(self, folder: str | None = None) -> None:
        folder = folder or QFileDialog.getExistingDirectory(self, "Series folder")
        if not folder:
            return
        try:
            self.set_checkpoints(series_folder(folder))
        except InputError as exc:
            self.status.setText(str(exc))

    def add_checkpoint(self, folder: str | None = None) -> None:
        folder = folder or QFileDialog.getExistingDirectory(self, "Checkpoint folder")
        if not folder:
            return
        names = [c for c, _ in self.checkpoints] + [str(folder)]
        self.set_checkpoints(list(zip(names, series_steps(names))))

    def set_checkpoints(self, checkpoints) -> None:
        self.checkpoints = [(str(c), int(s)) for c, s in checkpoints]
        self.list.clear()
        self.list.addItems([f"step {s}: {c}" for c, s in self.checkpoints])
        self.run_button.setEnabled(bool(self.checkpoints))
        self.status.setText(f"{len(self.checkpoints)} checkpoints" if self.checkpoints
                            else "No checkpoints chosen.")

    # ------------------------------------------------------------------ the job

    def start(self) -> None:
        if not self.checkpoints:
            return
        names, steps = (list(t) for t in zip(*self.checkpoints))
        corpus = list(self.state.corpus) if self.use_corpus.isChecked() else []
        if self.use_corpus.isChecked() and not corpus:
            self.status.setText("No corpus is chosen (File > Corpus); computing without.")
        n_queries = self.queries.value()
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.status.begin(JOB_KEY)
        self.jobs.submit(JOB_KEY, lambda: iter_series(names, steps, corpus=corpus or None,
                                                      n_queries=n_queries),
                         self._done, label="Training series",
                         on_error=lambda _exc, msg: self._finish(msg.strip().splitlines()[-1]),
                         on_cancel=lambda: self._finish("Training series cancelled"))

    def cancel(self) -> None:
        self.jobs.cancel(JOB_KEY)

    def _finish(self, stopped: str = "") -> None:
        """The job ended: the buttons as before; `stopped`: why it failed or stopped."""
        self.run_button.setEnabled(bool(self.checkpoints))
        self.cancel_button.setEnabled(False)
        self.status.end(JOB_KEY)
        if stopped:
            self.status.stopped(JOB_KEY, stopped)

    @Slot(str, float, str)
    def _progress(self, key: str, fraction: float, message: str) -> None:
        if key == JOB_KEY:
            self.status.setText(f"{fraction:.0%} {message}")

    def _done(self, result) -> None:
        self._finish()
        self.series = result
        cached = sum(result.cached)
        self.status.setText(f"{len(result.checkpoints)} checkpoints, steps "
                            f"{min(result.steps)}-{max(result.steps)} ({cached} from the cache); "
                            "click a point to open that checkpoint")
        self.draw_series()

    # ------------------------------------------------------------------ drawing

    def draw_series(self) -> None:
        self.plot.clear()
        res = self.series
        if res is None:
            return
        m = self.metric_box.currentData()
        order = res.order()
        steps = [res.steps[i] for i in order]
        x = step_position(steps)
        values = res.metric(m)[order]
        sel = self.state.head
        for h in range(values.shape[1]):
            thick = h == sel
            item = pg.PlotDataItem(
                x, values[:, h], pen=pg.mkPen(head_color(h), width=3 if thick else 1),
                symbol="o", symbolSize=8 if thick else 5, symbolBrush=head_color(h),
                symbolPen=None, name=f"head {h}", data=[(order[k], h) for k in range(len(x))],
                antialias=True)
            item.setZValue(2 if thick else 1)
            item.setCurveClickable(False)
            item.sigPointsClicked.connect(self._points_clicked)
            self.plot.addItem(item)
        self.plot.getAxis("bottom").setTicks([step_ticks(max(steps))])
        classes = [list(enumerate(HEAD_LABELS))]
        self.plot.getAxis("left").setTicks(classes if m == "head_class" else None)
        label = METRIC_LABELS[m]
        if m in CORPUS_METRICS and not np.isfinite(values).any():
            label += " (needs a corpus: tick 'with corpus')"
        self.plot.setLabel("left", m)
        set_title(self.plot, label)

    def _points_clicked(self, _item, points, _ev=None) -> None:
        if len(points):
            i, h = points[0].data()
            checkpoint = self.series.checkpoints[i]
            self.state.set_head(int(h))
            self.status.setText(f"Opening {Path(checkpoint).name} as the main model…")
            self.state.request_model(checkpoint)

    def table(self):
        return self.series.table() if self.series is not None else None
