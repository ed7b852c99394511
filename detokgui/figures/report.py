"""`detokgui export report`: one self-contained HTML file about a model, to open in any
browser without a server or a network (issue 45).

What it holds:

- the model card: family, shapes, revision, identity and the conventions every number
  of the page uses (and model B's, for a comparison);
- the paper's figures and the studies' figures (`registry.FIGURES`, drawn as by
  `export figures`) as inline SVG, each with its conventions; those that cannot be drawn
  (no corpus, a single model) are listed with the reason;
- a card per head: its class and the measured criteria behind it
  (`positional.iter_classify_heads`), its positional pattern as a small line, its top
  bigram partners (the key -> query pairs of the token table with the highest T_ee, the
  "resulting sequence" of the paper's Table 1; with a corpus, only pairs that occur in
  it, with their count), its composition partners (the layer-1 heads it composes with
  above the random-matrix baseline, `core.composition`; block 1 is read on demand, and
  a one-layer model says so), its sink term (`core.text_side.sinks` over seeded random
  token sequences: the attention to position 0 against a uniform head's, and the term
  that makes position 0 win), and for a comparison the head of B it is matched to;
- a token search: type a token, see its top-k keys by T_ee per head, read from a table
  computed here (`vocab_pass.iter_vocab_pass`, the numbers of `export topk`) and stored
  in the page as base64 typed arrays (key ids as 16- or 32-bit integers, scores as
  float16). All tokens when the table fits its budget, otherwise the N most frequent
  (by the corpus counts when a corpus is given, else the N lowest ids: a BPE
  vocabulary's ids follow its merges, most frequent first); the page says which. The
  budget is what the page's (`page_mb`, default 15 MB) leaves after the figures, the
  vocabulary and the rest (`table_budget`), or `table_mb` when given. The
  search is a few lines of plain JavaScript (`report_assets/report.js`): no library,
  so nothing to fetch or to inline.

A Content-Security-Policy in the page forbids every request (scripts and styles are
inline, images data: URIs), so a mistake that would reach the network fails visibly in
the browser's console instead of leaking. The file is written atomically: an error,
Ctrl+C or a cancelled job leaves no file and no temporary behind.
"""

from __future__ import annotations

import base64
import html
import inspect
import io
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from detokgui.core.base.atomic import sweep_stale_parts, write_text
from detokgui.core.base.checks import as_int
from detokgui.core.base.errors import DetokError, InputError
from detokgui.core.base.progress import Job, Progress, rescaled, run
from detokgui.core.base.provenance import HTML_ID
from detokgui.core.composition.scores import KINDS, composition_job
from detokgui.core.model.conventions import SigmaChoice, sigma_stats_job, temperature_label
from detokgui.core.model.provenance import layer0_digest, provenance_record
from detokgui.core.model.titles import model_name
from detokgui.core.model.tokens import vocabulary
from detokgui.core.position_side.positional import iter_classify_heads
from detokgui.core.text_side.sinks import SampleTexts, iter_sinks
from detokgui.core.token_side.vocab_pass import iter_vocab_pass
from detokgui.figures import style
from detokgui.figures.defaults import DEFAULT_K, DEFAULT_MAX_TEXTS, DEFAULT_PAGE_MB
from detokgui.figures.export import check_corpus
from detokgui.figures.registry import (
    FigureContext,
    FigureSkipped,
    load_figures,
)

#: What a page holds besides the figures, the vocabulary and the table (head cards,
#: model card, style, script): at most this many bytes (GPT-2 small's: 0.1 MB).
PAGE_OVERHEAD_BYTES = 300_000
#: The table's budget when the figures leave less: the page then exceeds `page_mb`.
MIN_TABLE_BYTES = 200_000
#: Pairs listed per head card.
PAIRS_PER_HEAD = 8
SIGMA_TEXT = "σ per token = mean over positions of σ(e_v + p_j), as export topk"
#: Every request the page could make is refused (inline scripts, styles and data: images
#: only).
CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
       "img-src data:")


