"""Corpus paths that are not regular files (issue 16, item 3): a named pipe or a link to
/dev/zero is refused at once with its path and kind, never read (it would block, or never
end); a folder's other entries are listed as skipped. Whatever could hang runs in a
subprocess with a 60 s timeout, so that a regression fails instead of hanging the run."""

import json
import os
import socket
import subprocess
import sys
from collections import Counter

import pytest
from conftest import SUBPROCESS_ENV
from test_cli import read_csv

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX named pipes")

HANG = 60  # seconds: far more than any of these takes; a hang fails the test
TEXTS = ["The cat sat on the mat.", "A second document, with a few more words in it."]


def corpus_folder(root):
    """A folder with one regular corpus file and, beside it, what must not be read: a named
    pipe and a link to /dev/zero named .txt, a socket, a broken link, a file of another
    type. Returns (folder, the regular file, {entry name: the kind the message names})."""
    folder = root / "corpus"
    (folder / "sub").mkdir(parents=True)
    good = folder / "sub" / "good.jsonl"
    good.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    os.mkfifo(folder / "pipe.txt")
    (folder / "zero.txt").symlink_to("/dev/zero")
    (folder / "gone.jsonl").symlink_to(folder / "nothing-here.jsonl")
    (folder / "notes.md").write_text("not a corpus file")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(folder / "s.txt"))
    sock.close()  # the socket file stays
    kinds = {"pipe.txt": "a named pipe (FIFO)", "zero.txt": "a character device",
             "s.txt": "a socket", "gone.jsonl": "a broken link",
             "notes.md": "not a corpus file type"}
    return folder, good, kinds


def run_python(code: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], check=False,
                          capture_output=True, text=True, timeout=HANG, env=SUBPROCESS_ENV)


CORE = r"""
import json, os, sys
from pathlib import Path
import detokgui.core.corpus.documents as D
import detokgui.core.corpus.readers as R
from detokgui.core.corpus.counts import corpus_counts
from detokgui.core.base.errors import InputError
from detokgui.core.model.tokens import gpt2_tokenizer

folder = Path(sys.argv[1])
tok = gpt2_tokenizer()
out = {"refused": {}}
for name in ("pipe.txt", "zero.txt", "s.txt"):
    got = []
    for call in (D.corpus_files, D.CorpusReader, lambda p: corpus_counts(p, tok),
                 D.open_corpus_file):
        try:
            call([folder / name] if call is not D.open_corpus_file else folder / name)
            got.append("read")
        except InputError as exc:
            got.append(str(exc))
    out["refused"][name] = got
# A path that passes the first check but is a FIFO when opened: the open does not wait
# and the opened file is refused.
real_stat = R.stat_path
R.stat_path = lambda p: real_stat(folder / "sub" / "good.jsonl")
try:
    D.open_corpus_file(folder / "pipe.txt")
    out["swapped"] = "read"
except InputError as exc:
    out["swapped"] = str(exc)
R.stat_path = real_stat
scan = D.scan_corpus(folder)
out["files"] = [str(f) for f in scan.files]
out["skipped"] = {s.path.name: s.reason for s in scan.skipped}
out["line"] = D.skipped_line(scan.skipped)
c = corpus_counts(folder, tok)
out["counts"] = {int(t): int(c.unigrams[t]) for t in c.unigrams.nonzero()[0]}
print(json.dumps(out))
"""


def test_core_refuses_fifo_device_socket_and_skips_them_in_a_folder(tmp_path):
    from detokgui.core.model.tokens import gpt2_tokenizer

    folder, good, kinds = corpus_folder(tmp_path)
    r = run_python(CORE, folder)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for name, messages in out["refused"].items():
        for msg in messages:  # corpus_files, CorpusReader, corpus_counts, open_corpus_file
            assert msg.startswith(str(folder / name)) and "\n" not in msg
            assert f"is {kinds[name]}, not a regular file" in msg
    assert "(a link to /dev/zero)" in out["refused"]["zero.txt"][0]
    assert out["swapped"].endswith("is a named pipe (FIFO), not a regular file; only regular "
                                   "files are read as corpus files.")
    assert out["files"] == [str(good)]
    assert out["skipped"] == kinds
    assert out["line"] == "skipped 5 files of the corpus folder: " + ", ".join(
        f"{folder / n} ({kinds[n]})" for n in sorted(kinds))
    tok = gpt2_tokenizer()
    want = Counter(t for ids in tok(TEXTS, add_special_tokens=False)["input_ids"] for t in ids)
    assert {int(k): v for k, v in out["counts"].items()} == dict(want)


