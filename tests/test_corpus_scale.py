"""Corpus at scale (issue 43): parquet, zstd and arrow shards count as the same documents
as .txt; 1 and 2 worker processes and a Dask cluster give identical counts; a killed run
resumes with only its missing pieces; a changed file recounts only its own pieces; Cancel
stops within a second keeping finished pieces; bad input is one line and nothing of it is
cached; counts files round-trip and are refused for another tokenizer."""

import gzip
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from conftest import SAMPLE_CORPUS, SUBPROCESS_ENV
from pyarrow import ipc

import detokgui.core.corpus.counts as C
import detokgui.core.corpus.pieces as P
from detokgui.core.base.errors import InputError
from detokgui.core.corpus.countsfile import write_counts
from detokgui.core.corpus.documents import scan_corpus
from detokgui.core.corpus.readers import plan_shard
from detokgui.core.corpus.spec import Corpus

PIECE = 3000  # bytes of text per piece: a few documents, so every file is cut


@pytest.fixture(scope="module")
def tok(small_vocab_layer):
    return small_vocab_layer.tokenizer


@pytest.fixture(scope="module")
def docs():
    """40 sample-corpus documents of at most 1500 characters, each ending in a newline
    (as a .txt document between separator lines does)."""
    with gzip.open(SAMPLE_CORPUS, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"][:1500] for line in f][:40]
    return [t.rstrip("\n") + "\n" for t in texts]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DETOKGUI_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def entries(cache, folder):
    d = cache / folder
    return sorted(p.name for p in d.glob("*.npz")) if d.exists() else []


def direct(tok, texts):
    uni, bi = Counter(), Counter()
    for ids in tok(list(texts), add_special_tokens=False)["input_ids"]:
        uni.update(ids)
        bi.update(itertools.pairwise(ids))
    return uni, bi


def as_counters(c):
    prev, nxt, n = c.bigram_triples()
    uni = {int(t): int(c.unigrams[t]) for t in np.flatnonzero(c.unigrams)}
    return uni, dict(zip(zip(prev.tolist(), nxt.tolist()), n.tolist()))


def write_txt(path, texts):
    path.write_text("<|endoftext|>\n".join(texts), encoding="utf-8")
    return path


def write_jsonl(path, texts, **extra):
    path.write_text("".join(json.dumps({"text": t, **extra}) + "\n" for t in texts),
                    encoding="utf-8")
    return path


def write_formats(folder, docs):
    """The documents as a parquet file (row groups of 4), a two-frame .jsonl.zst, a
    `datasets` save_to_disk folder (two arrow stream files listed in state.json, a cache
    file beside them that is not data) and an Arrow IPC file. Returns the paths."""
    folder.mkdir()
    table = pa.table({"id": list(range(15)), "text": docs[:15]})
    pq.write_table(table, folder / "part-0.parquet", row_group_size=4)
    lines = [json.dumps({"text": t, "meta": {"n": i}}) + "\n" for i, t in enumerate(docs)]
    z = zstandard.ZstdCompressor()
    (folder / "b.jsonl.zst").write_bytes(z.compress("".join(lines[15:20]).encode())
                                         + z.compress("".join(lines[20:25]).encode()))
    ds = folder / "ds"
    ds.mkdir()
    names = ["data-00000-of-00002.arrow", "data-00001-of-00002.arrow"]
    for name, part in zip(names, (docs[25:31], docs[31:35])):
        t = pa.table({"text": part, "label": [0] * len(part)})
        with ipc.new_stream(str(ds / name), t.schema) as w:
            for b in t.to_batches(max_chunksize=2):
                w.write_batch(b)
    (ds / "state.json").write_text(json.dumps({"_data_files": [{"filename": n}
                                                               for n in names]}))
    (ds / "dataset_info.json").write_text("{}")
    t = pa.table({"text": ["not data: a map's result"] * 3})
    with ipc.new_stream(str(ds / "cache-0123.arrow"), t.schema) as w:
        w.write_table(t)
    t = pa.table({"text": docs[35:40]})
    with ipc.new_file(str(folder / "e.arrow"), t.schema) as w:
        for b in t.to_batches(max_chunksize=3):
            w.write_batch(b)
    return [folder / "part-0.parquet", folder / "b.jsonl.zst", ds, folder / "e.arrow"]


def test_parquet_zst_and_arrow_count_as_the_same_documents_as_txt(tmp_path, cache, tok, docs,
                                                                    monkeypatch):
    paths = write_formats(tmp_path / "f", docs)
    monkeypatch.setattr(P, "BATCH_CHARS", 1000)  # the flush size is checked per batch
    scan = scan_corpus(paths)
    assert [s.path.name for s in scan.skipped] == ["cache-0123.arrow"]
    assert "not one of the dataset's data files" in scan.skipped[0].reason
    txt = write_txt(tmp_path / "all.txt", docs)
    want = direct(tok, docs)
    # small pieces and a tiny flush size: pieces are cut, and stop and go on many times
    got = C.corpus_counts(paths, tok, workers=1, piece_bytes=PIECE, flush_bigrams=200)
    as_txt = C.corpus_counts(txt, tok, workers=1, piece_bytes=PIECE)
    assert as_counters(got) == as_counters(as_txt) == (dict(want[0]), dict(want[1]))
    assert got.n_documents == as_txt.n_documents == 40
    assert got.pieces_counted > 30 and got.pieces_cached == 0
    # a glob of the same shards is the same corpus: its counts come from the cache
    again = C.corpus_counts([str(tmp_path / "f" / "*.*"), str(tmp_path / "f" / "ds")], tok,
                            workers=1, piece_bytes=PIECE, flush_bigrams=200)
    assert again.key == got.key and again.pieces_counted == 0
    assert as_counters(again) == as_counters(got)


def test_one_and_two_workers_and_a_dask_cluster_give_identical_counts(tmp_path, cache, tok,
                                                                        docs):
    distributed = pytest.importorskip("distributed")
    paths = write_formats(tmp_path / "f", docs)
    paths.append(write_jsonl(tmp_path / "more.jsonl", docs[::-1]))
    options = {"use_cache": False, "piece_bytes": PIECE, "flush_bigrams": 300}
    one = C.corpus_counts(paths, tok, workers=1, **options)
    two = C.corpus_counts(paths, tok, workers=2, **options)
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        dask = C.corpus_counts(Corpus(paths, scheduler=cluster.scheduler_address), tok,
                               **options)
    for other in (two, dask):
        np.testing.assert_array_equal(other.unigrams, one.unigrams)
        for part in ("indptr", "indices", "data"):
            np.testing.assert_array_equal(getattr(other.bigrams, part),
                                          getattr(one.bigrams, part))
        assert (other.n_tokens, other.n_documents, other.key) == (
            one.n_tokens, one.n_documents, one.key)
    assert one.pieces_counted == two.pieces_counted == dask.pieces_counted > 20
    assert 0 < two.peak_rss < 1 << 30  # a worker's own peak, not its parent's
    assert as_counters(one) == tuple(map(dict, direct(tok, docs + docs[::-1])))


KILLED = r"""
import sys, time
import detokgui.core.corpus.counts as C
import detokgui.core.corpus.pieces as P
from detokgui.core.model.tokens import load_tokenizer

real = C.iter_count_piece
def slow(*a, **k):
    time.sleep(0.25)
    return (yield from real(*a, **k))
C.iter_count_piece = slow
tok = load_tokenizer(sys.argv[2], "small", 400)
C.corpus_counts(sys.argv[1], tok, 400, workers=1, piece_bytes=int(sys.argv[3]))
print("finished")
"""


def test_a_killed_run_counts_only_its_missing_pieces(tmp_path, cache, tok, docs,
                                                    small_vocab_ckpt):
    corpus = write_jsonl(tmp_path / "c.jsonl", docs)
    env = {**SUBPROCESS_ENV, "DETOKGUI_CACHE_DIR": str(cache)}
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(corpus), str(small_vocab_ckpt),
                             str(PIECE)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(entries(cache, "corpus-pieces")) < 3 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        proc.kill()
    finally:
        out, _ = proc.communicate(timeout=30)
    assert "finished" not in out, "the run ended before it was killed"
    kept = entries(cache, "corpus-pieces")
    assert len(kept) >= 3 and entries(cache, "corpus") == []
    counts = C.corpus_counts(corpus, tok, workers=1, piece_bytes=PIECE)
    total = counts.pieces_cached + counts.pieces_counted
    assert counts.pieces_cached == len(kept) and total > len(kept)
    assert len(entries(cache, "corpus-pieces")) == total
    assert as_counters(counts) == tuple(map(dict, direct(tok, docs)))


def test_a_changed_file_recounts_only_its_own_pieces(tmp_path, cache, tok, docs):
    a = write_jsonl(tmp_path / "a.jsonl", docs[:20])
    b = write_jsonl(tmp_path / "b.jsonl", docs[20:])
    first = C.corpus_counts([a, b], tok, workers=1, piece_bytes=PIECE)
    n_a = len(plan_shard(a, ".jsonl", "text", PIECE))
    n_b = len(plan_shard(b, ".jsonl", "text", PIECE))
    assert first.pieces_counted == n_a + n_b and n_a > 1 and n_b > 1
    write_jsonl(b, [*docs[20:], "A document added later."])
    second = C.corpus_counts([a, b], tok, workers=1, piece_bytes=PIECE)
    assert second.pieces_cached == n_a
    assert second.pieces_counted == len(plan_shard(b, ".jsonl", "text", PIECE))
    assert as_counters(second) == tuple(map(dict, direct(
        tok, [*docs, "A document added later."])))


def test_cancel_stops_within_a_second_and_keeps_finished_pieces(tmp_path, cache, tok, docs):
    psutil = pytest.importorskip("psutil")
    corpus = write_jsonl(tmp_path / "c.jsonl", docs * 6)
    job = C.iter_corpus_counts(corpus, tok, workers=2, piece_bytes=PIECE)
    deadline = time.monotonic() + 120
    for p in job:
        if p.message.startswith("counting: ") and "; 0 pieces" not in p.message:
            break
        assert time.monotonic() < deadline
    start = time.monotonic()
    job.close()
    assert time.monotonic() - start < 1.0
    kept = entries(cache, "corpus-pieces")
    assert kept and entries(cache, "corpus") == []
    # the workers were told to stop: none is left counting (multiprocessing's resource
    # tracker, a child of its own, stays)
    def workers():
        out = []
        for c in psutil.Process().children(recursive=True):
            try:
                if "spawn_main" in " ".join(c.cmdline()) and c.status() != psutil.STATUS_ZOMBIE:
                    out.append(c)
            except psutil.Error:
                pass
        return out

    deadline = time.monotonic() + 5
    while workers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not workers()
    counts = C.corpus_counts(corpus, tok, workers=1, piece_bytes=PIECE)
    assert counts.pieces_cached >= len(kept)
    assert as_counters(counts) == tuple(map(dict, direct(tok, docs * 6)))


def _parquet(path, **columns):
    pq.write_table(pa.table(columns), path)
    return path


def _truncated(path, keep=0.5):
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    return path


def bad_inputs(folder, docs):
    folder.mkdir()
    good = _parquet(folder / "good.parquet", text=docs[:3])
    stream = folder / "s.arrow"
    t = pa.table({"text": docs[:10]})
    with ipc.new_stream(str(stream), t.schema) as w:
        for b in t.to_batches(max_chunksize=2):
            w.write_batch(b)
    zst = folder / "t.jsonl.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress(
        "".join(json.dumps({"text": d}) + "\n" for d in docs).encode()))
    (folder / "empty").mkdir()
    (folder / "g.parquet").write_bytes(b"PAR1 this is not a parquet file at all")
    (folder / "g.arrow").write_bytes(b"not arrow data" * 10)
    (folder / "n.zst.jsonl.zst").write_bytes(b"not zstd data at all")
    return {
        "damaged parquet": (folder / "g.parquet", "not a readable parquet file"),
        "truncated parquet": (_truncated(good), "not a readable parquet file"),
        "damaged arrow": (folder / "g.arrow", "not a readable Arrow IPC file"),
        "truncated arrow": (_truncated(stream, 0.6), "a damaged Arrow IPC file"),
        "truncated zstd": (_truncated(zst), ("truncated zstd data (the file ends inside a "
                                             "frame")),
        "not zstd": (folder / "n.zst.jsonl.zst", "not valid zstd data"),
        "missing column": (_parquet(folder / "m.parquet", id=[1, 2], body=["a", "b"]),
                           "has no column \"text\" (its columns: id, body); name the column"),
        "non-string column": (_parquet(folder / "i.parquet", text=[1, 2]),
                              "the column \"text\" holds int64, not text (strings)"),
        "empty folder": (folder / "empty", "No corpus files (.txt, .jsonl"),
        "glob without a match": (folder / "*.nothing", "matches no file"),
    }


