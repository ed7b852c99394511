"""The softmax temperature tau and the model's family wherever a model is named or a
softmax is shown: panel titles, the status bar, the recent-models menu, figure footers
and the index, CSV columns. A GPT-2 checkpoint with "scale_attn_weights": false has
tau = 1; the tiny GPT-2 (d' = 16) has tau = sqrt(d') = 4."""

import csv
import json
import math

import numpy as np
import pytest
import torch

from detokgui.core import Layer0
from detokgui.core.base.tables import write_csv
from detokgui.core.model.conventions import temperature_label
from detokgui.core.model.sources.demo import sample_corpus, write_random_checkpoint
from detokgui.core.position_side.positional import positional_bias
from detokgui.core.position_side.tables import bias_table
from detokgui.core.text_side.empirical import TextSource, definition_label, kl
from detokgui.core.text_side.tables import kl_table

UNSCALED = "τ = 1: this GPT-2 does not scale its scores"


@pytest.fixture(scope="module")
def unscaled_ckpt(tmp_path_factory):
    """The tiny random GPT-2 (d=64, 4 heads of d'=16), trained as if without scaling."""
    folder = write_random_checkpoint(tmp_path_factory.mktemp("unscaled"), seed=3)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["scale_attn_weights"] = False
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


@pytest.fixture(scope="module")
def unscaled_layer(unscaled_ckpt):
    return Layer0.from_pretrained(str(unscaled_ckpt), device="cpu")


def _csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# --------------------------------------------------------------------------- core


def test_label_says_the_temperature_the_model_uses(tiny_layer, unscaled_layer):
    assert tiny_layer.temperature == 4.0 and unscaled_layer.temperature == 1.0
    assert temperature_label(tiny_layer) == "τ = √d′ = 4"
    assert temperature_label(tiny_layer, ascii=True) == "tau = sqrt(d') = 4"
    assert temperature_label(unscaled_layer) == UNSCALED
    assert temperature_label(unscaled_layer, ascii=True) == (
        "tau = 1: this GPT-2 does not scale its scores")
    assert definition_label(tiny_layer, "paper").endswith("τ = √d′ = 4")
    assert definition_label(unscaled_layer, "paper").endswith(UNSCALED)
    assert "τ = 1 for every model" in definition_label(tiny_layer, "code")
    assert temperature_label(unscaled_layer, short=True) == "τ = 1 (unscaled)"
    assert temperature_label(tiny_layer, short=True) == "τ = √d′ = 4"


def test_model_forward_pass_agrees_with_tau_one(unscaled_ckpt, unscaled_layer):
    """The oracle: transformers' own attention of the unscaled checkpoint is
    softmax(sum of the six terms) with no division, as `Layer0.attention` computes."""
    from transformers import GPT2LMHeadModel

    model = GPT2LMHeadModel.from_pretrained(str(unscaled_ckpt), attn_implementation="eager")
    ids = [5, 900, 17, 3000, 42, 7]
    with torch.no_grad():
        want = model(torch.tensor([ids]), output_attentions=True).attentions[0][0]
    got = unscaled_layer.attention(ids)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_csv_names_the_temperature(tiny_layer, unscaled_layer, tmp_path):
    """The bias CSV's temperature column is the tau its softmax column divides by."""
    for layer, tau in ((tiny_layer, 4.0), (unscaled_layer, 1.0)):
        path = tmp_path / f"bias{tau}.csv"
        write_csv(path, bias_table(layer, 9))
        rows = _csv(path)
        assert {float(r["temperature"]) for r in rows} == {tau}
        total = positional_bias(layer, 9, "mean").total
        for h in range(layer.n_heads):
            soft = [float(r["softmax"]) for r in rows if int(r["head"]) == h]
            want = torch.softmax(torch.from_numpy(total[h]).double() / tau, 0).numpy()
            np.testing.assert_allclose(soft, want, rtol=1e-5, atol=1e-7)


def test_kl_csv_temperature_per_definition(unscaled_layer, tiny_layer, tmp_path):
    texts = TextSource.corpus([sample_corpus()], max_texts=2)
    for layer, paper_tau in ((tiny_layer, 4.0), (unscaled_layer, 1.0)):
        for definition, tau in (("paper", paper_tau), ("code", 1.0)):
            res = kl(layer, texts, definition, heads=[0])
            path = tmp_path / f"kl-{paper_tau}-{definition}.csv"
            write_csv(path, kl_table(res))
            rows = _csv(path)
            assert rows and {float(r["temperature"]) for r in rows} == {tau}


# --------------------------------------------------------------------------- figures


