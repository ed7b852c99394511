"""The library API (`import detokgui as dg`) as a notebook user calls it, on the demo model
and the sample corpus: every analysis's DataFrame equals the CSV that `detokgui export`
writes for the same arguments (a subprocess, as a user runs it), every plot is a Figure
with its panels, Ctrl+C in a long pass leaves no partial cache file, and nothing imports
Qt.

The CLI subprocesses and this process share detokgui's disk cache (`shared_cache`), so
that the whole-vocabulary AUROC pass (a minute on two cores) runs once: `export auroc`
and `export stats` read what `dg.auroc` computed. For those two the comparison checks the
arguments and the table, not a second computation of the same numbers.
"""

from __future__ import annotations

import csv
import math
import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from approx import assert_rows_close
from conftest import SUBPROCESS_ENV, ctrl_c_raises
from matplotlib.figure import Figure
from test_cli import run_cli

import detokgui as dg

TEXT = " North Korea is in Asia"


@pytest.fixture(scope="module")
def shared_cache():
    """This process's detokgui cache is the CLI subprocesses' cache while the module runs."""
    before = os.environ.get("DETOKGUI_CACHE_DIR")
    os.environ["DETOKGUI_CACHE_DIR"] = SUBPROCESS_ENV["DETOKGUI_CACHE_DIR"]
    yield Path(SUBPROCESS_ENV["DETOKGUI_CACHE_DIR"])
    if before is None:
        os.environ.pop("DETOKGUI_CACHE_DIR", None)
    else:
        os.environ["DETOKGUI_CACHE_DIR"] = before


#: what `dg.load` reported while the `layer` fixture loaded the demo model
LOAD_REPORTS: list = []


@pytest.fixture(scope="module")
def layer(shared_cache):
    return dg.load("demo", device="cpu", progress=LOAD_REPORTS.append)


def test_load_returns_the_layer_and_reports_progress(layer, tmp_path):
    from detokgui.core import Layer0

    assert isinstance(layer, Layer0) and layer.name.startswith("demo")
    assert str(layer.device) == "cpu"
    fractions = [p.fraction for p in LOAD_REPORTS]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    from detokgui.core.base.errors import ModelLoadError

    with pytest.raises(ModelLoadError):
        dg.load(tmp_path / "missing", progress=False)


def cache_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


# --------------------------------------------------------------------------- Ctrl+C


def test_interrupt_stops_a_long_pass_cleanly(layer, shared_cache):
    """A SIGINT (what Ctrl+C and a notebook's interrupt send) during the AUROC pass over
    V x V scores raises KeyboardInterrupt, writes no cache entry, and the same call then
    runs to the end."""
    dg.counts(layer, "sample", progress=False)  # cached, as is the sigma table on the layer:
    dg.sigma(layer, progress=False)  # the pass is the first to report
    before = cache_files(shared_cache)
    seen = []

    def ctrl_c(p):
        seen.append(p)
        if 0.0 < p.fraction < 1.0:
            signal.raise_signal(signal.SIGINT)

    with ctrl_c_raises(), pytest.raises(KeyboardInterrupt):
        dg.auroc(layer, "sample", heads=7, progress=ctrl_c)
    assert seen and 0.0 < seen[-1].fraction < 1.0
    assert seen[-1].message.startswith("whole-vocabulary pass")
    after = cache_files(shared_cache)
    assert after == before, f"left behind: {sorted(after - before)}"

    reports = []
    df = dg.auroc(layer, "sample", heads=7, progress=reports.append)
    assert reports[-1].fraction == 1.0
    assert set(df["head"]) == {7} and len(df) > 1000
    new = cache_files(shared_cache) - before
    assert any(f.startswith("auroc") for f in new) and not any(f.endswith(".part") for f in new)


# --------------------------------------------------------------------------- the CLI's CSVs

