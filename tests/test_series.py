"""Training series (issue 20): per-head metrics per checkpoint of a short series made by
scripts/train_series.py, on the local process pool and on a Dask LocalCluster, cached,
cancellable; `export series` and `dg.series`."""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from exported import pdf_info, svg_marks

from detokgui.core.base.progress import run
from detokgui.core.base.tables import write_csv
from detokgui.core.compare.head_metrics import HEAD_METRICS, iter_head_metrics
from detokgui.core.compare.series import (
    COLUMNS,
    iter_series,
    parse_step,
    series_folder,
    series_steps,
)
from detokgui.core.model.sources.demo import sample_corpus

ROOT = Path(__file__).resolve().parent.parent
N_QUERIES = 24


@pytest.fixture(scope="module")
def series_dir(tmp_path_factory):
    """A 4-checkpoint series (steps 0, 1, 2, 4) of a tiny model trained by the script."""
    out = tmp_path_factory.mktemp("series") / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, str(ROOT / "scripts" / "train_series.py"), "--out", str(out),
                    "--steps", "4", "--d", "32", "--heads", "4", "--layers", "1", "--ctx", "64",
                    "--batch", "4", "--sampled", "256", "--max-chars", "60000",
                    "--threads", "1"], check=True, env=env, capture_output=True, timeout=300)
    return out


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    """The first ~40 kB of the sample corpus as a jsonl file."""
    path = tmp_path_factory.mktemp("corpus") / "small.jsonl"
    with gzip.open(sample_corpus(), "rt", encoding="utf-8") as f:
        text = f.readline()
    doc = json.loads(text)["text"][:40000]
    path.write_text(json.dumps({"text": doc}) + "\n", encoding="utf-8")
    return path


def _checkpoints(series_dir):
    return [c for c, _ in series_folder(series_dir)]


def test_steps_from_names_and_folder(series_dir):
    assert parse_step("/x/run/step-000128") == 128
    assert parse_step("org/model@step128") == 128
    assert parse_step("gpt2") is None
    assert series_steps(["a/step-000016", "b/step_2"]) == [16, 2]
    assert series_steps(["gpt2", "a/step-000016"]) == [0, 1]
    assert series_steps(["a", "b"], [5, 7]) == [5, 7]
    assert [s for _, s in series_folder(series_dir)] == [0, 1, 2, 4]
    assert (series_dir / "train_log.json").is_file()


def test_rows_equal_direct_head_metrics(series_dir, small_corpus, tmp_path):
    from detokgui.core import Layer0
    from detokgui.core.corpus.counts import corpus_counts

    result = run(iter_series([str(series_dir)], corpus=[str(small_corpus)],
                             n_queries=N_QUERIES, seed=3, workers=2))
    assert result.steps == [0, 1, 2, 4]
    frame = result.frame()
    assert list(frame.columns) == list(COLUMNS)
    assert len(frame) == 4 * 4 * len(HEAD_METRICS)
    for ckpt, step in series_folder(series_dir):
        layer = Layer0.from_pretrained(ckpt)
        counts = corpus_counts([str(small_corpus)], layer.tokenizer, layer.n_vocab)
        direct = run(iter_head_metrics(layer, counts=counts, n_queries=N_QUERIES, seed=3))
        for m in HEAD_METRICS:
            got = frame[(frame.checkpoint == ckpt) & (frame.metric == m)].sort_values("head")
            assert (got.step == step).all()
            assert list(got["head"]) == list(range(4))
            if m == "head_class":
                assert list(got.value) == list(direct[m])
            else:
                np.testing.assert_allclose(got.value.to_numpy(), np.asarray(direct[m]), rtol=1e-5,
                                           atol=1e-6, equal_nan=True)
    assert np.isfinite(result.metric("mean_bigram_auroc")).any()
    rho = result.metric("spearman_te_count")
    assert np.isnan(rho[0]).all()  # step 0: b^QK = 0, T_e constant, no correlation
    assert np.isfinite(rho[1:]).all()


