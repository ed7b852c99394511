"""Tidy tables (header + rows) of the composition scores and the measured behaviour
(docs/math/composition.md): what `detokgui export composition`, `dg.composition` and the
Layer 1 page's CSV write, from the same results. Written with `core.base.tables.write_csv`.
"""

from __future__ import annotations

from dataclasses import dataclass

from detokgui.core.base.tables import Table
from detokgui.core.composition.behaviour import Behaviour
from detokgui.core.composition.scores import KINDS, Composition

COMPOSITION_HEADER = ["layer0_head", "layer1_head", "kind", "score", "baseline_mean",
                      "baseline_hi"]
BEHAVIOUR_HEADER = ["layer", "head", "measure", "score"]
#: The `measure` column of `behaviour_table`.
MEASURES = ("previous_token", "induction")
CIRCUIT_HEADER = ["layer1_head", "induction", "previous_token_head", "previous_token",
                  "k_composition", "k_partner", "k_partner_score", "baseline_hi"]


def composition_table(comp: Composition) -> Table:
    """layer0_head,layer1_head,kind,score,baseline_mean,baseline_hi: every (layer-0 head,
    layer-1 head) pair's Q-, K- and V-composition (kind Q, K, V, in that order) with the
    random-matrix baseline's mean and 97.5th percentile."""
    def rows():
        for k, kind in enumerate(KINDS):
            for h0, row in enumerate(comp.scores[k].tolist()):
                for h1, value in enumerate(row):
                    yield (h0, h1, kind, float(value), comp.baseline_mean, comp.baseline_hi)

    return list(COMPOSITION_HEADER), rows()


def behaviour_table(beh: Behaviour) -> Table:
    """layer,head,measure,score: the previous-token and induction scores (`MEASURES`) of
    every head of layers 0 and 1, measured on repeated random tokens."""
    def rows():
        for m, values in ((MEASURES[0], beh.previous_token), (MEASURES[1], beh.induction)):
            for layer, row in enumerate(values.tolist()):
                for head, value in enumerate(row):
                    yield (layer, head, m, float(value))

    return list(BEHAVIOUR_HEADER), rows()


@dataclass(frozen=True)
class CircuitRow:
    """One layer-1 head beside the weights: its measured induction score, the K-composition
    of (the layer-0 head with the highest previous-token score, it), and its strongest
    K-composition partner in layer 0 with that score. An induction head's partner is the
    previous-token head, with a K-composition above the baseline's band."""

    layer1_head: int
    induction: float
    previous_token_head: int
    previous_token: float
    k_composition: float
    k_partner: int
    k_partner_score: float
    baseline_hi: float


def circuit_rows(comp: Composition, beh: Behaviour) -> list[CircuitRow]:
    """`CircuitRow` of every layer-1 head, in head order."""
    prev = beh.previous_token_head()
    K = comp.of("K")
    return [CircuitRow(g, float(beh.induction[1, g]), prev, float(beh.previous_token[0, prev]),
                       float(K[prev, g]), comp.partner("K", g), float(K[:, g].max()),
                       comp.baseline_hi)
            for g in range(K.shape[1])]


def circuit_table(comp: Composition, beh: Behaviour) -> Table:
    """CIRCUIT_HEADER: `circuit_rows` as a table, one row per layer-1 head."""
    return list(CIRCUIT_HEADER), ([getattr(r, c) for c in CIRCUIT_HEADER]
                                  for r in circuit_rows(comp, beh))
