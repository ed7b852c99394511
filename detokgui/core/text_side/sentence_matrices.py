"""The Sentence view's matrices (C1) for one text: the six terms T_ee..T_p, their sum, the
predicted attention softmax_{j<=i}(sum / tau) and the model's own attention, for the
heads asked for, computed one head at a time and keeping only the matrices asked for
(`iter_sentence_matrices`); their display names (`MATRIX_TITLES`, `matrix_title`) and
the hover line of one cell (`SentenceMatrices.describe`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from detokgui.core.base.numbers import num
from detokgui.core.base.progress import Job, Progress
from detokgui.core.model.conventions import temperature_label
from detokgui.core.model.tokens import display_token
from detokgui.core.text_side import empirical
from detokgui.core.text_side.empirical import TextSource

MATRIX_TITLES = {
    "ee": "T_ee", "pp": "T_pp", "pe": "T_pe", "ep": "T_ep", "e": "T_e", "p": "T_p",
    "sum": "sum of the six terms", "predicted": "predicted softmax(sum / τ)",
    "actual": "actual attention (forward pass)"}


def matrix_title(layer, m: str) -> str:
    """The matrix's name; the prediction's says which temperature it divides by."""
    if m == "predicted" and layer is not None:
        return f"{MATRIX_TITLES[m]}, {temperature_label(layer, short=True)}"
    return MATRIX_TITLES[m]


@dataclass
class SentenceMatrices:
    tokens: list[int]
    labels: list[str]
    heads: list[int]
    values: dict[str, np.ndarray]  # name -> [len(heads), n, n]
    max_abs_diff: np.ndarray  # [len(heads)]
    source: str  # which text

    def describe(self, r: int, i: int, j: int) -> str:
        """The hover line of cell (i, j) of head heads[r]: both tokens and every matrix
        kept; a key after the query is masked."""
        where = (f"head {self.heads[r]} · i = {i} {self.labels[i]!r} → j = {j} "
                 f"{self.labels[j]!r}")
        if j > i:
            return where + " · masked: a query attends to keys j ≤ i only"
        return where + " · " + " · ".join(f"{m} {num(float(v[r, i, j]))}"
                                          for m, v in self.values.items())


def iter_sentence_matrices(layer, tokens, texts: TextSource | None, index: int, heads,
                           matrices) -> Job[SentenceMatrices]:
    """The text (corpus text number `index` of `texts`, else the token ids `tokens`), then
    `empirical.iter_sentence` one head at a time, keeping only `matrices` (all heads of a
    1024-token text would not fit otherwise)."""
    if texts is not None:
        ids = yield from empirical.iter_text_window(layer, texts, index)
        start = layer.tokenizer.decode(ids[:24]) if layer.tokenizer is not None else ""
        source = f"corpus text #{index}: {start.strip()[:60]!r}…"
    else:
        ids, source = list(tokens), "typed text"
    values = {m: [] for m in matrices}
    diffs = []
    for r, h in enumerate(heads):
        data = empirical.sentence(layer, ids, [h])
        for m in matrices:
            v = data.values(m)[0]
            if m in ("predicted", "actual"):  # drawn blank above the diagonal, like the terms
                v = np.where(np.tri(v.shape[0], dtype=bool), v, np.float32(np.nan))
            values[m].append(v)
        diffs.append(float(data.max_abs_diff[0]))
        yield Progress((r + 1) / len(heads), f"six terms, head {h}")
    return SentenceMatrices(
        tokens=ids, labels=[display_token(layer.tokenizer, t) for t in ids],
        heads=list(heads), values={m: np.stack(v) for m, v in values.items()},
        max_abs_diff=np.array(diffs), source=source)
