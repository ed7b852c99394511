"""One definition of the position conventions (core.model.conventions) with one default: the
core functions, the CLI and the GUI, each left at its defaults, draw the same curves for
the same checkpoint and query position."""

import numpy as np
import pytest
from test_cli import read_csv

from detokgui import cli
from detokgui.core.model import conventions
from detokgui.core.model.conventions import DEFAULT_POSITION_CONVENTION
from detokgui.core.position_side import positional
from detokgui.core.text_side import empirical

I = 40  # query position
COLUMNS = ("t_p", "t_pp", "total", "softmax")


def _close(got, want, what):
    """Floats from two code paths (the CSV keeps 9 significant digits)."""
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * scale, err_msg=what)


def cli_bias(tiny_ckpt, tmp_path, capsys) -> dict[str, np.ndarray]:
    """`detokgui export bias` at I with no --convention and no --sigma, as [H, I+1] arrays."""
    out = tmp_path / "bias.csv"
    assert cli.main(["bias", "--model", str(tiny_ckpt), "--position", str(I),
                     "--out", str(out)]) == 0
    capsys.readouterr()
    rows = read_csv(out)
    assert {(r["convention"], r["sigma"]) for r in rows} == {(DEFAULT_POSITION_CONVENTION, "mean")}
    H = 1 + max(int(r["head"]) for r in rows)
    got = {c: np.full((H, I + 1), np.nan) for c in COLUMNS}
    for r in rows:
        for c in COLUMNS:
            got[c][int(r["head"]), int(r["j"])] = float(r[c])
    assert not any(np.isnan(v).any() for v in got.values())
    return got


def test_every_default_is_the_paper_convention():
    import inspect

    assert DEFAULT_POSITION_CONVENTION == "paper"
    for fn in (positional.positional_bias, positional.bias_lines, positional.position_bias_band,
               positional.positional_pattern, empirical.b3_prediction,
               empirical.empirical_attention):
        assert inspect.signature(fn).parameters["convention"].default == "paper", fn.__name__
    parser = cli.build_parser()
    for argv in (["bias", "--position", "3", "--out", "x.csv"],
                 ["empirical", "--corpus", "c", "--position", "3", "--out", "x.csv"]):
        args = parser.parse_args(argv)
        assert args.convention == "paper", argv
    assert conventions.POSITION_CONVENTIONS[0] == "paper"


def test_core_and_cli_give_the_same_curve(tiny_ckpt, tiny_layer, tmp_path, capsys):
    core = positional.positional_bias(tiny_layer, I)
    assert core.convention == DEFAULT_POSITION_CONVENTION and core.sigma == "mean"
    got = cli_bias(tiny_ckpt, tmp_path, capsys)
    for c in COLUMNS:
        _close(got[c], getattr(core, c), c)
    # and the mean-sigma numbers differ: the test would see a change of default
    other = positional.positional_bias(tiny_layer, I, convention="mean-sigma")
    assert np.abs(other.t_p - core.t_p).max() > 1e-3 * np.abs(core.t_p).max()


def test_core_cli_and_gui_give_the_same_curve(tiny_ckpt, tiny_layer, tmp_path, capsys, qtbot):
    from conftest import close_jobs, open_window
    from test_gui_position import curve_y, drawn, show_bias

    from detokgui.gui.panels import empirical_view, positional_bias, positional_pattern

    for view in (empirical_view, positional_bias, positional_pattern):
        assert view.Options().convention == DEFAULT_POSITION_CONVENTION, view.__name__
    core = positional.positional_bias(tiny_layer, I)
    band = positional.position_bias_band(tiny_layer)
    lines = positional.bias_lines(tiny_layer, I)
    got = cli_bias(tiny_ckpt, tmp_path, capsys)
    win = open_window(qtbot, tiny_ckpt)
    try:
        panel = show_bias(win, qtbot)
        panel.heads_box.set_mode("all")
        win.state.set_query_position(I)
        qtbot.waitUntil(drawn(panel, I), timeout=10000)
        res = panel.result
        assert res.convention == DEFAULT_POSITION_CONVENTION and res.b3_sigma == "mean"
        assert res.heads == list(range(tiny_layer.n_heads))
        for c in COLUMNS:  # what the GUI computed, against core and the CLI
            _close(getattr(res.b3, c), getattr(core, c), f"GUI vs core: {c}")
            _close(getattr(res.b3, c), got[c], f"GUI vs CLI: {c}")
        for h in res.heads:  # and what it draws
            _close(curve_y(panel.grids["total"], "total", h), core.total[h], "total")
            _close(curve_y(panel.grids["softmax"], "softmax", h), core.softmax[h], "softmax")
            _close(curve_y(panel.grids["tp"], "mean", h), band.mean[h], "T_p band")
            for s in ("mean", "max", "min"):
                _close(curve_y(panel.grids["tpp"], s, h), lines[s].t_pp[h], f"T_pp {s}")
    finally:
        close_jobs(win)


@pytest.mark.parametrize("bad", ["authors", "", None, 3])
def test_one_check_for_every_choice(tiny_layer, bad):
    from detokgui.core.base.errors import InputError

    with pytest.raises(InputError, match="position convention must be one of paper, mean-sigma"):
        positional.positional_bias(tiny_layer, 3, convention=bad)
    with pytest.raises(InputError, match="position sigma must be one of mean, max, min, none"):
        positional.positional_bias(tiny_layer, 3, sigma=bad)
