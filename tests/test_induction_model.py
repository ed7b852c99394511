"""The induction test model (tests/data/induction_model, scripts/train_induction_model.py):
the weights alone find its circuit, and the measured behaviour confirms it. Layer 0's
previous-token head and layer 1's induction head are found by their measured scores; the
K-composition of the induction head picks the previous-token head as its layer-0 partner,
above the random-matrix baseline, and the previous-token head's strongest K-composition
in layer 1 is the induction head. The demo model, which has a previous-token head and no
induction head, is the contrast."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from detokgui.core import Layer0
from detokgui.core.base.progress import run
from detokgui.core.composition.behaviour import behaviour_job
from detokgui.core.composition.scores import composition_job
from detokgui.core.composition.tables import circuit_rows

MODEL = Path(__file__).parent / "data" / "induction_model"


@pytest.fixture(scope="module")
def induction():
    layer = Layer0.from_pretrained(str(MODEL), device="cpu")
    return layer, run(composition_job(layer)), run(behaviour_job(layer))


def test_the_fixture_is_small():
    assert sum(p.stat().st_size for p in MODEL.iterdir()) < 400_000


def test_k_composition_finds_the_induction_circuit(induction):
    _, comp, beh = induction
    prev, ind = beh.previous_token_head(), beh.induction_head()
    assert beh.previous_token[0, prev] > 0.9 and beh.induction[1, ind] > 0.8
    others = np.delete(beh.induction[1], ind)
    assert others.max() < 0.5  # one induction head, measured
    K = comp.of("K")
    assert comp.partner("K", ind) == prev  # from the weights alone
    assert int(np.argmax(K[prev])) == ind
    assert K[prev, ind] > comp.baseline_hi
    row = circuit_rows(comp, beh)[ind]
    assert (row.k_partner, row.previous_token_head) == (prev, prev)
    assert row.induction == pytest.approx(beh.induction[1, ind])


def test_the_recorded_result_is_what_detokgui_measures(induction):
    """train_log.json holds what the script measured when it wrote the model."""
    _, comp, beh = induction
    result = json.loads((MODEL / "train_log.json").read_text(encoding="utf-8"))["result"]
    assert result["induction_head"] == beh.induction_head()
    assert result["previous_token_head"] == beh.previous_token_head()
    assert result["k_composition_partner"] == comp.partner("K", beh.induction_head())
    assert result["induction_score"] == pytest.approx(beh.induction.max(), abs=1e-3)
    assert result["k_composition"] == pytest.approx(
        comp.of("K")[beh.previous_token_head(), beh.induction_head()], abs=1e-3)


def test_the_demo_model_has_a_previous_token_head_and_no_induction_head():
    layer = Layer0.from_pretrained("demo", device="cpu")
    beh = run(behaviour_job(layer))
    assert beh.previous_token_head() == 7 and beh.previous_token[0, 7] > 0.7
    assert beh.induction[1].max() <= 0.05
