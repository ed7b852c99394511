"""One default query position (`conventions.default_query_position`: the paper's i = 500,
scaled to the model's positions) in the window, the Empirical view's "default i", the CLI,
the `dg` API and the figures and their index."""

import pytest
from test_cli import read_csv

from detokgui import cli
from detokgui.core.model.conventions import default_query_position, paper_position, position_text


def test_the_rule():
    assert default_query_position(1024) == 500  # GPT-2: the paper's own
    assert default_query_position(2048) == 500  # OPT: as many or more, unscaled
    assert default_query_position(128) == 62  # round(500 * 127 / 1023)
    assert paper_position(1000, 1024) == 1000 and paper_position(5000, 1024) == 1023
    assert paper_position(50, 128) == 6
    assert position_text(1024) == "i = 500"
    assert position_text(128) == "i = 62 (the paper's 500 scaled to 128 positions)"


def test_cli_and_api_default(tiny_ckpt, tiny_layer, tmp_path, capsys):
    import detokgui as dg

    i = default_query_position(tiny_layer.n_positions)
    out = tmp_path / "bias.csv"
    assert cli.main(["bias", "--model", str(tiny_ckpt), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"query position i = {i} " in err
    assert max(int(r["j"]) for r in read_csv(out)) == i
    df = dg.bias(tiny_layer, progress=False)
    assert df.attrs["i"] == i and df["j"].max() == i


def test_figures_index_says_one_position(tiny_layer, tmp_path):
    from detokgui.figures.export import export_figures

    i = default_query_position(tiny_layer.n_positions)
    report = export_figures(tiny_layer, tmp_path, formats=("png",), keys=["fig03b_tpp"])
    assert not report.skipped and report.built
    row = next(line for line in (tmp_path / "index.md").read_text().splitlines()
               if "fig03b_tpp" in line)
    assert f"i = {i}" in row and "i = 500 " not in row.replace("the paper's 500", "")


def test_window_and_empirical_view_default(qtbot, tiny_ckpt):
    from conftest import close_jobs, open_window

    win = open_window(qtbot, tiny_ckpt)
    try:
        i = default_query_position(win.state.layer.n_positions)
        assert win.state.query_position == i  # a new window's first model starts there
        panel = win.panel("empirical")
        win.state.set_query_position(3)
        assert panel.default_button.text() == f"default i = {i}"
        panel.default_button.click()
        assert win.state.query_position == i
    finally:
        close_jobs(win)


@pytest.mark.parametrize("argv", [["bias", "--out", "x.csv"],
                                  ["empirical", "--corpus", "c", "--out", "x.csv"]])
def test_position_is_optional(argv):
    assert cli.build_parser().parse_args(argv).position is None