@dataclass
class TokenTable:
    """The search table: for each row token (`rows`, in table order) and head, the k keys
    with the highest T_ee and their scores."""

    rows: np.ndarray  # [N] token ids
    heads: list[int]
    keys: np.ndarray  # [N, H, k] token ids, best first
    scores: np.ndarray  # [N, H, k] float32
    all_tokens: bool
    order: str  # how the rows were chosen, for the page

    @property
    def k(self) -> int:
        return int(self.keys.shape[2])


@dataclass
class ReportResult:
    out: Path
    bytes: int
    table: TokenTable
    figures: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (key, reason)


def id_bytes(n_vocab: int) -> int:
    """Bytes per token id in the page: 2 while ids fit 16 bits, else 4."""
    return 2 if n_vocab <= 1 << 16 else 4


def b64_size(n: int) -> int:
    """Length of the base64 text of n bytes."""
    return 4 * -(-n // 3)


def table_rows(n_vocab: int, n_heads: int, k: int, budget_bytes: float) -> int:
    """How many row tokens the search table may hold: the most whose base64 text (row
    ids, key ids and float16 scores) fits `budget_bytes`; at least 1, at most n_vocab."""
    per_row = n_heads * k * (id_bytes(n_vocab) + 2) + id_bytes(n_vocab)
    return max(1, min(n_vocab, int(budget_bytes * 3 / 4) // per_row))


def table_budget(page_mb: float, other_bytes: int) -> int:
    """Bytes the token table may take in a page of `page_mb` MB whose figures and
    vocabulary take `other_bytes`: the rest less `PAGE_OVERHEAD_BYTES`, at least
    `MIN_TABLE_BYTES`."""
    return max(MIN_TABLE_BYTES, int(page_mb * 1e6) - other_bytes - PAGE_OVERHEAD_BYTES)


def choose_rows(layer, n: int, counts=None, why: str = "the table's size budget"
                ) -> tuple[np.ndarray, str]:
    """The n row tokens of the table and how they were chosen: the most frequent in the
    corpus (ties by id; tokens it lacks after, by id), else the n lowest ids; `why`
    there are not more."""
    V = layer.n_vocab
    if n >= V:
        return np.arange(V), f"all {V:,} tokens of the vocabulary"
    if counts is not None:
        c = np.asarray(counts.unigrams[:V], dtype=np.int64)
        order = np.lexsort((np.arange(V), -c))[:n]
        return order, f"the {n:,} most frequent of the {V:,} tokens in the corpus ({why})"
    return np.arange(n), (f"the {n:,} lowest token ids of {V:,} ({why}; a BPE "
                          "vocabulary's ids follow its merges, most frequent first)")


def iter_token_table(layer, k: int = DEFAULT_K, budget_bytes: float = 8e6, counts=None,
                     why: str = "the table's size budget") -> Job[TokenTable]:
    """Generator job: the search table (see the module docstring) in at most
    `budget_bytes` of the page, from one whole-vocabulary pass over the chosen row tokens
    (sigma = mean over positions)."""
    k = max(1, min(int(k), layer.n_vocab))
    n = table_rows(layer.n_vocab, layer.n_heads, k, budget_bytes)
    rows, order = choose_rows(layer, n, counts, why)
    yield from rescaled(sigma_stats_job(layer), 0.0, 0.1)
    res = yield from rescaled(iter_vocab_pass(layer, SigmaChoice("mean"), k=k,
                                              rows=rows), 0.1, 1.0)
    st = res.stats
    keys = st.top_ids[:, rows].transpose(1, 0, 2)
    scores = st.top_scores[:, rows].transpose(1, 0, 2)
    return TokenTable(rows, list(st.heads), keys, scores, n >= layer.n_vocab, order)


# --------------------------------------------------------------------------- checks


def check_out(out: str | Path) -> Path:
    """The report's path: an .html file in an existing, writable folder."""
    out = Path(out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise InputError(f"The report must be an .html file, not {out.name!r}.")
    if out.is_dir():
        raise InputError(f"{out} is a folder; give the report's file name.")
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"The folder {folder} does not exist.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"The folder {folder} is not writable: choose another for the "
                         "report.")
    return out


# --------------------------------------------------------------------------- the job


def iter_report(layer, out: str | Path, *, compare=None, corpus: Sequence[str | Path] = (),
                k: int = DEFAULT_K, page_mb: float = DEFAULT_PAGE_MB,
                table_mb: float | None = None, figures: bool = True,
                max_texts: int = DEFAULT_MAX_TEXTS, session: str | None = None
                ) -> Job[ReportResult]:
    """Generator job: compute everything the report shows and write it to `out` (an
    .html file) in one atomic step at the end; yields Progress, returns a ReportResult.
    `compare`: model B (a Layer0); `corpus`: corpus files, folders or counts files (the
    corpus figures, the table's rows, the bigram partners' counts); `figures=False`
    leaves the figures out (a quicker page). The token table fills what the page's
    `page_mb` leave (`table_budget`), or takes `table_mb` when given. The page's <head>
    holds its provenance record as JSON (`report_provenance`; `session`: the session file
    it was made in)."""
    out = check_out(out)
    k = as_int(k, "number of keys per head")
    if k < 1:
        raise InputError(f"The number of keys per head must be at least 1, not {k}.")
    page_mb = _megabytes(page_mb, "page")
    table_mb = None if table_mb is None else _megabytes(table_mb, "token table")
    files = check_corpus(corpus)
    sweep_stale_parts(out.parent if str(out.parent) else ".", out.name)
    ctx = FigureContext(layer, files, max_texts=max_texts, compare=compare)
    counts = None
    if files:
        from detokgui.figures.corpus import counts as corpus_counts

        yield Progress(0.0, "counting the corpus")
        counts = yield from rescaled(corpus_counts(ctx), 0.0, 0.1)
    yield Progress(0.1, "classifying the heads")
    classes = yield from rescaled(iter_classify_heads(layer), 0.1, 0.2)
    yield Progress(0.2, "composition with layer 1")
    try:
        composed = yield from rescaled(composition_job(layer), 0.2, 0.22)
    except DetokError as exc:  # a one-layer model; block 1 not readable here
        composed = str(exc)
    yield Progress(0.22, "attention sinks")
    sinks = yield from rescaled(iter_sinks(layer, SampleTexts()), 0.22, 0.23)
    matching = None
    if compare is not None:
        from detokgui.core.compare.pair import Pair, iter_match_heads

        yield Progress(0.23, "matching the heads of A and B")
        matching = yield from rescaled(iter_match_heads(Pair(layer, compare)), 0.23, 0.25)
    drawn: list[tuple] = []
    skipped: list[tuple[str, str]] = []
    if figures:
        drawn, skipped = yield from rescaled(_draw_figures(ctx), 0.25, 0.6)
    if table_mb is not None:
        budget, why = table_mb * 1e6, f"the table's {table_mb:g} MB budget"
    else:
        other = sum(len(svg.encode("utf-8")) for _, svg, _ in drawn) + len(
            _script_json(vocabulary(layer.tokenizer, layer.n_vocab)).encode("utf-8"))
        budget = table_budget(page_mb, other)
        why = f"what the page's {page_mb:g} MB budget leaves after the figures"
    yield Progress(0.6, "the token table: top keys of every token")
    table = yield from rescaled(iter_token_table(layer, k, budget, counts, why), 0.6, 0.97)
    yield Progress(0.97, f"writing {out.name}")
    record = report_provenance(layer, table, classes, compare=compare, corpus=files,
                               counts=counts, figures=figures, max_texts=max_texts,
                               session=session, budget={"page_mb": page_mb,
                                                        "table_mb": table_mb})
    page = report_html(layer, table, classes, drawn, skipped, compare=compare,
                       matching=matching, counts=counts, corpus=files, provenance=record,
                       composition=composed, sinks=sinks)
    write_text(out, page)
    yield Progress(1.0, f"wrote {out}")
    return ReportResult(out, len(page.encode("utf-8")), table, [d[0].key for d in drawn],
                        skipped)


def _megabytes(value, what: str) -> float:
    try:
        mb = float(value)
    except (TypeError, ValueError):
        raise InputError(f"The {what}'s size must be a number of MB, not {value!r}.") from None
    if not mb > 0:
        raise InputError(f"The {what}'s size must be more than 0 MB, not {value}.")
    return mb


def write_report(layer, out, on_progress=None, **kwargs) -> ReportResult:
    """`iter_report` run to completion."""
    return run(iter_report(layer, out, **kwargs), on_progress)


def _draw_figures(ctx: FigureContext) -> Job[tuple[list, list]]:
    """Every registered figure drawn as an SVG string: ([(spec, svg, Drawn)], [(key,
    reason)])."""
    specs = load_figures(ctx.given())
    drawn, skipped = [], []
    for n, spec in enumerate(specs):
        lo, hi = n / len(specs), (n + 1) / len(specs)
        yield Progress(lo, f"[{n + 1}/{len(specs)}] figure {spec.key} ({spec.paper})")
        if spec.needs_corpus and not ctx.corpus:
            skipped.append((spec.key, "needs a corpus: give --corpus FILE"))
            continue
        if not spec.implemented:
            skipped.append((spec.key, f"not in this version yet: {spec.pending}"))
            continue
        try:
            with style.style():
                result = spec.build(ctx)
                if inspect.isgenerator(result):
                    result = yield from rescaled(result, lo, hi)
                svg = svg_text(result.figure, f"f{n}-")
        except (FigureSkipped, InputError) as exc:
            skipped.append((spec.key, str(exc)))
            continue
        drawn.append((spec, svg, result))
    return drawn, skipped


#: The report's SVG text is text (the page's font), not glyph outlines: a quarter of the
#: size, and searchable.
SVG_RC = {"svg.fonttype": "none"}
#: Figures are drawn at their printed size (6-7 pt text); a screen shows them this much
#: larger (the page's CSS keeps them within its width).
SVG_SCALE = 1.6


_PATH_TOKEN = re.compile(r"[A-Za-z]|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
#: Coordinates per point of each absolute command matplotlib's SVG writer uses.
_PATH_ARITY = {"M": 1, "L": 1, "Q": 2, "C": 3}


def _number(hundredths: int) -> str:
    """A multiple of 0.01 written short: 1.5, -.25, 3."""
    text = f"{hundredths / 100:.2f}".rstrip("0").rstrip(".")
    text = text.replace("0.", ".", 1) if text.startswith(("0.", "-0.")) else text
    return "0" if text in ("", "-0", "-") else text


def compact_path(d: str) -> str:
    """SVG path data as matplotlib writes it (absolute M, L, Q, C and z, coordinates to
    1e-6 pt) rewritten with relative commands and coordinates to 0.01 pt: the same shape
    (each point is the original rounded to 0.01 pt: the deltas are taken between rounded
    points, so rounding does not accumulate) in about half the characters. The lines of
    a figure of 1024 positions are most of a report's bytes. Data with any other
    command is returned as it is."""
    tokens = _PATH_TOKEN.findall(d)
    out: list[str] = []
    previous = ""  # the last number written ("" after a command letter)

    def put(v: str) -> None:
        nonlocal previous
        if previous and not v.startswith("-") and not (v.startswith(".") and "." in previous):
            out.append(" ")
        out.append(v)
        previous = v

    x = y = start_x = start_y = 0
    command = last = ""
    k = 0
    while k < len(tokens):
        t = tokens[k]
        if t.isalpha():
            if t in "zZ":
                out.append("z")
                x, y, command, last, previous = start_x, start_y, "", "z", ""
            elif t in _PATH_ARITY:
                command = t
            else:
                return d
            k += 1
            continue
        n = _PATH_ARITY.get(command, 0)
        pts = [round(float(v) * 100) for v in tokens[k:k + 2 * n] if not v.isalpha()]
        if not n or len(pts) < 2 * n:
            return d
        k += 2 * n
        if last != command:
            out.append(command.lower())
            last, previous = command, ""
        for j in range(n):
            put(_number(pts[2 * j] - x))
            put(_number(pts[2 * j + 1] - y))
        x, y = pts[-2], pts[-1]
        if command == "M":
            start_x, start_y = x, y
    return "".join(out)


def svg_text(fig, prefix: str) -> str:
    """A matplotlib figure as an <svg> element to inline in HTML, shown `SVG_SCALE` times
    its printed size: without the XML prologue, its ids (clip paths, images) prefixed so that the figures of one page do
    not share them, and made unique within the figure; paths in relative coordinates to
    0.01 pt (`compact_path`)."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context(SVG_RC):
        style.save(fig, buf, "svg")
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    head_end = text.index(">")
    text = re.sub(r'(width|height)="([\d.]+)pt"', lambda m: f'{m[1]}="{float(m[2]) * SVG_SCALE:.1f}pt"',
                  text[:head_end], count=2) + text[head_end:]
    seen: dict[str, int] = {}

    def unique(m: re.Match) -> str:  # matplotlib names equal images alike; refs use the first
        n = seen[m[1]] = seen.get(m[1], 0) + 1
        return f'id="{prefix}{m[1]}' + (f'-{n}"' if n > 1 else '"')

    text = re.sub(r'\bid="([^"]+)"', unique, text)
    text = re.sub(r' d="([^"]*)"', lambda m: f' d="{compact_path(m[1])}"', text)
    text = re.sub(r">\n\s+<", ">\n<", text)  # no indentation between elements
    text = re.sub(r'url\(#([^)]+)\)', rf'url(#{prefix}\1)', text)
    return re.sub(r'xlink:href="#([^"]+)"', rf'xlink:href="#{prefix}\1"', text)


# --------------------------------------------------------------------------- provenance


def report_provenance(layer, table: TokenTable, classes, *, compare=None,
                      corpus: Sequence[Path] = (), counts=None, figures: bool = True,
                      max_texts: int = DEFAULT_MAX_TEXTS, session: str | None = None,
                      budget: dict | None = None) -> dict:
    """The page's provenance record (`core.model.provenance.provenance_record`): the
    model (and B) with their layer-0 digests, the conventions of its numbers, the options
    it was made with (the table's k, rows and budget), the corpus and the date."""
    from detokgui.core.corpus.provenance import corpus_identity

    return provenance_record(
        layer, analysis="report", layer_b=compare,
        conventions={"token_sigma": SIGMA_TEXT, "temperature": temperature_label(layer),
                     "head_classes_position": classes.n,
                     "head_classes_sample": len(classes.tokens),
                     "figures": "the authors' conventions, named under each figure"},
        options={"k": table.k, "table_rows": int(table.rows.size),
                 "table_all_tokens": table.all_tokens, "table_rows_chosen": table.order,
                 "figures": figures, "max_texts": max_texts, **(budget or {})},
        corpus=corpus_identity([str(p) for p in corpus], counts) if corpus else None,
        session=session)


# --------------------------------------------------------------------------- HTML


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _script_json(value) -> str:
    """JSON safe inside <script>: no "</" can end the element."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def _asset(name: str) -> str:
    return resources.files("detokgui.figures").joinpath("report_assets", name).read_text(
        encoding="utf-8")


def table_scripts(layer, table: TokenTable, labels: Sequence[str] = ()) -> str:
    """The search table and the vocabulary as non-executed <script> data blocks."""
    ib = id_bytes(layer.n_vocab)
    int_type = "<u2" if ib == 2 else "<u4"
    scores = np.clip(table.scores, -65504.0, 65504.0).astype("<f2")
    vocab = vocabulary(layer.tokenizer, layer.n_vocab)
    shown = [vocab[int(r)] for r in table.rows]
    example = ("\u2423Korea" if "\u2423Korea" in shown else
               next((t for t in shown if t.startswith("\u2423") and len(t) > 4), shown[0]))
    meta = {"heads": table.heads, "k": table.k, "id_bytes": ib, "rows_text": table.order,
            "sigma": SIGMA_TEXT, "labels": list(labels), "example": example}
    blocks = [("dg-table-meta", "application/json", _script_json(meta)),
              ("dg-vocab", "application/json", _script_json(vocab)),
              ("dg-rows", "application/octet-stream", _b64(table.rows.astype(int_type))),
              ("dg-keys", "application/octet-stream", _b64(table.keys.astype(int_type))),
              ("dg-scores", "application/octet-stream", _b64(scores))]
    return "\n".join(f'<script type="{t}" id="{i}">{body}</script>' for i, t, body in blocks)


def _kv(rows) -> str:
    return "<table class='kv'>" + "".join(
        f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def model_card(layer, title: str) -> str:
    """The model's name, family, shapes, revision, identity and temperature."""
    d_mlp = int(layer.mlp_in_weight.shape[1])
    rows = [
        ("model", f"<b>{_e(model_name(layer))}</b>"),
        ("family", _e(layer.family_label)),
        ("revision", _e(layer.revision or "— (not a hub model: no commit)")),
        ("source", _e(layer.source or "—")),
        ("shapes", _e(f"V = {layer.n_vocab:,} tokens, L = {layer.n_positions} positions, "
                      f"d = {layer.d}, H = {layer.n_heads} heads of d' = {layer.d_head}, "
                      f"MLP {d_mlp}")),
        ("LayerNorm ε", _e(f"{layer.eps:g}")),
        ("softmax temperature", _e(temperature_label(layer))),
        ("layer-0 SHA-256", f"<code>{_e(layer0_digest(layer)[:16])}…</code>"),
        ("weights", _e(f"{str(layer.dtype).removeprefix('torch.')} on {layer.device}")),
    ]
    notes = "".join(f"<li>{_e(n)}</li>" for n in layer.notes)
    return (f"<div class='card model'><h3>{_e(title)}</h3>{_kv(rows)}"
            + (f"<ul class='note'>{notes}</ul>" if notes else "") + "</div>")


def sparkline(values: np.ndarray, width: int = 276, height: int = 56) -> str:
    """A line of `values` over j = 0..n as a small inline SVG (the positional pattern)."""
    v = np.asarray(values, dtype=float)
    top = float(v.max()) if v.size and v.max() > 0 else 1.0
    n = max(1, v.size - 1)
    pts = " ".join(f"{2 + (width - 4) * j / n:.1f},{height - 2 - (height - 14) * x / top:.1f}"
                   for j, x in enumerate(v))
    return (f"<svg class='spark' width='{width}' height='{height}' "
            f"viewBox='0 0 {width} {height}' xmlns='http://www.w3.org/2000/svg'>"
            f"<polyline fill='none' stroke='#2255aa' stroke-width='1.2' points='{pts}'/>"
            f"<text x='3' y='10' font-size='9' fill='#666'>max {top:.3g}</text>"
            f"<text x='{width - 3}' y='10' font-size='9' fill='#666' text-anchor='end'>"
            f"j = 0 … {v.size - 1}</text></svg>")


def top_pairs(table: TokenTable, h_row: int, counts=None, n: int = PAIRS_PER_HEAD
              ) -> list[tuple[int, int, float, int | None]]:
    """The head's strongest key -> query pairs among the table: (key, query, T_ee, corpus
    count or None), highest T_ee first; with counts, only pairs c(key, query) > 0."""
    keys, scores = table.keys[:, h_row, :], table.scores[:, h_row, :]
    order = np.argsort(-scores, axis=None, kind="stable")
    by_next = counts.by_next() if counts is not None else None
    out = []
    for flat in order:
        r, j = divmod(int(flat), table.k)
        q, key = int(table.rows[r]), int(keys[r, j])
        c = None
        if by_next is not None:
            c = int(by_next[q, key])
            if c == 0:
                continue
        out.append((key, q, float(scores[r, j]), c))
        if len(out) >= n:
            break
    return out


def composition_text(composed, h: int, most: int = 3) -> str:
    """The layer-1 heads head h composes with above the baseline's 97.5th percentile, per
    kind, best first (at most `most`), or why there are none."""
    if isinstance(composed, str):
        return _e(f"not computed: {composed}")
    parts = []
    for kind in KINDS:
        row = composed.of(kind)[h]
        best = [int(g) for g in np.argsort(-row, kind="stable")[:most]
                if row[g] > composed.baseline_hi]
        parts.append(f"{kind}: " + (", ".join(f"L1H{g} {row[g]:.2f}" for g in best) or "—"))
    return _e("; ".join(parts))


def sink_text(sinks, h: int) -> str:
    """Head h's attention to position 0 against a uniform head's, and its sink term with
    its mean advantage (logits)."""
    r = sinks.heads.index(h)
    term = sinks.sink_term(h)
    lead = float(sinks.head_advantage[r][sinks.terms.index(term)])
    return _e(f"attention to position 0 {sinks.head_attention[r]:.3f} (uniform "
              f"{sinks.uniform:.3f}); sink term T_{term} (+{lead:.2f} logits)"
              if lead > 0 else f"attention to position 0 {sinks.head_attention[r]:.3f} "
              f"(uniform {sinks.uniform:.3f}); no term favours position 0")


def head_cards(layer, table: TokenTable, classes, vocab, counts=None, matching=None,
               composition=None, sinks=None) -> str:
    cards = []
    for r, h in enumerate(classes.heads):
        label = classes.labels[r]
        metrics = [("class reason", _e(classes.reasons[r])),
                   ("effective span", _e(f"{classes.span_fraction[r]:.0%} of the context")),
                   ("weight on the last 4", _e(f"{classes.recent_weight[r]:.2f}")),
                   ("self in own top keys", _e(f"{classes.self_top_fraction[r]:.0%}")),
                   ("T_p slope", _e(f"{classes.bias_slope[r]:.3g} per position"))]
        if matching is not None:
            b = matching.assigned_of_a(h)
            metrics.append(("model B", _e("—" if b is None else
                                          f"head {b}: {matching.verdict(h, b)}")))
        t_row = table.heads.index(h) if h in table.heads else None
        pairs = top_pairs(table, t_row, counts) if t_row is not None else []
        items = "".join(
            f"<li><span class='tok'>{_e(vocab[key])}</span> → "
            f"<span class='tok'>{_e(vocab[q])}</span> {score:.3g}"
            + (f" <span class='note'>(×{c:,})</span>" if c is not None else "") + "</li>"
            for key, q, score, c in pairs) or "<li class='note'>none in the table</li>"
        what = ("pairs that occur in the corpus, count in brackets" if counts is not None
                else "key → query, T_ee")
        cards.append(
            f"<div class='card head' id='head-{h}'><h3>Head {h} "
            f"<span class='label {_e(label)}'>{_e(label)}</span></h3>{_kv(metrics)}"
            f"<div class='note'>positional pattern at query position n = {classes.n} "
            f"(mean over {len(classes.tokens)} sampled query tokens)</div>"
            f"{sparkline(classes.mean_pattern[r])}"
            f"<div class='note'>top bigram partners ({what})</div><ol class='pairs'>{items}</ol>"
            f"<div class='note'>composition partners (layer-1 head, score): "
            f"{composition_text(composition, h)}</div>"
            + (f"<div class='note'>sink: {sink_text(sinks, h)}</div>" if sinks is not None
               else "") + "</div>")
    return "<div class='cards'>" + "".join(cards) + "</div>"


def figure_blocks(drawn, skipped, n_positions: int) -> str:
    parts = []
    for spec, svg, result in drawn:
        convention = result.convention or spec.convention
        notes = f" · {_e(result.notes)}" if result.notes else ""
        parts.append(f"<figure id='fig-{_e(spec.key)}'>{svg}<figcaption><b>{_e(spec.paper)}"
                     f"</b> · {_e(spec.title_for(n_positions))} · <i>{_e(convention)}</i>"
                     f"{notes}</figcaption></figure>")
    if skipped:
        parts.append("<h3>Not drawn</h3><ul class='note'>" + "".join(
            f"<li><code>{_e(key)}</code>: {_e(reason)}</li>" for key, reason in skipped)
            + "</ul>")
    return "\n".join(parts) or "<p class='note'>Figures left out (--no-figures).</p>"


def report_html(layer, table: TokenTable, classes, drawn, skipped, *, compare=None,
                matching=None, counts=None, corpus: Sequence[Path] = (),
                provenance: dict | None = None, composition=None, sinks=None) -> str:
    """The page. `composition`: `core.composition`'s scores, or why there are none;
    `sinks`: `core.text_side.sinks.SinkProfile`."""
    from detokgui import __version__

    vocab = vocabulary(layer.tokenizer, layer.n_vocab)
    labels = [classes.labels[classes.heads.index(h)] if h in classes.heads else ""
              for h in table.heads]
    title = f"detokgui report: {model_name(layer)}"
    if compare is not None:
        title += f" and {model_name(compare)}"
    corpus_text = (", ".join(p.name for p in corpus) if corpus else
                   "none (the corpus figures are not drawn)")
    size_note = (f"{table.order}; k = {table.k} keys per head; "
                 f"{'every token' if table.all_tokens else 'tokens beyond them are not in the table'}")
    cards = model_card(layer, "Model A" if compare is not None else "Model")
    if compare is not None:
        cards += model_card(compare, "Model B")
    conventions = [
        ("token search, bigram partners", _e(SIGMA_TEXT)),
        ("head classes", _e(f"B4 positional pattern at n = {classes.n}, mean over "
                            f"{len(classes.tokens)} seeded query tokens; self-rank over "
                            "all keys")),
        ("figures", _e("the authors' conventions, each named under its figure")),
        ("corpus", _e(corpus_text)),
    ]
    if matching is not None:
        conventions.append(("head matching", _e(matching.rule())))
    if sinks is not None:
        conventions.append(("sink term", _e(
            f"core.text_side.sinks over {sinks.source}: mean attention to position 0 over "
            "every query position i ≥ 1, and the term with the largest mean advantage "
            "A^X_i of position 0 over the other keys")))
    if composition is not None and not isinstance(composition, str):
        conventions.append(("composition", _e(
            f"||W^OV_h M_g||_F / (||W^OV_h||_F ||M_g||_F), M_g = layer-1 head g's QK "
            f"(Q, K) or OV (V) matrix; listed above the 97.5th percentile "
            f"{composition.baseline_hi:.3f} of random matrices of the same shapes")))
    prov = _script_json(provenance or {})
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="detokgui {_e(__version__)}">
<title>{_e(title)}</title>
<script type="application/json" id="{HTML_ID}">{prov}</script>
<style>{_asset("report.css")}</style>
</head><body>
<header><h1>{_e(title)}</h1>
<p class="note">The first attention layer analysed from the weights alone (Kamoda et al.,
<i>Weight-based Analysis of Detokenization in Language Models</i>, NAACL Findings 2025).
Written by detokgui {_e(__version__)}; this file needs no network and no server.</p>
<nav><a href="#model">Model</a><a href="#search">Token search</a><a href="#heads">Heads</a>
<a href="#figures">Figures</a></nav></header>
<main>
<h2 id="model">Model</h2>
<div class="cards">{cards}<div class='card model'><h3>Conventions</h3>{_kv(conventions)}</div></div>
<h2 id="search">Token search</h2>
<p class="note">Type a token exactly (with its leading space: " Korea" or "␣Korea"); its
top keys by T_ee per head appear below. Table: {_e(size_note)}.</p>
<input id="dg-search" list="dg-suggestions" autocomplete="off" spellcheck="false"
 aria-label="token"><datalist id="dg-suggestions"></datalist>
<div id="dg-status" class="note"></div><div id="dg-result"></div>
<h2 id="heads">Heads{" of model A" if compare is not None else ""}</h2>
{head_cards(layer, table, classes, vocab, counts, matching, composition, sinks)}
<h2 id="figures">Figures</h2>
{figure_blocks(drawn, skipped, layer.n_positions)}
</main>
{table_scripts(layer, table, labels)}
<script>{_asset("report.js")}</script>
</body></html>
"""