BAD = ("damaged parquet", "truncated parquet", "damaged arrow", "truncated arrow",
       "truncated zstd", "not zstd", "missing column", "non-string column", "empty folder",
       "glob without a match")


@pytest.fixture(scope="module")
def bad(tmp_path_factory, docs):
    return bad_inputs(tmp_path_factory.mktemp("bad") / "in", docs)


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_one_line_and_nothing_is_cached(bad, cache, tok, case):
    path, expected = bad[case]
    with pytest.raises(InputError) as err:
        C.corpus_counts(str(path), tok, workers=1)
    msg = str(err.value)
    assert expected in msg and "\n" not in msg, msg
    assert path.name in msg or case in ("empty folder",)
    assert entries(cache, "corpus") == [] and entries(cache, "corpus-pieces") == []


def test_counts_file_round_trip_sum_and_refusal(tmp_path, cache, tok, docs):
    from detokgui.core.model.tokens import gpt2_tokenizer

    a = write_jsonl(tmp_path / "a.jsonl", docs[:20])
    b = write_jsonl(tmp_path / "b.jsonl", docs[20:])
    both = C.corpus_counts([a, b], tok)
    key = C.tokenizer_key(tok)
    for name, paths in (("a", [a]), ("b", [b]), ("ab", [a, b])):
        write_counts(tmp_path / f"{name}.npz", C.corpus_counts(paths, tok), tokenizer=key,
                     model="small-400")
    read = C.corpus_counts(tmp_path / "ab.npz", tok)
    assert as_counters(read) == as_counters(both) and read.key == both.key
    assert (read.n_tokens, read.n_documents) == (both.n_tokens, both.n_documents)
    assert [i[0] for i in read.inputs] == [str(a), str(b)]
    # two counts files of different files add up; the same file twice is refused
    summed = C.corpus_counts([tmp_path / "a.npz", tmp_path / "b.npz"], tok)
    assert as_counters(summed) == as_counters(both)
    with pytest.raises(InputError, match="both count the same corpus file"):
        C.corpus_counts([tmp_path / "a.npz", tmp_path / "ab.npz"], tok)
    with pytest.raises(InputError, match="cannot be mixed with corpus texts"):
        C.corpus_counts([tmp_path / "a.npz", b], tok)
    # another tokenizer: one line naming both
    gpt2 = gpt2_tokenizer()
    with pytest.raises(InputError) as err:
        C.corpus_counts(tmp_path / "ab.npz", gpt2, model="gpt2")
    msg = str(err.value)
    assert "\n" not in msg and "the tokenizer of small-400 (tokenizer" in msg and "V = 400" in msg
    assert "the model gpt2 has tokenizer" in msg and "V = 50257" in msg
    # a damaged counts file
    _truncated(tmp_path / "ab.npz", 0.7)
    with pytest.raises(InputError, match="ab.npz: (not a detokgui counts file|a damaged "
                                         "counts file)"):
        C.corpus_counts(tmp_path / "ab.npz", tok)
    (tmp_path / "x.npz").write_bytes(b"no zip")
    with pytest.raises(InputError, match="x.npz: not a detokgui counts file"):
        C.corpus_counts(tmp_path / "x.npz", tok)


