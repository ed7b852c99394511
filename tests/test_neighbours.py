"""Token-space neighbours (A7) against brute-force cosines."""

import numpy as np
import pytest

from detokgui.core.base.errors import InputError
from detokgui.core.token_side.neighbours import analogy, nearest_tokens


def brute_cosines(E, x, centred):
    if centred:
        mu = E.mean(axis=0)
        E, x = E - mu, x - mu
    return (E @ x) / (np.linalg.norm(E, axis=1) * np.linalg.norm(x))


@pytest.mark.parametrize("centred", [False, True])
def test_nearest_and_analogy_equal_brute_force(small_vocab_layer, centred):
    E = small_vocab_layer.E.numpy()
    nb = nearest_tokens(small_vocab_layer, 42, k=12, centred=centred)
    cos = brute_cosines(E, E[42], centred)
    cos[42] = -np.inf
    assert nb.ids == np.argsort(-cos)[:12].tolist() and 42 not in nb.ids
    np.testing.assert_allclose(nb.cosines, np.sort(cos)[::-1][:12], rtol=1e-10)
    an = analogy(small_vocab_layer, 10, 20, 30, k=5, centred=centred)
    cos = brute_cosines(E, E[10] - E[20] + E[30], centred)
    cos[[10, 20, 30]] = -np.inf
    assert an.ids == np.argsort(-cos)[:5].tolist() and an.inputs == (10, 20, 30)
    np.testing.assert_allclose(an.cosines, np.sort(cos)[::-1][:5], rtol=1e-10)


def test_k_is_capped_and_bad_inputs(small_vocab_layer):
    assert len(nearest_tokens(small_vocab_layer, 0, k=10_000).ids) == 399
    with pytest.raises(InputError, match="outside the vocabulary"):
        nearest_tokens(small_vocab_layer, 400)
    with pytest.raises(InputError, match="k must be"):
        nearest_tokens(small_vocab_layer, 1, k=0)
    with pytest.raises(InputError, match="outside the vocabulary"):
        analogy(small_vocab_layer, 3, -1, 3)
