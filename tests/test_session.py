"""Session files (issue 45, point 2) without Qt: the format (`core.base.session`), its
checks and migrations, a stored version-1 file, and `dg.open_session`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from detokgui.core.base import session as sess
from detokgui.core.base.errors import InputError

STORED_V1 = Path(__file__).parent / "data" / "session-v1.json"


def test_stored_version_1_file_reads():
    data = sess.read_session(STORED_V1)
    assert data["version"] == sess.VERSION
    assert data["models"]["a"] == {"name": "demo", "revision": None}
    assert data["selection"]["sigma"] == {"kind": "at", "i": 3, "j": 5}
    assert data["panels"]["topk"] == {"direction": "queries", "k": 7}


def test_write_then_read_gives_the_same_session(tmp_path):
    data = sess.read_session(STORED_V1)
    data["corpus"] = {"paths": ["/data/a.txt"], "text_column": "body"}
    data["models"]["b"] = {"name": "gpt2@main", "revision": "a" * 40}
    path = sess.write_session(tmp_path / "s.detokgui.json", data)
    back = sess.read_session(path)
    from detokgui import __version__

    assert back["detokgui"] == __version__ and back["saved"] != data["saved"]
    assert {k: v for k, v in back.items() if k != "saved" and k != "detokgui"} == \
        {k: v for k, v in data.items() if k != "saved" and k != "detokgui"}
    text = path.read_text()
    assert text.startswith('{\n  "format": "detokgui-session",\n  "version": 1')  # readable


def test_a_later_version_migrates_an_older_file(monkeypatch):
    """How a version 2 would read this stored version-1 file: its migration runs."""
    def v1_to_v2(data):
        data["selection"]["heads"] = [data["selection"].pop("head")]
        return data

    monkeypatch.setattr(sess, "VERSION", 2)
    monkeypatch.setitem(sess.MIGRATIONS, 1, v1_to_v2)
    data = sess.read_session(STORED_V1)
    assert data["version"] == 2 and data["selection"]["heads"] == [7]


@pytest.mark.parametrize("text, message", [
    ("{not json", "damaged JSON at line 1"),
    ('{"format": "something-else"}', "not a detokgui session file"),
    ('{"format": "detokgui-session", "version": 99}', "version 99, written by a newer"),
    ('{"format": "detokgui-session", "version": "1"}', "must be a whole number"),
    (('{"format": "detokgui-session", "version": 1, "models": {}, "selection": '
      '{"head": "7"}, "panels": {}}'), "selection.head must be a whole number"),
    (('{"format": "detokgui-session", "version": 1, "models": {"a": {"name": ""}}, '
      '"selection": {}, "panels": {}}'), "models.a must be null or an object"),
    (('{"format": "detokgui-session", "version": 1, "models": {}, "selection": '
      '{"token_set": [1, "x"]}, "panels": {}}'), "token_set must be a list of token ids"),
    (('{"format": "detokgui-session", "version": 1, "models": {}, "selection": {}, '
      '"panels": {"topk": {"k": [1]}}}'), "panels.topk.k must be"),
    (('{"format": "detokgui-session", "version": 1, "models": {}, "selection": {}, '
      '"panels": {}, "corpus": {"paths": "a.txt"}}'), "corpus must be null or an object"),
])
def test_damaged_or_hand_edited_files_are_refused_in_one_line(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as info:
        sess.read_session(path)
    assert "\n" not in str(info.value)


def test_unreadable_files(tmp_path):
    with pytest.raises(InputError, match="no such session file"):
        sess.read_session(tmp_path / "missing.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="not UTF-8"):
        sess.read_session(tmp_path / "bin.json")


def test_a_hub_model_reopens_at_its_saved_commit():
    assert sess.model_to_open({"name": "gpt2", "revision": "c" * 40}) == "gpt2@" + "c" * 40
    assert sess.model_to_open({"name": "gpt2@main", "revision": "c" * 40}) == \
        "gpt2@" + "c" * 40
    assert sess.model_to_open({"name": "/models/x", "revision": None}) == "/models/x"


def test_launcher_refuses_a_bad_session_file_in_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "detokgui-session", "version": 1, "models": []}')
    r = subprocess.run([sys.executable, "-m", "detokgui", str(bad)], capture_output=True,
                       text=True, timeout=120, check=False)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f'detokgui: error: {bad}: "models" must be an object; the session was not opened.']
    r = subprocess.run([sys.executable, "-m", "detokgui", str(STORED_V1), "--model", "demo"],
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 2 and "either SESSION_FILE or --model" in r.stderr


def test_launcher_opens_a_session_and_its_screenshot_names_it(tmp_path):
    """`detokgui SESSION_FILE --screenshot`: the stored session restored (model, head,
    query position, view) and the PNG's provenance record naming the session."""
    import os

    from detokgui.core.base.provenance import read_provenance

    out = tmp_path / "shot.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    r = subprocess.run([sys.executable, "-m", "detokgui", str(STORED_V1), "--screenshot",
                        str(out)], capture_output=True, text=True, timeout=300, check=False,
                       env=env)
    assert r.returncode == 0, r.stderr
    rec = read_provenance(out)
    assert rec["session"] == str(STORED_V1.absolute())
    assert rec["analysis"] == "screenshot" and rec["view"] == "Positional bias"
    assert rec["options"]["selection"]["head"] == 7
    assert rec["options"]["selection"]["query_position"] == 60
    assert rec["model"]["heads"] == 8


# --------------------------------------------------------------------------- the library


def test_open_session_in_a_notebook(tmp_path):
    from detokgui.api.sharing import open_session

    s = open_session(STORED_V1, "cpu", progress=False)
    assert s.problems == []
    assert s.layer is not None and s.layer.n_heads == 8 and s.layer_b is None
    assert s.selection["query_token"] == 4731 and s.options["topk"]["k"] == 7
    assert s.view == "bias" and s.corpus is None
    # a model that does not open and a corpus that moved: named, the rest opened
    data = json.loads(STORED_V1.read_text())
    data["models"]["b"] = {"name": str(tmp_path / "no-such-model"), "revision": None}
    data["corpus"] = {"paths": [str(tmp_path / "gone.txt")], "text_column": "text"}
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    s = open_session(edited, "cpu", progress=False)
    assert s.layer is not None and s.layer_b is None
    assert len(s.problems) == 2
    assert s.problems[0].startswith(f"model B, {tmp_path / 'no-such-model'}: ")
    assert "gone.txt moved or was deleted" in s.problems[1]
    with pytest.raises(InputError):
        open_session(tmp_path / "nothing.json")
    # "sample" is the sample corpus of this installation
    from detokgui.core.model.sources.demo import sample_corpus

    data["models"]["b"] = None
    data["corpus"] = {"paths": ["sample"], "text_column": "text"}
    edited.write_text(json.dumps(data))
    s = open_session(edited, "cpu", progress=False)
    assert s.problems == [] and s.corpus == [str(sample_corpus())]