def test_local_pool_and_dask_cluster_give_identical_csvs(series_dir, small_corpus, tmp_path):
    distributed = pytest.importorskip("distributed")
    ckpts = _checkpoints(series_dir)
    # one torch thread per task in both (a pool on a many-core machine would get more,
    # and BLAS sums in another order with more threads)
    local = run(iter_series(ckpts, corpus=[str(small_corpus)], n_queries=N_QUERIES, workers=2,
                            threads=1, use_cache=False))
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        dask = run(iter_series(ckpts, corpus=[str(small_corpus)], n_queries=N_QUERIES,
                               scheduler=cluster.scheduler_address, threads=1,
                               use_cache=False))
    write_csv(tmp_path / "local.csv", local.table())
    write_csv(tmp_path / "dask.csv", dask.table())
    a, b = (tmp_path / "local.csv").read_bytes(), (tmp_path / "dask.csv").read_bytes()
    assert a.count(b"\n") == 1 + 4 * 4 * len(HEAD_METRICS)
    assert a == b


def test_cache_hit_on_second_run(series_dir):
    ckpts = _checkpoints(series_dir)[:3]
    first = run(iter_series(ckpts, n_queries=N_QUERIES, seed=11, workers=1))
    second = run(iter_series(ckpts, n_queries=N_QUERIES, seed=11, workers=1))
    assert first.cached == [False] * 3
    assert second.cached == [True] * 3
    for m in HEAD_METRICS:
        np.testing.assert_array_equal(first.metric(m), second.metric(m))
    other = run(iter_series(ckpts[:1], n_queries=N_QUERIES, seed=12, workers=1))
    assert other.cached == [False]  # another seed is another entry


def test_cancel_stops_submitting(series_dir):
    from detokgui.core.base.paths import cache_root

    ckpts = _checkpoints(series_dir)
    folder = cache_root() / "series"
    before = set(folder.glob("*.npz")) if folder.exists() else set()
    job = iter_series(ckpts, n_queries=N_QUERIES, seed=99, workers=1)
    messages = []
    for p in job:
        messages.append(p.message)
        if p.message.startswith("1/4"):
            job.close()  # what the GUI's Cancel does between yields
            break
    assert any(m.startswith("1/4") for m in messages)
    after = set(folder.glob("*.npz")) - before
    assert len(after) == 1  # one worker: the others were never submitted


def test_bad_input_is_one_clear_error(series_dir, tmp_path):
    from detokgui.core.base.errors import DetokError, InputError

    with pytest.raises(InputError, match="steps"):
        run(iter_series(_checkpoints(series_dir), steps=[0, 1]))
    with pytest.raises(DetokError, match="missing"):
        run(iter_series([str(tmp_path / "missing")], workers=1))
    with pytest.raises(InputError, match="Dask scheduler"):
        run(iter_series(_checkpoints(series_dir)[:1], scheduler="tcp://127.0.0.1:1"))