#: name -> (arguments of `detokgui export NAME`, the same call of the API, ranked spec)
CASES = {
    "terms": (["terms", "--text", TEXT], lambda L: dg.terms(L, TEXT), None),
    "sigma": (["sigma"], lambda L: dg.sigma(L), None),
    "topk": (["topk", "--query", " Korea", "--query", "iens", "--k", "5", "--head", "7"],
             lambda L: dg.topk(L, [" Korea", "iens"], k=5, heads=7),
             ("score", "rank", ("key_id", "key_token"))),
    "topk_queries": (["topk", "--direction", "queries", "--key", " Korea", "--sigma", "none"],
                     lambda L: dg.topk(L, " Korea", direction="queries", sigma="none"),
                     ("score", "rank", ("query_id", "query_token"))),
    "heatmap": (["heatmap", "--tokens", TEXT, "--head", "3"],
                lambda L: dg.heatmap(L, TEXT, heads=3), None),
    "bias": (["bias", "--position", "50", "--convention", "mean-sigma", "--sigma", "max"],
             lambda L: dg.bias(L, i=50, convention="mean-sigma", sigma="max"), None),
    "neurons": (["neurons", "--scaled"], lambda L: dg.neurons(L, scaled=True), None),
    "counts": (["counts", "--corpus", "sample"], lambda L: dg.counts(L, "sample"), None),
    "auroc": (["auroc", "--corpus", "sample", "--head", "7"],
              lambda L: dg.auroc(L, "sample", heads=7), None),
    "stats": (["stats", "--head", "7"], lambda L: dg.stats(L, heads=7), None),
    "frequency": (["frequency", "--corpus", "sample", "--head", "1", "--zero-counts",
                   "include"], lambda L: dg.frequency(L, "sample", heads=1,
                                                      zero_counts="include"), None),
    "neighbours": (["neighbours", "--token", " king", "--minus", " man", "--plus", " woman",
                    "--k", "8"],
                   lambda L: dg.neighbours(L, " king", k=8, minus=" man", plus=" woman"),
                   ("cosine", "rank", ("token_id", "token"))),
    "sentence": (["sentence", "--text", TEXT], lambda L: dg.sentence(L, TEXT), None),
    "empirical": (["empirical", "--corpus", "sample", "--position", "20", "--max-texts", "12"],
                  lambda L: dg.empirical(L, "sample", 20, max_texts=12), None),
    "kl": (["kl", "--corpus", "sample", "--definition", "code", "--max-texts", "6"],
           lambda L: dg.kl(L, "sample", definition="code", max_texts=6), None),
    "sinks": (["sinks", "--corpus", "sample", "--max-texts", "4", "--prepend-bos"],
              lambda L: dg.sinks(L, "sample", max_texts=4, prepend_bos=True), None),
    "neuron": (["neuron", "--neuron", "3", "--k", "6", "--heads", "0", "1"],
               lambda L: dg.neuron(L, 3, k=6, heads=[0, 1]), None),
    "compare": (["compare", "--compare", "demo", "--queries", "16", "--seed", "1"],
                lambda L: dg.compare(L, L, queries=16, seed=1), None),
}


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def cli_csv(layer, tmp_path_factory):
    """The CSV rows of every case, `detokgui export` run in subprocesses (two at a time;
    `stats` after `auroc`, whose pass caches head 7's statistics)."""
    out = tmp_path_factory.mktemp("cli")

    def run(name):
        args = CASES[name][0]
        path = out / f"{name}.csv"
        r = run_cli(*args, "--model", "demo", "--device", "cpu", "--out", str(path))
        assert r.returncode == 0, f"{name}: {r.stderr}"
        return name, read_csv(path)

    def auroc_then_stats():
        return [run("auroc"), run("stats")]

    rest = [n for n in CASES if n not in ("auroc", "stats")]
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(auroc_then_stats)
        results = list(pool.map(run, rest))
        results += first.result()
    return dict(results)


@pytest.fixture(scope="module")
def frames(layer, cli_csv):
    """Every case's DataFrame (after the CLI, so that the shared cache is filled)."""
    return {name: call(layer) for name, (_, call, _) in CASES.items()}


def api_rows(df):
    """The DataFrame's rows as csv.DictReader reads the CLI's: text, floats as floats."""
    floats = [c for c in df.columns if df[c].dtype.kind == "f"]
    rows = []
    for rec in df.to_dict("records"):
        rows.append({c: (float(v) if c in floats else str(v)) for c, v in rec.items()})
    return rows, floats


@pytest.mark.parametrize("name", list(CASES))
def test_dataframe_equals_the_cli_csv(name, frames, cli_csv):
    df, want = frames[name], cli_csv[name]
    assert list(df.columns) == list(want[0].keys())
    got, floats = api_rows(df)
    assert_rows_close(got, want, floats, ranked=CASES[name][2])