def export_counts(ckpt, corpus, out):
    return subprocess.run(
        [sys.executable, "-m", "detokgui", "export", "counts", "--model", str(ckpt),
         "--corpus", str(corpus), "--out", str(out)],
        check=False, capture_output=True, text=True, timeout=HANG, env=SUBPROCESS_ENV)


@pytest.mark.parametrize("name", ["pipe.txt", "zero.txt"])
def test_cli_refuses_a_fifo_or_dev_zero_link_in_one_line(small_vocab_ckpt, tmp_path, name):
    folder, _, kinds = corpus_folder(tmp_path)
    out = tmp_path / "counts.csv"
    r = export_counts(small_vocab_ckpt, folder / name, out)
    assert r.returncode == 2 and r.stdout == "" and not out.exists()
    assert r.stderr == (f"detokgui export counts: error: {folder / name}"
                        f"{' (a link to /dev/zero)' if name == 'zero.txt' else ''} is "
                        f"{kinds[name]}, not a regular file; only regular files are read as "
                        "corpus files.\n")


def test_cli_lists_a_folders_skipped_entries_and_counts_the_rest(small_vocab_ckpt,
                                                                 small_vocab_layer, tmp_path):
    folder, _, kinds = corpus_folder(tmp_path)
    out = tmp_path / "counts.csv"
    r = export_counts(small_vocab_ckpt, folder, out)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"wrote {out} (400 rows)\n"
    note, = r.stderr.splitlines()
    assert note == "detokgui export counts: note: skipped 5 files of the corpus folder: " + (
        ", ".join(f"{folder / n} ({kinds[n]})" for n in sorted(kinds)))
    tok = small_vocab_layer.tokenizer
    want = Counter(t for ids in tok(TEXTS, add_special_tokens=False)["input_ids"] for t in ids)
    assert {int(x["token_id"]): int(x["count"]) for x in read_csv(out)} == {
        t: want.get(t, 0) for t in range(400)}


def test_skipped_line_shows_the_first_few():
    from pathlib import Path

    from detokgui.core.corpus.documents import Skipped, skipped_line

    skipped = [Skipped(Path(f"c/{k}.md"), "not a .txt or .jsonl file") for k in range(7)]
    assert skipped_line(skipped[:1]) == ("skipped 1 file of the corpus folder: c/0.md (not a "
                                         ".txt or .jsonl file)")
    line = skipped_line(skipped, shown=2)
    assert line.startswith("skipped 7 files of the corpus folder: c/0.md (")
    assert line.endswith("c/1.md (not a .txt or .jsonl file), and 5 more")


BEFORE_LOAD = r"""
import sys
from detokgui import cli

def refuse(args):
    raise SystemExit("the model was loaded before the corpus was checked")

cli.load_layer = refuse
corpus, out = sys.argv[1], sys.argv[2]
for what, extra in (("counts", []), ("auroc", []), ("frequency", []),
                    ("empirical", ["--position", "3"]), ("kl", []), ("neuron", ["--neuron", "0"])):
    code = cli.main([what, "--model", "demo", "--corpus", corpus, *extra,
                     "--out", f"{out}/{what}.csv"])
    assert code == 2, (what, code)
code = cli.main(["figures", "--model", "demo", "--corpus", corpus, "--out", f"{out}/figs"])
assert code == 2, ("figures", code)
"""


def test_every_corpus_command_refuses_before_the_model_loads(tmp_path):
    folder, _, kinds = corpus_folder(tmp_path)
    for name in ("pipe.txt", "zero.txt"):
        r = run_python(BEFORE_LOAD, folder / name, tmp_path)
        assert r.returncode == 0, r.stderr
        lines = r.stderr.splitlines()
        assert len(lines) == 7 and not list(tmp_path.glob("*.csv"))
        for line in lines:
            assert line.startswith("detokgui export ")
            assert f": error: {folder / name}" in line and f"is {kinds[name]}, not a " in line


def test_hidden_entries_of_a_folder_are_neither_read_nor_listed(tmp_path):
    from detokgui.core.corpus.documents import scan_corpus

    (tmp_path / "a.txt").write_text("Hello world.")
    (tmp_path / "notes.md").write_text("not a corpus file")
    (tmp_path / ".git" / "objects").mkdir(parents=True)
    (tmp_path / ".git" / "objects" / "x.txt").write_text("hidden text")
    (tmp_path / ".git" / "HEAD").write_text("ref")
    (tmp_path / ".draft.txt").write_text("hidden text")
    scan = scan_corpus(tmp_path)
    assert scan.files == [tmp_path / "a.txt"]
    assert [s.path for s in scan.skipped] == [tmp_path / "notes.md"]