def _footer(drawn) -> str:
    return " ".join(" ".join(t.get_text() for t in drawn.figure.texts).split())


def test_figure_footer_and_index_name_family_and_tau(tiny_layer, unscaled_layer, tmp_path):
    from detokgui.figures.export import export_figures
    from detokgui.figures.registry import FIGURES, FigureContext, load_figures

    load_figures()
    for layer, tau_text in ((tiny_layer, "τ = √d′ = 4"), (unscaled_layer, UNSCALED)):
        drawn = FIGURES["fig03cd_tp_tpp"].build(FigureContext(layer))
        footer = _footer(drawn)
        assert f"(GPT-2 architecture, d=64, 4 heads, {tau_text})" in footer
        assert drawn.convention.endswith(tau_text)  # the index's conventions column
        header, rows = drawn.data
        assert header[-1] == "temperature"
        assert {row[-1] for row in rows} == {layer.temperature}
    out = tmp_path / "figs"
    export_figures(unscaled_layer, out, "png", keys=["fig10_softmax_all_heads"], dpi=40)
    index = (out / "index.md").read_text(encoding="utf-8")
    model_line = next(x for x in index.splitlines() if x.startswith("- model:"))
    assert "GPT-2" in model_line and UNSCALED in model_line
    row = next(x for x in index.splitlines() if x.startswith("| Fig 10"))
    assert "/ τ" in row and UNSCALED in row and "sqrt(d')" not in row
    assert {float(r["temperature"]) for r in _csv(out / "fig10_softmax_all_heads.csv")} == {1.0}


# --------------------------------------------------------------------------- GUI


def test_panel_title_and_status_bar(qtbot, unscaled_ckpt):
    from conftest import close_jobs, open_window

    win = open_window(qtbot, unscaled_ckpt)
    try:
        layer = win.state.layer
        assert layer.summary in win.model_label.toolTip()
        assert "τ = 1 (unscaled)" in win.model_facts.text()
        assert "GPT-2" in win.windowTitle()
        win.show_view("bias")
        panel = win.panel("bias")
        qtbot.waitUntil(lambda: panel.shown_request is not None and panel.settled(),
                        timeout=10000)
        title = panel.grids["softmax"].title_text()
        assert "/ τ" in title and UNSCALED in title and "√d′" not in title
    finally:
        close_jobs(win)


def test_gpt2_panel_title_says_sqrt_d(window, qtbot):
    win = window
    assert "τ = √d′ = 4" in win.model_facts.text()
    win.show_view("bias")
    panel = win.panel("bias")
    qtbot.waitUntil(lambda: panel.shown_request is not None and panel.settled(), timeout=10000)
    assert "τ = √d′ = 4" in panel.grids["softmax"].title_text()


def test_recent_models_show_the_family(qtbot, tiny_ckpt):
    from conftest import close_jobs, open_window
    from PySide6.QtCore import QSettings

    from detokgui.gui.models import RECENT, RECENT_FAMILIES
    from detokgui.gui.options import flush_settings

    win = open_window(qtbot, tiny_ckpt)
    try:
        name = str(tiny_ckpt)
        assert win.recent_families() == {name: "gpt2"}
        labels = [a.text() for a in win.recent_menu.actions()]
        assert labels == [f"{name} (GPT-2 architecture)"]
    finally:
        close_jobs(win)
    # settings written before families were remembered: a plain list of names
    flush_settings()
    s = QSettings()
    s.remove(RECENT_FAMILIES)
    s.setValue(RECENT, [name, "gpt2-medium"])
    s.sync()
    from detokgui.gui.main_window import MainWindow

    old = MainWindow(device="cpu")
    qtbot.addWidget(old)
    try:
        assert old.recent_models() == [name, "gpt2-medium"]
        assert [a.text() for a in old.recent_menu.actions()] == [name, "gpt2-medium"]
        old.recent_menu.actions()[0].trigger()  # an old entry still loads
        qtbot.waitUntil(lambda: old.state.layer is not None, timeout=60000)
        assert [a.text() for a in old.recent_menu.actions()] == [f"{name} (GPT-2 architecture)",
                                                                  "gpt2-medium"]
        assert old.recent_families() == {name: "gpt2"}
    finally:
        close_jobs(old)


def test_temperature_label_unusual_value():
    """A temperature that is neither sqrt(d') nor 1 is written as its value."""

    class Fake:
        temperature, d_head, family, family_label = 3.0, 16, "opt", "OPT"

    assert temperature_label(Fake()) == "τ = 3"
    Fake.temperature = math.sqrt(80)
    Fake.d_head = 80
    assert temperature_label(Fake()) == "τ = √d′ = 8.944"