def test_attrs_carry_the_conventions(frames, layer):
    assert all(df.attrs["model"] == layer.name for df in frames.values())
    assert {n: df.attrs["analysis"] for n, df in frames.items()} == {
        n: n.removesuffix("_queries") for n in frames}
    topk = frames["topk"].attrs
    assert topk["sigma"] == "mean" and topk["heads"] == [7] and topk["k"] == 5
    assert topk["tokens"] == [layer.tokenizer.encode(" Korea")[-1],
                              layer.tokenizer.encode("iens")[-1]]
    bias = frames["bias"].attrs
    assert (bias["i"], bias["convention"], bias["sigma"]) == (50, "mean-sigma", "max")
    auroc = frames["auroc"]
    assert auroc.attrs["no_bigram"] == "skip"
    assert math.isclose(auroc.attrs["mean_auroc"][7], auroc["auroc"].mean(), rel_tol=1e-9)
    assert frames["kl"].attrs["definition"] == "code"
    html = frames["topk"].dg._repr_html_()
    assert "sigma = mean over positions" in html and "<table" in html and "key_token" in html
    assert frames["topk"][frames["topk"]["rank"] == 1].attrs == topk  # kept when filtered
    # Jupyter's display of the frame itself (and of one derived from it): the conventions
    # above pandas' own table
    for shown in (frames["topk"], frames["topk"].sort_values("score").head(3)):
        html = shown._repr_html_()
        assert "sigma = mean over positions" in html and "detokgui topk" in html
        assert html.endswith(pd.DataFrame(shown)._repr_html_() + "</div>")


# --------------------------------------------------------------------------- GUI-only analyses


def test_pattern_is_the_softmax_of_its_scores(layer):
    df = dg.pattern(layer, " the", 60, heads=[1, 7])
    assert set(df["head"]) == {1, 7} and len(df) == 2 * 61
    for _, rows in df.groupby("head"):
        s = rows["t_ep"] + rows["t_pp"] + rows["t_p"]
        np.testing.assert_allclose(rows["score"], s, rtol=1e-5, atol=1e-6)
        e = np.exp((s - s.max()) / layer.temperature)
        np.testing.assert_allclose(rows["pattern"], e / e.sum(), rtol=1e-4, atol=1e-7)


def test_slopes_are_least_squares_slopes_of_the_curves(layer):
    df = dg.slopes(layer, k=3, heads=[2, 5])
    assert list(df.columns) == ["head", "side", "rank", "token_id", "token", "slope"]
    j = np.arange(layer.n_positions)
    for row in df.itertuples():
        h, u = row.head, row.token_id
        with torch.no_grad():  # e_u W^QK_h p_j^T straight from the folded weights
            curve = (layer.P @ layer.Wk[h]) @ (layer.E[u] @ layer.Wq[h])
        slope = np.polyfit(j, curve.double().numpy(), 1)[0]
        assert math.isclose(row.slope, slope, rel_tol=1e-3, abs_tol=1e-6)
    top = df[(df["head"] == 2) & (df["side"] == "top")]["slope"].to_numpy()
    assert np.all(np.diff(top) <= 0)


def test_ov_and_head_classes(layer):
    ov = dg.ov(layer, " Korea", k=4, heads=[0, 7])
    assert len(ov) == 2 * 2 * 4 and set(ov["side"]) == {"top", "bottom"}
    top = ov[(ov["head"] == 0) & (ov["side"] == "top")]["score"].to_numpy()
    bottom = ov[(ov["head"] == 0) & (ov["side"] == "bottom")]["score"].to_numpy()
    assert np.all(np.diff(top) <= 0) and np.all(np.diff(bottom) >= 0) and top[-1] > bottom[-1]
    classes = dg.head_classes(layer, progress=False)
    assert list(classes["head"]) == list(range(layer.n_heads))
    assert set(classes["label"]) <= {"duplicate-token", "detokenization", "contextual", "other"}


def test_bad_input_is_one_clear_error(layer):
    from detokgui.core.base.errors import InputError

    with pytest.raises(InputError, match="outside"):
        dg.bias(layer, i=layer.n_positions)
    with pytest.raises(InputError, match="is 2 tokens"):
        dg.neighbours(layer, " North Korea")
    with pytest.raises(InputError, match="Head 9"):
        dg.topk(layer, " Korea", heads=[1, 9])
    with pytest.raises(InputError, match="needs a corpus"):
        dg.auroc(layer, None)


# --------------------------------------------------------------------------- plots

#: name -> visible axes of its plot (panels + colour bars) for the case's frame
PANELS = {
    "terms": 14, "sigma": 1, "topk": 2, "topk_queries": 8, "heatmap": 2, "bias": 32,
    "neurons": 1, "counts": 1, "auroc": 1, "stats": 1, "frequency": 1, "neighbours": 1,
    "sentence": 18, "empirical": 8, "kl": 8, "neuron": 1,
}


