"""The on-disk cache (core.base.diskcache) never breaks a run (issue 16): a damaged entry of
any cache is discarded with one line and computed again, an unusable cache folder costs
only the cache (one warning naming the cache's file or folder, never the output), and the
stale `.part` files of killed writers are removed."""

import errno
import io
import json
import os
import resource
import subprocess
import sys
import time
from contextlib import contextmanager

import numpy as np
import pytest
from conftest import SUBPROCESS_ENV, wait_idle
from test_cli import read_csv

from detokgui.cli import main
from detokgui.core.base import atomic, diskcache
from detokgui.core.base.atomic import STALE_PART_SECONDS, sweep_stale_parts

# cache -> (export command, its cache sub-folder, CSV columns holding floats)
CACHES = {
    "counts": ("counts", "corpus", ()),
    "auroc": ("auroc", "auroc", ("auroc",)),
    "stats": ("stats", "vocab-stats", ("variance", "top1_score")),
}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DETOKGUI_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def command(ckpt, corpus, name, out):
    what = CACHES[name][0]
    extra = [] if what == "stats" else ["--corpus", str(corpus)]
    return [what, "--model", str(ckpt), *extra, "--out", str(out)]


def export(capsys, ckpt, corpus, name, out):
    """`detokgui export NAME` in this process: (exit status, stdout lines, stderr lines)."""
    rc = main(command(ckpt, corpus, name, out))
    got = capsys.readouterr()
    return rc, got.out.splitlines(), got.err.splitlines()


def assert_same_table(name, path, reference):
    """The CSV at `path` equals `reference` (rows of read_csv): ids, tokens, counts and
    ranks exactly, float columns to float32 precision (written from float64/float32)."""
    rows = read_csv(path)
    floats = CACHES[name][2]
    assert len(rows) == len(reference) and list(rows[0]) == list(reference[0])
    for col in rows[0]:
        got, want = [r[col] for r in rows], [r[col] for r in reference]
        if col in floats:
            np.testing.assert_allclose(np.array(got, float), np.array(want, float), rtol=1e-6)
        else:
            assert got == want, col


def only_entry(cache, name):
    files = sorted((cache / CACHES[name][1]).iterdir())
    assert len(files) == 1 and files[0].suffix == ".npz", files
    return files[0]


# --------------------------------------------------------------------------- damage


def rewrite(path, change):
    """Rewrite a valid entry with `change(arrays, meta)` applied: a well-formed npz that
    does not hold what it should."""
    with np.load(path) as z:
        arrays = {n: z[n] for n in z.files}
    meta = json.loads(str(arrays.pop("meta")))
    change(arrays, meta)
    with open(path, "wb") as f:
        np.savez(f, **arrays, meta=np.array(json.dumps(meta)))


def first_array(arrays):
    return next(iter(arrays))


def truncated(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def zero_length(path):
    path.write_bytes(b"")


def flipped(path):
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 64] = bytes(b ^ 0xFF for b in data[mid : mid + 64])
    path.write_bytes(bytes(data))


def wrong_shape(path):
    def shorten(arrays, meta):
        name = first_array(arrays)
        arrays[name] = arrays[name][..., :-1]
    rewrite(path, shorten)


def missing_array(path):
    rewrite(path, lambda arrays, meta: arrays.pop(first_array(arrays)))


def other_key(path):
    rewrite(path, lambda arrays, meta: meta.update(key="0" * 64))  # another entry's file


def other_format(path):
    rewrite(path, lambda arrays, meta: meta.update(format="detokgui-something-v0"))


DAMAGE = [truncated, zero_length, flipped, wrong_shape, missing_array, other_key,
          other_format]


@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", list(CACHES))
def test_damaged_entry_is_discarded_and_computed_again(small_vocab_ckpt, small_corpus,
                                                       cache, tmp_path, capsys, name, damage):
    out = tmp_path / "out.csv"
    rc, clean_out, err = export(capsys, small_vocab_ckpt, small_corpus, name, out)
    assert rc == 0 and err == [], err
    reference = read_csv(out)
    entry = only_entry(cache, name)
    damage(entry)

    rc, lines, err = export(capsys, small_vocab_ckpt, small_corpus, name, out)
    assert rc == 0, err
    assert len(err) == 1 and "discarded the damaged cache file" in err[0], err
    assert str(entry) in err[0] and "Traceback" not in err[0]
    assert lines[-1] == clean_out[-1] == f"wrote {out} ({len(reference)} rows)"
    assert_same_table(name, out, reference)

    # the entry is whole again: the next run reads it without rewriting it
    assert only_entry(cache, name) == entry
    written = entry.stat().st_mtime_ns
    rc, _, err = export(capsys, small_vocab_ckpt, small_corpus, name, out)
    assert rc == 0 and err == []
    assert entry.stat().st_mtime_ns == written
    assert_same_table(name, out, reference)


# --------------------------------------------------------------------------- unusable cache


