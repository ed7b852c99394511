"""core.text_side.sentence_matrices: the Sentence view's matrices (C1), head by head."""

import numpy as np

from detokgui.core.base.progress import run
from detokgui.core.text_side import empirical
from detokgui.core.text_side.sentence_matrices import MATRIX_TITLES, iter_sentence_matrices


def test_kept_matrices_per_head(tiny_layer):
    ids = [464, 2068, 7586, 21831, 18045]
    res = run(iter_sentence_matrices(tiny_layer, ids, None, 0, (0, 2), ("ee", "predicted")))
    assert res.tokens == ids and res.heads == [0, 2] and res.source == "typed text"
    assert set(res.values) == {"ee", "predicted"} and len(res.labels) == len(ids)
    whole = empirical.sentence(tiny_layer, ids, [0, 2])
    np.testing.assert_allclose(res.values["ee"], whole.values("ee"), rtol=1e-5, atol=1e-6)
    lower = np.tri(len(ids), dtype=bool)
    np.testing.assert_allclose(res.values["predicted"][:, lower],
                               whole.predicted[:, lower], rtol=1e-5, atol=1e-6)
    assert np.isnan(res.values["predicted"][:, ~lower]).all()  # blank above the diagonal
    np.testing.assert_allclose(res.max_abs_diff, whole.max_abs_diff, atol=1e-6)
    assert set(MATRIX_TITLES) == set(empirical.SENTENCE_TERMS)


def test_matrix_titles(tiny_layer):
    from detokgui.core.model.conventions import temperature_label
    from detokgui.core.text_side.sentence_matrices import matrix_title

    assert matrix_title(tiny_layer, "ee") == "T_ee"
    assert matrix_title(None, "predicted") == "predicted softmax(sum / τ)"
    assert matrix_title(tiny_layer, "predicted") == (
        f"predicted softmax(sum / τ), {temperature_label(tiny_layer, short=True)}")