def test_export_series_cli_and_api(series_dir, tmp_path):
    import detokgui as dg
    from detokgui.cli import main

    out = tmp_path / "s.csv"
    ckpts = _checkpoints(series_dir)
    assert main(["series", "--models", *ckpts[:2], "--steps", "10", "20", "--out", str(out),
                 "--queries", str(N_QUERIES), "--workers", "1"]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == ",".join(COLUMNS)
    assert len(lines) == 1 + 2 * 4 * len(HEAD_METRICS)
    assert {line.split(",")[1] for line in lines[1:]} == {"10", "20"}
    frame = dg.series(ckpts[:2], steps=[10, 20], queries=N_QUERIES, workers=1)
    assert list(frame.columns) == list(COLUMNS)
    assert len(frame) == len(lines) - 1
    assert main(["series", "--models", *ckpts[:2], "--steps", "1", "--out", str(out)]) == 2


def test_series_panel_draws_lines_and_opens_a_clicked_checkpoint(qtbot, series_dir,
                                                                 tmp_path):
    from detokgui.gui.jobs import JobRunner
    from detokgui.gui.panels.series_view import SeriesPanel
    from detokgui.gui.state import AppState

    state, jobs = AppState(), JobRunner()
    panel = SeriesPanel(state, jobs)
    qtbot.addWidget(panel)
    panel.show()
    panel.choose_folder(str(series_dir))
    assert panel.list.count() == 4
    panel.queries.setValue(N_QUERIES)
    state.set_head(2)
    panel.start()
    assert panel.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: panel.series is not None, timeout=240000)
    assert not panel.cancel_button.isEnabled() and panel.run_button.isEnabled()
    items = panel.plot.listDataItems()
    assert len(items) == 4
    expected = run(iter_series([str(series_dir)], n_queries=N_QUERIES, workers=1))
    for h, item in enumerate(items):
        x, y = item.getData()
        assert len(x) == 4
        np.testing.assert_allclose(y, expected.metric("prev_token_mass")[:, h], rtol=1e-6)
        assert item.opts["pen"].width() == (3 if h == 2 else 1)
    panel.metric_box.setCurrentIndex(panel.metric_box.findData("bqk_norm"))
    _, y = panel.plot.listDataItems()[0].getData()
    np.testing.assert_allclose(y, expected.metric("bqk_norm")[:, 0], rtol=1e-6)
    (frame,) = panel.plot_frames()  # its SVG and PDF: a panel per metric, a line per head
    for fmt in ("png", "svg", "pdf"):
        frame.export(tmp_path / f"series.{fmt}")
    drawn = expected.frame().dropna().groupby(["metric", "head"]).ngroups
    assert svg_marks(tmp_path / "series.svg")["lines"] == drawn >= 4 * 4
    assert pdf_info(tmp_path / "series.pdf")["pages"] == 1
    opened = []
    state.modelRequested.connect(opened.append)
    item = panel.plot.listDataItems()[1]
    last = item.scatter.points()[-1]
    panel._points_clicked(item, [last])
    assert opened == [str(series_dir / "step-000004")]
    assert state.head == 1


def test_series_panel_cancel(qtbot, series_dir):
    from detokgui.gui.jobs import JobRunner
    from detokgui.gui.panels.series_view import SeriesPanel
    from detokgui.gui.state import AppState

    state, jobs = AppState(), JobRunner()
    panel = SeriesPanel(state, jobs)
    qtbot.addWidget(panel)
    panel.choose_folder(str(series_dir))
    panel.queries.setValue(N_QUERIES + 1)  # not cached
    panel.start()
    panel.cancel()
    qtbot.waitUntil(lambda: panel.run_button.isEnabled(), timeout=60000)
    assert "cancelled" in panel.status.text()
    assert panel.series is None


def test_export_figures_with_series_adds_the_series_figure(series_dir, tmp_path, capsys):
    from detokgui.cli import main

    out = tmp_path / "figs"
    key = "study_series_head_metrics"
    assert main(["figures", "--model", "demo", "--out", str(out), "--only", key,
                 "--format", "png", "--series", str(series_dir)]) == 0
    assert (out / f"{key}.png").read_bytes()[:4] == b"\x89PNG"
    lines = (out / f"{key}.csv").read_text().splitlines()
    assert lines[0] == ",".join(COLUMNS) and len(lines) == 1 + 4 * 4 * len(HEAD_METRICS)
    assert key in (out / "index.md").read_text()
    # without --model, the figures are of the series' last checkpoint (not gpt2, which
    # may not be downloaded)
    last = max(series_folder(series_dir), key=lambda c: c[1])[0]
    out4 = tmp_path / "f4"
    assert main(["figures", "--out", str(out4), "--only", key, "--format", "png",
                 "--series", str(series_dir)]) == 0
    assert "last checkpoint" in capsys.readouterr().err
    model_line = next(line for line in (out4 / "index.md").read_text().splitlines()
                      if line.startswith("- model:"))
    assert Path(last).name in model_line
    # without --series the figure is not part of the set; --steps alone is refused
    assert main(["figures", "--model", "demo", "--out", str(tmp_path / "f2"), "--only", key]) == 2
    assert main(["figures", "--model", "demo", "--out", str(tmp_path / "f3"),
                 "--steps", "1"]) == 2
