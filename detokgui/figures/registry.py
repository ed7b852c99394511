"""The registry of exportable figures: what each one reproduces, which conventions it uses,
whether it needs a corpus, and the function that draws it.

A figure is a function `build(ctx: FigureContext) -> Drawn`, or a generator function
yielding `core.base.progress.Progress` and returning `Drawn` (for long computations: they stay
cancellable and report progress), registered with `@figure(...)`:

    @figure("fig05_te_frequency", paper="Fig 5", needs_corpus=True,
            title="T_e of every token against its corpus count, heads 1 and 7",
            convention="T_e: mean over positions of b^QK e_v^T / sigma(e_v + p_j)")
    def fig5(ctx: FigureContext) -> Job[Drawn]:
        counts = yield from ctx.memo("corpus.unigrams", lambda: some_counting_job(ctx.corpus))
        fig, axes = style.new_figure(...)
        ...
        return Drawn(fig, table, notes="heads 1, 7")

`key` is the file stem (files `key.png|svg|pdf|csv`) and orders the index (figures sort by
key: `fig02a_...` < `fig03_...` < `fig12_...` < `study_...`). A builder raises
`FigureSkipped(reason)` when it cannot be drawn for this model or corpus (the index says
why). `planned(...)` reserves a key for a figure that is not implemented yet; a later
`@figure` with the same key replaces it, whatever the import order.

Modules that register figures are listed in `FIGURE_MODULES` and imported by
`load_figures()`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from detokgui.core.base.progress import Job
from detokgui.core.base.tables import Table
from detokgui.figures.defaults import DEFAULT_MAX_TEXTS

FIGURE_MODULES = ("paper", "studies", "corpus", "text", "compare", "series")


class FigureSkipped(Exception):
    """This figure cannot be drawn here; the message says why (it goes into index.md)."""


@dataclass
class Drawn:
    """What a builder returns: the figure, its data as a table (written as CSV), and
    optionally the conventions (when they depend on the run) and notes for the index
    (the heads, positions and samples actually used), and whether it used the corpus
    though it does not need one."""

    figure: Figure
    data: Table
    convention: str | None = None
    notes: str = ""
    uses_corpus: bool = False  # a figure that needs no corpus but drew a part from it


Builder = Callable[["FigureContext"], "Drawn | Job[Drawn]"]


@dataclass(frozen=True)
class FigureSpec:
    key: str
    paper: str  # the paper's figure number, or the study and feature id
    title: str
    convention: str
    needs_corpus: bool
    build: Builder | None  # None: planned, not implemented yet
    pending: str = ""  # why a planned figure is not there yet
    #: A FigureContext field ("compare", "series") the figure needs: the figure is part of an
    #: export only when that field is given (not listed, not even as skipped, otherwise).
    only_with: str = ""

    @property
    def implemented(self) -> bool:
        return self.build is not None

    def title_for(self, n_positions: int) -> str:
        """The title with its query positions as this model uses them: "{i}" is the
        paper's i = 500 and "{i3}" its i = 50, 500, 1000, each scaled to the model's
        positions (`conventions.paper_position`), e.g. "i = 62" for 128 positions."""
        from detokgui.core.model.conventions import PAPER_QUERY_POSITION, paper_position

        def at(ps) -> str:
            return "i = " + ", ".join(str(i) for i in sorted({paper_position(p, n_positions)
                                                               for p in ps}))

        return (self.title.replace("{i}", at([PAPER_QUERY_POSITION]))
                .replace("{i3}", at(PAPER_POSITIONS)))


FIGURES: dict[str, FigureSpec] = {}

#: The query positions of the paper's all-heads position figures (Fig 9, 10).
PAPER_POSITIONS = (50, 500, 1000)


def figure(key: str, *, paper: str, title: str, convention: str, needs_corpus: bool = False,
           only_with: str = ""):
    """Register the decorated builder under `key` (replacing a planned entry).
    `only_with`: see `FigureSpec.only_with`."""

    def register(fn: Builder) -> Builder:
        FIGURES[key] = FigureSpec(key, paper, title, convention, needs_corpus, fn,
                                  only_with=only_with)
        return fn

    return register


def planned(key: str, *, paper: str, title: str, convention: str, needs_corpus: bool,
            pending: str) -> None:
    """Reserve `key` for a figure not implemented yet (never replaces an implemented one)."""
    if key not in FIGURES:
        FIGURES[key] = FigureSpec(key, paper, title, convention, needs_corpus, None, pending)


def load_figures(given: Sequence[str] = ()) -> list[FigureSpec]:
    """Import every figure module; the registered figures in index order, those that
    need an optional input (`FigureSpec.only_with`) only when it is among `given`
    (e.g. ("compare",))."""
    for name in FIGURE_MODULES:
        importlib.import_module(f"detokgui.figures.{name}")
    return [FIGURES[k] for k in sorted(FIGURES)
            if not FIGURES[k].only_with or FIGURES[k].only_with in given]


@dataclass
class FigureContext:
    """What a builder gets: the model, the corpus files (empty: none given), an optional
    override of the paper's heads, the most corpus windows the text figures read, a
    cache shared by the figures of one export, an optional second model B to compare
    with (`compare`, a Layer0), and the checkpoints (and steps) of a training series
    (`series`; empty: none given)."""

    layer: Any
    corpus: tuple[Path, ...] = ()
    heads: tuple[int, ...] | None = None
    cache: dict = field(default_factory=dict)
    max_texts: int = DEFAULT_MAX_TEXTS
    compare: Any = None
    series: tuple[str, ...] = ()  # checkpoints of a training series (figures.series)
    series_steps: tuple[int, ...] | None = None

    def given(self) -> tuple[str, ...]:
        """The optional inputs present (for `load_figures`)."""
        return (("compare",) if self.compare is not None else ()) + (
            ("series",) if self.series else ())

    def texts(self):
        """The first `max_texts` windows of the corpus (`core.text_side.empirical.TextSource`)."""
        from detokgui.core.text_side.empirical import TextSource

        return TextSource.corpus(self.corpus, max_texts=self.max_texts)

    @property
    def n_positions(self) -> int:
        return self.layer.n_positions

    def paper_heads(self, wanted: Sequence[int]) -> list[int]:
        """The heads a paper figure shows (e.g. (1, 7)), or the --heads override. Heads the
        model lacks are replaced by its highest unused heads, keeping the count."""
        H = self.layer.n_heads
        if self.heads:
            return [h for h in self.heads if 0 <= h < H] or [0]
        keep = [h for h in wanted if h < H]
        spare = [h for h in range(H - 1, -1, -1) if h not in keep]
        keep += spare[: max(0, min(len(wanted), H) - len(keep))]
        return sorted(keep)

    def paper_position(self, p: int) -> int:
        """A query position of the paper's GPT-2 figures, for this model
        (`conventions.paper_position`)."""
        from detokgui.core.model.conventions import paper_position

        return paper_position(p, self.n_positions)

    def memo(self, key: str, make: Callable[[], Any]) -> Job:
        """Generator: the value cached under `key`, else `make()` (a value, or a job whose
        progress is passed on) computed once per export and cached."""
        if key not in self.cache:
            value = make()
            if inspect.isgenerator(value):
                value = yield from value
            self.cache[key] = value
        return self.cache[key]