def test_text_column_reads_another_column_and_field(tmp_path, cache, tok, docs):
    p = _parquet(tmp_path / "p.parquet", body=docs[:5], text=["other"] * 5)
    j = write_jsonl(tmp_path / "j.jsonl", ["other"] * 3)
    j.write_text("".join(json.dumps({"body": d, "text": "x"}) + "\n" for d in docs[5:8]))
    got = C.corpus_counts(Corpus([p, j], text_column="body"), tok)
    assert as_counters(got) == tuple(map(dict, direct(tok, docs[:8])))
    plain = C.corpus_counts([p, j], tok)
    assert plain.key != got.key and plain.n_documents == 8


def test_the_fast_tokenizer_tokenizes_the_tokens_view(tok, monkeypatch):
    """The tokens view's pieces go to the Rust tokenizer in batches, never through the
    transformers tokenizer's own (slower) calls."""
    from detokgui.core.base.progress import run
    from detokgui.core.model.encode import iter_encode

    text = "".join(f"Line {i} of a long text, with words.\n" for i in range(3000))
    want = tok.encode(text)
    for name in ("encode", "__call__", "batch_encode_plus", "encode_plus"):
        monkeypatch.setattr(type(tok), name, lambda *a, **k: pytest.fail("slow path"),
                            raising=False)
    seen = []
    assert run(iter_encode(tok, text, piece_chars=500, batch_chars=20000), seen.append) == want
    assert len(seen) > 3