@pytest.fixture(scope="module")
def references(small_vocab_ckpt, small_corpus, tmp_path_factory):
    """Each command's CSV from a run with a working cache of its own."""
    tables = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DETOKGUI_CACHE_DIR", str(tmp_path_factory.mktemp("working-cache")))
        for name in CACHES:
            out = tmp_path_factory.mktemp("ref") / "out.csv"
            assert main(command(small_vocab_ckpt, small_corpus, name, out)) == 0
            tables[name] = read_csv(out)
    return tables


class _FullDisk(io.RawIOBase):
    """A file on a disk that fills up after 1000 bytes (the error has no file name, as
    a real ENOSPC from write())."""

    def __init__(self, f):
        self.f, self.left = f, 1000

    def writable(self):
        return True

    def write(self, b):
        if len(b) > self.left:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.left -= len(b)
        return self.f.write(b)


@contextmanager
def full_disk_open(path, mode="w", **kwargs):
    with atomic.atomic_open(path, mode, **kwargs) as f:
        yield _FullDisk(f)


def read_only_mkstemp(cache):
    real = atomic.tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if dir is not None and str(dir).startswith(str(cache)):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(dir))
        return real(*args, dir=dir, **kwargs)

    return mkstemp


def make_file_for_folder(cache, monkeypatch):
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text("not a folder")
    return cache  # the cache folders under it cannot be made


def make_disk_full(cache, monkeypatch):
    monkeypatch.setattr(diskcache, "atomic_open", full_disk_open)
    return cache


def make_read_only(cache, monkeypatch):
    # chmod does not stop root: refuse to create files, as a read-only folder does
    monkeypatch.setattr(atomic.tempfile, "mkstemp", read_only_mkstemp(cache))
    return cache


UNUSABLE = {
    make_file_for_folder: "Not a directory",
    make_disk_full: "No space left on device",
    make_read_only: "Permission denied",
}


@pytest.mark.parametrize("breakage", list(UNUSABLE), ids=lambda f: f.__name__[5:])
@pytest.mark.parametrize("name", list(CACHES))
def test_unusable_cache_still_writes_the_output(small_vocab_ckpt, small_corpus, references,
                                                cache, tmp_path, capsys, monkeypatch, name,
                                                breakage):
    breakage(cache, monkeypatch)
    out = tmp_path / "out.csv"
    rc, lines, err = export(capsys, small_vocab_ckpt, small_corpus, name, out)
    assert rc == 0, err
    assert lines[-1] == f"wrote {out} ({len(references[name])} rows)"
    assert_same_table(name, out, references[name])
    # one line (auroc fails on three caches: counts, AUROC, head statistics), naming the
    # cache, not the output
    assert len(err) == 1 and "running without the cache" in err[0], err
    assert UNUSABLE[breakage] in err[0] and str(cache) in err[0] and str(out) not in err[0]
    if cache.is_dir():
        assert not [p for p in cache.rglob("*") if p.is_file()]  # no entry, no .part


def _limit_file_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))  # writes past it fail: EFBIG


def test_cache_disk_full_in_a_real_process(small_vocab_ckpt, small_corpus, references,
                                           tmp_path):
    """A real write error (the counts' entry is larger than the limit, their CSV not)."""
    out, cache = tmp_path / "out.csv", tmp_path / "cache"
    r = subprocess.run([sys.executable, "-m", "detokgui", "export", "counts", "--model",
                        str(small_vocab_ckpt), "--corpus", str(small_corpus), "--out", str(out)],
                       check=False, capture_output=True, text=True, timeout=300,
                       env=dict(SUBPROCESS_ENV, DETOKGUI_CACHE_DIR=str(cache)),
                       preexec_fn=_limit_file_size)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "File too large" in lines[0], r.stderr
    assert f"could not write the cache file {cache / 'corpus'}" in lines[0]
    assert "running without the cache" in lines[0] and str(out) not in lines[0]
    assert_same_table("counts", out, references["counts"])
    assert os.listdir(cache / "corpus") == []


# --------------------------------------------------------------------------- stale .part


def age(path, seconds):
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_sweep_removes_stale_parts_and_keeps_live_ones(tmp_path):
    old, fresh = STALE_PART_SECONDS + 60, 5
    (tmp_path / ".a.npz.x1.part").write_bytes(b"killed")
    age(tmp_path / ".a.npz.x1.part", old)
    (tmp_path / ".b.npz.x2.part").write_bytes(b"being written")
    age(tmp_path / ".b.npz.x2.part", fresh)
    dead = tmp_path / ".figs.x3.part"  # a killed export's staging folder
    dead.mkdir()
    (dead / "fig.png").write_bytes(b"png")
    age(dead / "fig.png", old)
    age(dead, old)
    live = tmp_path / ".figs.x4.part"  # a live one: an old folder, a figure just written
    live.mkdir()
    (live / "fig.png").write_bytes(b"png")
    age(live, old)
    for name in ("notes.part", ".hidden"):  # not a temporary of core.base.atomic
        (tmp_path / name).write_bytes(b"keep")
        age(tmp_path / name, old)
    assert sweep_stale_parts(tmp_path, "figs") == [dead]
    assert sorted(p.name for p in sweep_stale_parts(tmp_path)) == [".a.npz.x1.part"]
    assert sorted(os.listdir(tmp_path)) == [".b.npz.x2.part", ".figs.x4.part", ".hidden",
                                            "notes.part"]
    assert sweep_stale_parts(tmp_path / "missing") == []


