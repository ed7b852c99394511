"""The cache on Layer0 (`cached`, `cached_job`, `forget`) and the tables of
core.model.conventions kept in it: each computed once, under one key."""

import pytest
import torch

from detokgui.core.base.errors import Cancelled
from detokgui.core.base.progress import Progress, run
from detokgui.core.model import conventions


def test_cached_computes_once(tiny_layer):
    calls = []
    key = ("test.cached", 1)
    first = tiny_layer.cached(key, lambda: calls.append(1) or object())
    assert tiny_layer.cached(key, lambda: calls.append(1) or object()) is first
    assert calls == [1] and tiny_layer.is_cached(key)
    tiny_layer.forget("test")
    assert not tiny_layer.is_cached(key)


def test_cached_job_keeps_nothing_when_stopped(tiny_layer):
    def job():
        for k in range(3):
            yield Progress(k / 3, "step")
        return "done"

    seen = []

    def stop(p):
        seen.append(p)
        if len(seen) == 2:
            raise Cancelled()

    with pytest.raises(Cancelled):
        run(tiny_layer.cached_job("test.job", job), stop)
    assert not tiny_layer.is_cached("test.job")
    assert run(tiny_layer.cached_job("test.job", job)) == "done"
    seen.clear()
    assert run(tiny_layer.cached_job("test.job", job), seen.append) == "done" and not seen
    tiny_layer.forget("test")


def test_forget_drops_only_its_prefix(tiny_layer):
    for key in ("test.a", ("test.b", 2), "test", "tester.c", ("tester", 1)):
        tiny_layer.cached(key, lambda: 0)
    tiny_layer.forget("test")
    assert [tiny_layer.is_cached(k) for k in ("test.a", ("test.b", 2), "test")] == [False] * 3
    assert tiny_layer.is_cached("tester.c") and tiny_layer.is_cached(("tester", 1))
    tiny_layer.forget("tester")


def test_inverse_sigma_is_one_table(tiny_layer):
    """E_v[1/sigma(e_v + p_j)]: the B1-B4 views and the C2 prediction read the same tensor."""
    inv = conventions.inverse_sigma_stats(tiny_layer)
    assert conventions.position_key_weights(tiny_layer, "paper") is inv.mean
    assert run(conventions.inverse_sigma_job(tiny_layer)) is inv
    S = tiny_layer.sigma_table().double()
    torch.testing.assert_close(inv.mean.double(), (1 / S).mean(0), rtol=1e-6, atol=0)
    w = conventions.position_key_weights(tiny_layer, "mean-sigma", 5)
    torch.testing.assert_close(w, 1 / tiny_layer.sigma_stats().pos_mean[:5])
    per_token = conventions.inverse_sigma_per_token(tiny_layer)
    assert conventions.inverse_sigma_per_token(tiny_layer) is per_token
    torch.testing.assert_close(per_token.double(), (1 / S).mean(1), rtol=1e-6, atol=0)


def test_temperature():
    assert conventions.temperature(64) == 8.0
    assert conventions.temperature(64, scale_attn_weights=False) == 1.0
