"""A model name that cannot be opened (issue 40, point 7): the message suggests the close
names this machine knows ("did you mean 'gpt2'?": the caches' models, the demo models,
the well-known family names) and suggests setting HF_HUB_OFFLINE=1 only where it is not
set already."""

from __future__ import annotations

from conftest import closed_port

from detokgui.cli import main as cli_main
from detokgui.core.model.sources import hub
from detokgui.core.model.sources.model_names import (
    WELL_KNOWN_MODELS,
    close_model_names,
    known_models,
)


def test_close_names_among_the_known():
    assert close_model_names("gtp2") == ["gpt2"]
    assert close_model_names("gpt2-larg") == ["gpt2-large"]
    assert close_model_names("GPT2") == ["gpt2"]  # the name in another case
    assert close_model_names("gpt-neo-125m") == ["EleutherAI/gpt-neo-125m"]  # owner left out
    assert close_model_names("opt-1.3B") == ["facebook/opt-1.3b"]
    assert close_model_names("demoo") == ["demo"]
    assert close_model_names("randm-demo") == ["random-demo"]
    assert close_model_names("gtp2@step100") == ["gpt2@step100"]  # the revision kept
    assert close_model_names("gpt2") == [] and close_model_names("xyzzy") == []
    assert {"demo", "random-demo", *WELL_KNOWN_MODELS} <= set(known_models())


def test_the_caches_models_are_known(empty_hf_cache, monkeypatch, tmp_path):
    (empty_hf_cache / "models--acme--tiny-story-model").mkdir()
    (empty_hf_cache / "datasets--acme--tiny-story-data").mkdir()  # not a model
    monkeypatch.setenv("DETOKGUI_CACHE_DIR", str(tmp_path / "detokgui"))
    (hub.repo_folder("lab/layer-zero-probe")).mkdir(parents=True)
    assert "acme/tiny-story-model" in known_models()
    assert "acme/tiny-story-data" not in known_models()
    assert close_model_names("acme/tiny-stroy-model") == ["acme/tiny-story-model"]
    assert hub.cached_repos() == ["lab/layer-zero-probe"]
    assert hub.did_you_mean("lab/layer-zero-prob") == " Did you mean 'lab/layer-zero-probe'?"
    assert hub.did_you_mean("something-else-entirely") == ""


def error_line(capsys, *args) -> tuple[int, str]:
    rc = cli_main([str(a) for a in args])
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return rc, lines[0]


def test_offline_typo_is_told_the_close_name(monkeypatch, empty_hf_cache, tmp_path, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "t.csv"
    rc, line = error_line(capsys, "topk", "--model", "gtp2", "--query", " Korea", "--out", out)
    assert rc == 2 and not out.exists()
    assert line.startswith("detokgui export topk: error: The model 'gtp2' is not in the local "
                           "Hugging Face cache")
    assert "HF_HUB_OFFLINE is set. Did you mean 'gpt2'?" in line
    assert "HF_HUB_OFFLINE=1" not in line and "Unset HF_HUB_OFFLINE" in line


def test_unreachable_hub_typo_is_told_both(monkeypatch, empty_hf_cache, tmp_path, capsys):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    out = tmp_path / "t.csv"
    rc, line = error_line(capsys, "topk", "--model", "gtp2", "--query", " Korea", "--out", out)
    assert rc == 2 and "the hub cannot be reached. Did you mean 'gpt2'?" in line
    assert line.endswith("(HF_HUB_OFFLINE=1 makes this check instant.)")