def visible_axes(fig) -> int:
    return sum(ax.get_visible() for ax in fig.axes)


@pytest.mark.parametrize("name", list(PANELS))
def test_every_plot_is_a_figure(name, frames):
    fig = frames[name].dg.plot()
    assert isinstance(fig, Figure)
    assert visible_axes(fig) == PANELS[name]
    footer = " ".join(" ".join(t.get_text() for t in fig.texts).split())
    assert frames[name].attrs["model"] in footer


def test_plots_of_gui_analyses_and_filters(layer, frames):
    assert visible_axes(dg.plot(dg.pattern(layer, " the", 60, heads=[1, 7]))) == 3
    assert visible_axes(dg.plot(dg.slopes(layer, k=3, heads=[2, 5]))) == 2
    assert visible_axes(dg.plot(dg.ov(layer, " Korea", k=4, heads=[0, 7]))) == 2
    assert visible_axes(dg.plot(dg.head_classes(layer, progress=False))) == 1
    assert visible_axes(dg.plot(frames["bias"], heads=[1, 7])) == 8
    kept = frames["kl"][frames["kl"]["head"] == 3]
    assert visible_axes(kept.dg.plot()) == 1


def test_figure_is_the_exported_figure(layer):
    fig = dg.figure(layer, "fig03cd_tp_tpp", heads=[1, 7])
    assert isinstance(fig, Figure) and visible_axes(fig) == 4
    from detokgui.core.base.errors import InputError

    with pytest.raises(InputError, match="no figure"):
        dg.figure(layer, "fig99")


# --------------------------------------------------------------------------- no Qt

NO_QT = """
import sys, time
t = time.perf_counter()
import detokgui as dg
took = time.perf_counter() - t
heavy = [m for m in ("torch", "pandas", "PySide6") if m in sys.modules]
assert not heavy, heavy
layer = dg.load("demo", progress=False)
text = " North Korea is in Asia"
frames = [dg.terms(layer, text), dg.sigma(layer), dg.topk(layer, " Korea", k=3),
          dg.heatmap(layer, text), dg.neighbours(layer, " king", k=3), dg.bias(layer, i=50),
          dg.neurons(layer), dg.pattern(layer, " the", 30, heads=[1]),
          dg.head_classes(layer, sample=16, progress=False), dg.slopes(layer, k=3),
          dg.counts(layer, "sample", progress=False),
          dg.stats(layer, heads=7, progress=False),
          dg.auroc(layer, "sample", heads=7, progress=False),
          dg.frequency(layer, "sample", heads=7, progress=False),
          dg.sentence(layer, text, heads=[0]),
          dg.empirical(layer, "sample", 10, max_texts=4, progress=False),
          dg.kl(layer, "sample", max_texts=2, heads=[0], progress=False),
          dg.sinks(layer, n_texts=2, length=16, progress=False),
          dg.neuron(layer, 3, k=3, heads=[0], progress=False),
          dg.ov(layer, " Korea", k=3),
          dg.compare(layer, layer, queries=8, progress=False),
          dg.compare_metrics(layer, layer, queries=8, progress=False),
          dg.head_metrics(layer, queries=8, progress=False),
          dg.composition(layer, progress=False),
          dg.behaviour(layer, sequences=2, length=8, progress=False)]
for df in frames:
    df.dg.plot()
    df.dg._repr_html_()
dg.figure(layer, "fig03a_tp", heads=[1])
assert "PySide6" not in sys.modules, "Qt was imported"
print("ok", ",".join(sorted({df.attrs["analysis"] for df in frames})), f"{took:.2f}")
"""


def test_import_and_every_analysis_without_qt(layer, cli_csv):
    """In a fresh interpreter: `import detokgui` loads neither torch, pandas nor Qt, and
    loading the demo model, every analysis and every plot import no Qt (stats and AUROC
    come from the shared cache that the CLI fixture filled)."""
    r = subprocess.run([sys.executable, "-c", NO_QT], check=False, capture_output=True,
                       text=True, timeout=300, env=SUBPROCESS_ENV)
    assert r.returncode == 0, r.stderr[-3000:]
    from detokgui.api import ANALYSES

    assert r.stdout.split()[:2] == ["ok", ",".join(sorted(ANALYSES))], r.stdout
