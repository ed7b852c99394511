"""`detokgui export composition`, `dg.composition` / `dg.behaviour` and their figures: the
same table from the CLI and the library, the figure drawn from the frame, bad input in one
line (`cli.composition`, `api.composition`, `figures.composition`)."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from family_models import write
from matplotlib.patches import Rectangle

import detokgui.cli.composition  # noqa: F401 - registers the command
from detokgui.api.composition import behaviour, behaviour_plot, composition, composition_plot
from detokgui.cli import main as cli_main
from detokgui.core import Layer0
from detokgui.core.base.progress import run
from detokgui.core.composition.scores import composition_job


@pytest.fixture(scope="module")
def two_layers(tmp_path_factory):
    return write(tmp_path_factory.mktemp("export-l1"), "gpt2", seed=5)[0]


@pytest.fixture(scope="module")
def layer(two_layers):
    return Layer0.from_pretrained(str(two_layers), device="cpu")


def read(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_cli_and_library_write_the_same_table(two_layers, layer, tmp_path, capsys):
    out, beh = tmp_path / "comp.csv", tmp_path / "beh.csv"
    rc = cli_main(["composition", "--model", str(two_layers), "--device", "cpu", "--out",
                   str(out), "--behaviour", str(beh), "--sequences", "3", "--length", "6"])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    assert "baseline: the score of random Gaussian matrices" in printed
    comp = run(composition_job(layer))
    partners = [f"{g} <- {comp.partner('K', g)} (" for g in range(layer.n_heads)]
    assert all(p in printed for p in partners), printed
    rows = read(out)
    df = composition(layer, progress=False)
    assert list(rows[0]) == list(df.columns) == ["layer0_head", "layer1_head", "kind", "score",
                                                 "baseline_mean", "baseline_hi"]
    assert len(rows) == len(df) == 3 * layer.n_heads ** 2
    np.testing.assert_allclose([float(r["score"]) for r in rows], df["score"], rtol=1e-8)
    assert [r["kind"] for r in rows] == list(df["kind"])
    assert df.attrs["analysis"] == "composition" and df.attrs["baseline_samples"] == 400

    assert (tmp_path / "comp.csv.json").is_file() and (tmp_path / "beh.csv.json").is_file()
    assert "previous-token head" in printed and "its strongest partner" in printed
    b = behaviour(layer, sequences=3, length=6, progress=False)
    got = read(beh)
    assert list(got[0]) == ["layer", "head", "measure", "score"] == list(b.columns)
    np.testing.assert_allclose([float(r["score"]) for r in got], b["score"], rtol=1e-8)
    assert b.attrs["length"] == 6 and b.attrs["sequences"] == 3


@pytest.mark.parametrize("args, words", [
    (["--out", "x.txt"], "--out must end in"),
    (["--behaviour", "b.txt"], "--behaviour must end in"),
    (["--seed", "3"], "give --behaviour FILE"),
    (["--behaviour", "b.csv", "--sequences", "0"], "--sequences must be at least 1"),
])
def test_bad_options_are_one_line_before_loading(two_layers, tmp_path, capsys, args, words):
    full = ["composition", "--model", str(two_layers), "--out", str(tmp_path / "c.csv")]
    full += [a if not a.endswith((".txt", ".csv")) else str(tmp_path / a) for a in args]
    assert cli_main(full) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1
    assert not list(tmp_path.iterdir())


def test_single_layer_model_is_one_line(tmp_path, capsys):
    folder, _ = write(tmp_path / "one", "opt_no_bias")
    out = tmp_path / "c.csv"
    capsys.readouterr()
    assert cli_main(["composition", "--model", str(folder), "--device", "cpu",
                     "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "single layer" in err and err.count("\n") == 1 and not out.exists()


def test_figures_draw_the_frames(layer, tmp_path, capsys):
    df = composition(layer, progress=False)
    comp = run(composition_job(layer))
    fig = composition_plot(df)
    panels = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in panels] == ["Q-composition", "K-composition",
                                                  "V-composition"]
    for k, ax in enumerate(panels):
        np.testing.assert_allclose(ax.images[0].get_array(), comp.scores[k])
        squares = [p for p in ax.patches if isinstance(p, Rectangle)]
        assert len(squares) == int((comp.scores[k] > comp.baseline_hi).sum())
    footer = " ".join(t.get_text() for t in fig.texts)
    assert "baseline" in footer and str(layer.name) in footer

    b = behaviour(layer, sequences=2, length=5, progress=False)
    bars = behaviour_plot(b)
    heights = [[p.get_height() for p in ax.patches] for ax in bars.axes[:2]]
    np.testing.assert_allclose(heights[0], b[(b.layer == 0) & (b.measure == "previous_token")]
                               ["score"])
    np.testing.assert_allclose(heights[1], b[(b.layer == 1) & (b.measure == "induction")]
                               ["score"])

    out = tmp_path / "comp.svg"
    assert cli_main(["composition", "--model", str(layer.source), "--device", "cpu",
                     "--out", str(out)]) == 0
    svg = out.read_bytes()
    assert svg.lstrip().startswith((b"<?xml", b"<svg"))
    assert b"baseline: the score of random Gaussian matrices" in svg  # the footer
