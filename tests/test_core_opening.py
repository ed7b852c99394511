"""The Qt-free helpers the window uses to open models, corpora and sessions: a model's
title and family, the first start's reasons, a session's model and option entries, the
sample corpus's paths, a corpus's one-line description. No Qt, no model loaded."""

from __future__ import annotations

from types import SimpleNamespace

from detokgui.core.base.session import model_entry, option_fits
from detokgui.core.corpus.check import describe
from detokgui.core.corpus.documents import SAMPLE_NAME, sample_paths, stored_path
from detokgui.core.model.families import with_family
from detokgui.core.model.sources.default_model import (
    OFFLINE,
    REACHABLE,
    UNREACHABLE,
    Unavailable,
    why_not_cached,
)
from detokgui.core.model.sources.demo import sample_corpus
from detokgui.core.model.titles import model_title, short_commit

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_title_names_the_commit_and_the_family():
    hub = SimpleNamespace(name="gpt2@step1000", revision=SHA)
    folder = SimpleNamespace(name="/models/x")
    assert short_commit(hub) == SHA[:10] and short_commit(folder) is None
    assert model_title(hub) == f"gpt2@step1000 (commit {SHA[:10]})"
    assert model_title(folder) == "/models/x"
    assert with_family("gpt2", "GPT-2") == "gpt2 (GPT-2 architecture)"
    assert with_family("demo model (GPT-2 architecture)", "GPT-2").count("GPT-2") == 1
    assert with_family("x", "") == "x"


def test_unavailable_says_what_the_probe_found_and_what_to_do():
    u = Unavailable("gpt2", why_not_cached("gpt2", None))
    assert "Checking" in u.what_to_do()
    reachable = u.probed(REACHABLE)
    assert reachable.reason == why_not_cached("gpt2", REACHABLE) and reachable.downloadable
    assert "button" in reachable.what_to_do() and "download gpt2" not in reachable.what_to_do()
    assert "HF_HUB_OFFLINE" in u.probed(OFFLINE).what_to_do()
    assert "`detokgui download gpt2 --out FOLDER`" in u.probed(UNREACHABLE).what_to_do()
    failed = Unavailable("gpt2", "gpt2 could not be loaded: broken")
    assert failed.probed(UNREACHABLE).reason == failed.reason  # not a cache reason: kept


def test_session_entries(tmp_path):
    layer = SimpleNamespace(name="ignored", revision=SHA)
    assert model_entry(None, None) is None
    assert model_entry("gpt2", layer) == {"name": "gpt2", "revision": SHA}
    entry = model_entry(str(tmp_path), SimpleNamespace(name="x"))
    assert entry == {"name": str(tmp_path.absolute()), "revision": None}
    assert option_fits(3, 1.5) and not option_fits(True, 1) and not option_fits(1, True)
    assert option_fits("a", None) and option_fits(False, True) and not option_fits("1", 1)


def test_sample_corpus_paths(tmp_path):
    assert sample_paths([SAMPLE_NAME, tmp_path]) == [str(sample_corpus()), str(tmp_path)]
    assert stored_path(sample_corpus()) == SAMPLE_NAME
    assert stored_path(tmp_path) == str(tmp_path.absolute())


def test_corpus_description():
    assert describe([sample_corpus()], 12, 3_100_000) == "sample corpus (12 files, 3.1 MB)"
    assert describe(["/d/a.jsonl"], 1, 200_000, 1) == "a.jsonl (1 file, 0.2 MB, 1 skipped)"
    assert describe(["/d/a.jsonl", "/d/b"], 3, 0) == "a.jsonl + 1 more (3 files, 0.0 MB)"


def test_stored_options_a_view_takes():
    from dataclasses import dataclass

    from detokgui.core.base.session import option_changes

    @dataclass(frozen=True)
    class Options:
        k: int = 10
        scale: float = 1.0
        mode: str = "a"

    changes, refused = option_changes({"k": 5, "scale": 2, "mode": "z", "gone": 1, "k2": 1.5},
                                      Options(), lambda key, value: value != "z")
    assert changes == {"k": 5, "scale": 2}
    assert refused == ["mode = 'z' (not a value it takes)", "gone (unknown)", "k2 (unknown)"]
    assert option_changes({"k": "5"}, Options())[1] == ["k = '5' (not a value it takes)"]


def test_corpus_counting_and_skipped_lines(tmp_path):
    from detokgui.core.corpus.documents import Skipped, skipped_items
    from detokgui.core.corpus.spec import counted_by

    assert counted_by(3, None) == "by 3 local processes"
    assert counted_by(1, "") == "by 1 local process"
    assert counted_by(None, "tcp://h:8786") == "on the Dask cluster at tcp://h:8786"
    skipped = [Skipped(tmp_path / f"{i}.md", "not a corpus file type") for i in range(3)]
    assert skipped_items(skipped, 2) == [f"{tmp_path / '0.md'} (not a corpus file type)",
                                         f"{tmp_path / '1.md'} (not a corpus file type)",
                                         "and 1 more"]


def test_selection_in_range():
    from detokgui.core.base.session import selection_in_range

    sel = {"head": 3, "query_token": -1, "key_token": 99, "query_position": 7}
    assert selection_in_range(sel, 4, 100, 8) == (sel, [])
    fits, bad = selection_in_range({"head": 4, "key_token": 100}, 4, 100, 8)
    assert fits == {"query_token": -1, "query_position": 0}
    assert bad == ["head 4", "key token 100"]