def stale_and_fresh(folder, name):
    folder.mkdir(parents=True, exist_ok=True)
    stale, fresh = folder / f".{name}.old.part", folder / f".{name}.new.part"
    stale.mkdir()
    fresh.write_bytes(b"a concurrent writer")
    age(stale, STALE_PART_SECONDS + 60)
    return stale, fresh


def test_cache_write_removes_stale_parts(small_vocab_ckpt, small_corpus, cache, tmp_path,
                                         capsys):
    stale, fresh = stale_and_fresh(cache / "vocab-stats", "0123.npz")
    rc, _, err = export(capsys, small_vocab_ckpt, small_corpus, "stats", tmp_path / "s.csv")
    assert rc == 0 and err == []
    assert not stale.exists() and fresh.exists()


@pytest.mark.parametrize("existing", [False, True])
def test_export_figures_removes_its_stale_staging_folder(tiny_layer, tmp_path, existing):
    from detokgui.figures import export_figures

    out = tmp_path / "figs"
    if existing:
        out.mkdir()
    stale, fresh = stale_and_fresh(tmp_path, "figs")
    other, _ = stale_and_fresh(tmp_path, "other")  # another target's: not this export's
    export_figures(tiny_layer, out, "png", keys=["fig06r_wpe_variance"])
    assert not stale.exists() and fresh.exists() and other.exists()
    assert (out / "fig06r_wpe_variance.png").is_file()


@pytest.fixture
def small_random_demo(cache, monkeypatch):
    """The random demo written by a small writer (d=32) into the test's cache."""
    from detokgui.core.model.sources import demo

    real = demo.write_random_checkpoint
    monkeypatch.setattr(demo, "write_random_checkpoint",
                        lambda folder, **kw: real(folder, n_embd=32, n_head=4, n_positions=64))
    return cache / demo._RANDOM_DEMO_FOLDER


def test_random_demo_removes_a_killed_first_use(small_random_demo):
    from detokgui.core.model.sources import demo

    stale, fresh = stale_and_fresh(small_random_demo.parent, small_random_demo.name)
    assert demo.random_demo_folder() == small_random_demo
    assert not stale.exists() and fresh.exists()
    assert (small_random_demo / "tokenizer.json").is_file()


@pytest.mark.parametrize("damage", [lambda f: truncated(f / "model.safetensors"),
                                    lambda f: (f / "tokenizer.json").write_text("{")],
                         ids=["weights-truncated", "tokenizer-broken"])
def test_damaged_random_demo_is_written_again(small_random_demo, caplog, damage):
    from detokgui.core import Layer0
    from detokgui.core.model.sources import demo

    demo.random_demo_folder()
    weights = (small_random_demo / "model.safetensors").read_bytes()
    damage(small_random_demo)
    with caplog.at_level("WARNING", logger="detokgui"):
        layer = Layer0.from_pretrained("random-demo", device="cpu")
    assert layer.d == 32 and layer.tokenizer is not None
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("detokgui")]
    assert len(lines) == 1 and "discarded the damaged random demo model" in lines[0], lines
    assert str(small_random_demo) in lines[0]
    assert (small_random_demo / "model.safetensors").read_bytes() == weights  # same seed


def test_random_demo_without_a_cache_folder_is_one_line(small_random_demo, capsys, tmp_path):
    cache = small_random_demo.parent
    cache.write_text("not a folder")
    rc = main(["sigma", "--model", "random-demo", "--out", str(tmp_path / "s.csv")])
    err = capsys.readouterr().err.splitlines()
    assert rc == 2 and len(err) == 1, err
    assert "random demo model cannot be written to the cache" in err[0] and str(cache) in err[0]


# --------------------------------------------------------------------------- GUI


def test_frequency_view_recovers_from_a_damaged_count(vocab_window, qtbot, small_corpus,
                                                      cache):
    from detokgui.core.corpus.counts import layer_corpus_counts

    win, corpus = vocab_window, (str(small_corpus),)
    counts = layer_corpus_counts(win.state.layer, corpus).unigrams  # written to the cache
    entry = only_entry(cache, "counts")
    flipped(entry)
    win.state.set_corpus(corpus)
    win.show_view("frequency")
    wait_idle(qtbot, win, timeout=60000)
    panel = win.panel("frequency")
    seen = counts > 0
    np.testing.assert_array_equal(panel.ids, np.flatnonzero(seen))
    np.testing.assert_allclose(panel.points.x, np.log10(counts[seen]))
    message = win.statusBar().currentMessage()
    assert "discarded the damaged cache file" in message and str(entry) in message
    assert only_entry(cache, "counts") == entry
    with np.load(entry) as z:  # whole again
        np.testing.assert_array_equal(z["unigrams"], counts)