def test_a_corpus_spec_keeps_its_options(tmp_path):
    import pickle

    c = Corpus([tmp_path / "a.parquet"], text_column="body", workers=3, scheduler="tcp://x:1")
    assert c == Corpus([str(tmp_path / "a.parquet")], text_column="body")
    assert c != (str(tmp_path / "a.parquet"),)
    assert Corpus(["a"]) == ("a",) and hash(Corpus(["a"])) == hash(("a",))
    back = pickle.loads(pickle.dumps(c))
    assert (back.text_column, back.workers, back.scheduler) == ("body", 3, "tcp://x:1")
    assert c.replace(workers=1).workers == 1 and c.replace(workers=1) == c
    assert os.fspath(Path(c[0])) == str(tmp_path / "a.parquet")


def test_sigint_in_the_cli_stops_at_once_and_keeps_finished_pieces(tmp_path, cache, docs):
    """Ctrl+C (SIGINT to the process group, as a terminal sends it) during `export counts`
    with two worker processes: the command says 'interrupted' within a second or two, the
    finished pieces stay in the cache, and the next run takes them from there."""
    corpus = write_jsonl(tmp_path / "c.jsonl", docs * 30)  # seconds with GPT-2's tokenizer
    env = {**SUBPROCESS_ENV, "DETOKGUI_CACHE_DIR": str(cache)}
    out = tmp_path / "c.npz"
    code = ("import sys, detokgui.core.corpus.counts as C; C.PIECE_BYTES = 3000; "
            "from detokgui.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.Popen([sys.executable, "-c", code, "counts", "--model", "demo",
                             "--corpus", str(corpus), "--workers", "2",
                             "--out", str(out)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not entries(cache, "corpus-pieces") and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        assert proc.poll() is None, "the count ended before Ctrl+C"
        os.killpg(proc.pid, signal.SIGINT)
        start = time.monotonic()
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - start
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "detokgui export counts: interrupted", err
    assert "Traceback" not in err and took < 3.0
    assert not out.exists() and entries(cache, "corpus-pieces")


def test_counts_file_in_the_cli_and_the_api_drives_auroc_and_frequency(
        tmp_path, cache, docs, small_vocab_ckpt, small_vocab_layer, capsys):
    """export counts --out FILE.npz, then --counts FILE (and --corpus FILE) give the AUROC
    and frequency CSVs of the corpus itself; dg.counts(out=) and dg.auroc / dg.frequency
    of the file give its DataFrames; a model with another tokenizer is refused."""
    import detokgui as dg
    from detokgui.cli import main

    corpus = write_jsonl(tmp_path / "c.jsonl", docs)
    npz = tmp_path / "c.npz"

    def export(*args):
        rc = main([str(a) for a in args])
        return rc, capsys.readouterr()

    rc, out = export("counts", "--model", small_vocab_ckpt, "--corpus", corpus, "--workers",
                     "1", "--out", npz)
    assert rc == 0 and out.out.splitlines()[-1] == f"wrote {npz}", out.err
    n_tokens = sum(direct(small_vocab_layer.tokenizer, docs)[0].values())
    assert out.out.splitlines()[0].startswith(f"{n_tokens:,} tokens in 40 documents of 1 file")
    for what in ("auroc", "frequency"):
        outs = {}
        for flag, source in (("--corpus", corpus), ("--counts", npz), ("--corpus", npz)):
            csv = tmp_path / f"{what}{len(outs)}.csv"
            rc, out = export(what, "--model", small_vocab_ckpt, flag, source, "--out", csv)
            assert rc == 0, out.err
            outs[csv] = (csv.read_bytes(), out.out.splitlines()[:-1])
        first, *rest = outs.values()
        assert all(r == first for r in rest)
    with pytest.raises(SystemExit) as stop:  # argparse's own refusal
        main(["counts", "--model", str(small_vocab_ckpt), "--counts", str(corpus), "--out",
              str(tmp_path / "x.csv")])
    assert stop.value.code == 2 and "is not a counts file (.npz)" in capsys.readouterr().err
    rc, out = export("auroc", "--model", "demo", "--counts", npz, "--out", tmp_path / "d.csv")
    err = out.err.strip().splitlines()[-1]
    assert rc == 2 and err.startswith(f"detokgui export auroc: error: {npz} holds counts "
                                      f"made with the tokenizer of {small_vocab_ckpt} ")
    assert "V = 400" in err and "; the model demo" in err and "V = 50257" in err

    layer = small_vocab_layer
    api_npz = tmp_path / "api.npz"
    frame = dg.counts(layer, corpus, out=api_npz, workers=1, progress=False)
    assert api_npz.is_file()
    again = dg.counts(layer, api_npz, progress=False)
    assert frame.equals(again) and again.attrs["corpus_counts_file"] == str(api_npz)
    for fn in (dg.auroc, dg.frequency):
        a, b = fn(layer, corpus, progress=False), fn(layer, str(api_npz), progress=False)
        assert a.equals(b)
