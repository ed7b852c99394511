"""Export every registered figure into one folder: `KEY.png|svg|pdf` (per `formats`), its
data as `KEY.csv`, and `index.md` listing each figure with the paper's figure number, the
conventions it uses and the corpus it used, or why it was skipped.

All-or-nothing: everything is written into a temporary folder beside the target first.
A new target folder is that temporary folder renamed; an existing one receives the new
files by renames only after every figure is done (with Ctrl+C held back for those few
renames), and loses the files of registered figures this export did not produce, so the
folder always matches its index. Cancelling (Ctrl+C, or closing the generator from a GUI
worker) before that leaves the target as it was and no temporary files.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from detokgui.core.base.atomic import atomic_folder, sweep_stale_parts
from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import Job, Progress, rescaled, run
from detokgui.core.base.tables import write_csv
from detokgui.core.model.conventions import temperature_label
from detokgui.core.model.titles import model_name
from detokgui.figures import style
from detokgui.figures.registry import (
    DEFAULT_MAX_TEXTS,
    FIGURES,
    Drawn,
    FigureContext,
    FigureSkipped,
    FigureSpec,
    load_figures,
)

FORMATS = ("png", "svg", "pdf")
INDEX = "index.md"


@dataclass
class FigureRecord:
    """One figure of an export: the files written, or why it was skipped."""

    spec: FigureSpec
    files: list[str] = field(default_factory=list)
    convention: str = ""
    notes: str = ""
    skipped: str = ""
    uses_corpus: bool = False


@dataclass
class ExportReport:
    out: Path
    records: list[FigureRecord]

    @property
    def built(self) -> list[FigureRecord]:
        return [r for r in self.records if not r.skipped]

    @property
    def skipped(self) -> list[FigureRecord]:
        return [r for r in self.records if r.skipped]


def check_formats(formats: str | Sequence[str]) -> tuple[str, ...]:
    """'png,svg' or ['png', 'svg'] -> ('png', 'svg'); InputError for anything else."""
    items = formats.split(",") if isinstance(formats, str) else list(formats)
    out = []
    for f in (x.strip().lower().lstrip(".") for x in items):
        if not f:
            continue
        if f not in FORMATS:
            raise InputError(f"Unknown figure format {f!r}: choose from {', '.join(FORMATS)}.")
        if f not in out:
            out.append(f)
    if not out:
        raise InputError(f"No figure format was given: choose from {', '.join(FORMATS)}.")
    return tuple(out)


def check_corpus(paths: Sequence[str | Path]) -> tuple[Path, ...]:
    """The corpus files and folders; "sample" (when no such file exists) is the sample
    corpus shipped in the package, as everywhere in the CLI."""
    from detokgui.core.corpus.documents import SAMPLE_NAME

    out = []
    for p in paths:
        path = Path(p)
        if str(p) == SAMPLE_NAME and not path.exists():
            from detokgui.core.model.sources.demo import sample_corpus

            path = sample_corpus()
        if not (path.is_file() or path.is_dir()):
            raise InputError(f"The corpus file {path} does not exist or is not a file or "
                             "folder.")
        out.append(path)
    return tuple(out)


def iter_export_figures(layer, out: str | Path, formats: str | Sequence[str] = FORMATS,
                        corpus: Sequence[str | Path] = (), heads: Sequence[int] | None = None,
                        keys: Sequence[str] | None = None,
                        max_texts: int = DEFAULT_MAX_TEXTS, *, dpi: int | None = None,
                        data: bool = True, compare=None, series: Sequence[str] = (),
                        series_steps: Sequence[int] | None = None,
                        session: str | None = None) -> Job[ExportReport]:
    """Generator job: draw and write every registered figure (or only `keys`) into `out`;
    yields Progress per figure (and within long figures); returns an `ExportReport`.
    The text figures read at most `max_texts` corpus windows; the counts, AUROC and
    frequency figures use the whole corpus. `dpi`: PNG resolution (default
    style.RC["savefig.dpi"]); `data=False` writes no CSV files (a gallery). `compare`: a
    second model B (a Layer0): the comparison figures join the set. `series`: the
    checkpoints of a training series (with `series_steps`): the series figure joins it.
    Every file carries its figure's provenance record (`figure_record`; `session`: the
    session file of the window that exported them), a CSV in NAME.csv.json, and the index
    says so."""
    from detokgui.core.base.checks import as_int, check_heads

    max_texts = as_int(max_texts, "maximum number of texts")
    if dpi is not None:
        dpi = as_int(dpi, "PNG resolution")
        if not 20 <= dpi <= 1200:
            raise InputError(f"The PNG resolution must be 20 to 1200 dpi, not {dpi}.")
    if max_texts < 1:
        raise InputError(f"The maximum number of texts must be at least 1, not {max_texts}.")

    fmts = check_formats(formats)
    files = check_corpus(corpus)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} exists and is not a folder.")
    ctx = FigureContext(layer, files, tuple(check_heads(layer, heads)) if heads else None,
                        max_texts=max_texts, compare=compare,
                        series=tuple(str(c) for c in series),
                        series_steps=tuple(int(s) for s in series_steps)
                        if series_steps else None)
    specs = load_figures(ctx.given())
    if keys:
        known = {s.key for s in specs}
        unknown = [k for k in keys if k not in known]
        if unknown:
            if unknown[0] in FIGURES:
                need = FIGURES[unknown[0]].only_with
                what = "CKPT ..." if need == "series" else "MODEL"
                raise InputError(f"The figure {unknown[0]!r} needs --{need} {what}.")
            raise InputError(f"Unknown figure {unknown[0]!r}: choose from {', '.join(sorted(FIGURES))}.")
        specs = [s for s in specs if s.key in set(keys)]
    records: list[FigureRecord] = []
    n = len(specs)
    with _staging(out) as stage:
        for k, spec in enumerate(specs):
            lo, hi = k / n, (k + 1) / n
            yield Progress(lo, f"[{k + 1}/{n}] {spec.key} ({spec.paper})")
            rec = yield from _export_one(spec, ctx, stage, fmts, lo, hi, dpi, data, session)
            records.append(rec)
        with open(stage / INDEX, "w", encoding="utf-8", newline="\n") as f:
            f.write(index_markdown(layer, files, fmts, records, max_texts, data, compare))
        yield Progress(1.0, f"[{n}/{n}] writing {INDEX}")
    return ExportReport(out, records)


def export_figures(layer, out, formats=FORMATS, corpus=(), heads=None, keys=None,
                   on_progress=None, max_texts=DEFAULT_MAX_TEXTS, dpi=None,
                   data=True, compare=None, series=(), series_steps=None,
                   session=None) -> ExportReport:
    """`iter_export_figures` run to completion."""
    return run(iter_export_figures(layer, out, formats, corpus, heads, keys, max_texts,
                                   dpi=dpi, data=data, compare=compare, series=series,
                                   series_steps=series_steps, session=session), on_progress)


def figure_record(spec: FigureSpec, ctx: FigureContext, rec: FigureRecord,
                  dpi: int | None = None, session: str | None = None) -> dict:
    """The provenance record (`core.model.provenance.provenance_record`) of one exported
    figure: the model (and model B), "figure KEY", its paper reference and conventions,
    the options of the export (heads, texts, resolution, series) and the corpus it read."""
    from detokgui.core.corpus.provenance import corpus_identity
    from detokgui.core.model.provenance import provenance_record

    options = {"heads": list(ctx.heads) if ctx.heads else None, "max_texts": ctx.max_texts,
               "dpi": dpi or style.RC["savefig.dpi"]}
    if ctx.series:
        options["series"] = list(ctx.series)
        options["series_steps"] = list(ctx.series_steps) if ctx.series_steps else None
    return provenance_record(
        ctx.layer, analysis=f"figure {spec.key}",
        conventions={"paper": spec.paper, "convention": rec.convention, "notes": rec.notes},
        options=options, layer_b=ctx.compare, session=session,
        corpus=corpus_identity([str(p) for p in ctx.corpus])
        if rec.uses_corpus and ctx.corpus else None)


def _export_one(spec: FigureSpec, ctx: FigureContext, stage: Path, fmts, lo: float,
                hi: float, dpi: int | None = None, data: bool = True,
                session: str | None = None) -> Job[FigureRecord]:
    rec = FigureRecord(spec, convention=spec.convention)
    if spec.needs_corpus and not ctx.corpus:
        rec.skipped = "needs a corpus: give --corpus FILE"
        return rec
    if not spec.implemented:
        rec.skipped = f"not in this version yet: {spec.pending}"
        return rec
    try:
        with style.style():
            result = spec.build(ctx)
            if inspect.isgenerator(result):
                result = yield from rescaled(result, lo, hi)
    except (FigureSkipped, InputError) as exc:
        rec.skipped = str(exc)
        return rec
    drawn: Drawn = result
    rec.convention = drawn.convention or spec.convention
    rec.notes = drawn.notes
    rec.uses_corpus = drawn.uses_corpus or spec.needs_corpus
    record = figure_record(spec, ctx, rec, dpi, session)
    with style.style():
        for fmt in fmts:
            name = f"{spec.key}.{fmt}"
            style.save(drawn.figure, stage / name, fmt, dpi if fmt == "png" else None,
                       provenance=record)
            rec.files.append(name)
    if data:
        write_csv(stage / f"{spec.key}.csv", drawn.data, provenance=record)
        rec.files += [f"{spec.key}.csv", f"{spec.key}.csv.json"]
    return rec


# --------------------------------------------------------------------------- index


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def index_markdown(layer, corpus: Sequence[Path], fmts, records: list[FigureRecord],
                   max_texts: int = DEFAULT_MAX_TEXTS, data: bool = True,
                   compare=None) -> str:
    from detokgui import __version__

    corpus_text = ", ".join(f"`{p.name}`" for p in corpus) if corpus else "none"
    lines = [
        "# Figures exported by detokgui",
        "",
        (f"- model: `{model_name(layer)}`, {layer.family_label} (V = {layer.n_vocab}, "
         f"L = {layer.n_positions}, d = {layer.d}, {layer.n_heads} heads, d' = {layer.d_head}; "
         f"softmax temperature {temperature_label(layer)})"),
        f"- corpus: {corpus_text}",
        *([(f"- compared with: `{model_name(compare)}`, {compare.summary} (model B of the "
            "comparison figures)")] if compare is not None else []),
        (f"- texts: the corpus figures count tokens and bigrams over the whole corpus; the "
         f"text figures (observed attention, KL contributions) read its first {max_texts} "
         f"windows of at most {layer.n_positions} tokens (`--max-texts`)"),
        f"- formats: {', '.join(fmts)}" + (", and each figure's data as CSV" if data else
                                            " (no CSV data: `--no-data`)"),
        (f"- detokgui {__version__}; paper = Kamoda et al., *Weight-based Analysis of "
        "Detokenization in Language Models* (NAACL Findings 2025)"),
        *provenance_lines(layer, compare),
        "",
        "| paper | figure | files | conventions | corpus | notes |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in records:
        if r.skipped:
            continue
        links = " · ".join(f"[{Path(f).suffix[1:]}]({f})" for f in r.files)
        used = corpus_text if r.uses_corpus else "— (weights only)"
        lines.append(f"| {_md(r.spec.paper)} | {_md(r.spec.title_for(layer.n_positions))} | {links} | "
                     f"{_md(r.convention)} | {used} | {_md(r.notes)} |")
    skipped = [r for r in records if r.skipped]
    if skipped:
        lines += ["", "## Skipped", "", "| paper | figure | file stem | conventions | reason |",
                  "| --- | --- | --- | --- | --- |"]
        for r in skipped:
            lines.append(f"| {_md(r.spec.paper)} | {_md(r.spec.title_for(layer.n_positions))} | `{r.spec.key}` | "
                         f"{_md(r.convention)} | {_md(r.skipped)} |")
    return "\n".join(lines) + "\n"


def provenance_lines(layer, compare=None) -> list[str]:
    """The index's provenance lines: where each file's record is, how to read it, and the
    facts every record of the export shares (the models' layer-0 SHA-256 and commits)."""
    from detokgui.core.model.provenance import layer0_digest

    def model(name, lay) -> str:
        commit = f", commit `{lay.revision}`" if getattr(lay, "revision", None) else ""
        return f"  - {name}: layer-0 tensors SHA-256 `{layer0_digest(lay)}`{commit}"

    return [
        ("- provenance: every file carries its record (model, commit, conventions, options, "
         "corpus, date): a PNG text chunk, the SVG's `<metadata>`, the PDF's document "
         "information, a CSV's `NAME.csv.json` beside it; `detokgui provenance FILE` prints "
         "it"),
        model("model", layer),
        *([model("model B", compare)] if compare is not None else []),
    ]


# --------------------------------------------------------------------------- staging


@contextlib.contextmanager
def _staging(out: Path) -> Iterator[Path]:
    """A temporary folder that becomes `out` (new) or whose files replace their
    namesakes in `out` (existing), only if the block completes. A killed run's stale
    staging folder beside `out` is removed first."""
    sweep_stale_parts(out.parent, out.name)
    if not out.exists():
        with atomic_folder(out) as tmp:
            yield tmp
        return
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".part", dir=out.parent))
    try:
        yield tmp
        produced = set(os.listdir(tmp))
        ours = {f"{k}.{e}" for k in FIGURES for e in (*FORMATS, "csv")} | {INDEX}
        with _sigint_held():
            for name in sorted(produced):
                os.replace(tmp / name, out / name)
            for name in sorted(ours - produced):
                with contextlib.suppress(FileNotFoundError):
                    (out / name).unlink()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """Hold Ctrl+C back for the block (main thread only; a no-op elsewhere): the renames
    that publish a finished export are not interrupted half way."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda *a: caught.append(a))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
