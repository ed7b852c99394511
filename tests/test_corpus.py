"""Corpus counts (C4): equal to a direct count, cached by content, one-line messages."""

import gzip
import itertools
import json
import os
import shutil
from collections import Counter

import numpy as np
import pytest
from conftest import SAMPLE_CORPUS
from test_documents import BAD_INPUTS

import detokgui.core.corpus.counts as C
import detokgui.core.corpus.pieces as P
from detokgui.core.base.errors import InputError
from detokgui.core.corpus.tables import bigrams_table, counts_table
from detokgui.core.model.tokens import gpt2_tokenizer


@pytest.fixture(scope="module")
def tok():
    return gpt2_tokenizer()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DETOKGUI_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def cache_files(cache):
    folder = cache / "corpus"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def direct_counts(tok, documents, V=50257):
    """Unigrams and bigrams by tokenizing each whole document on its own."""
    uni, bi = np.zeros(V, dtype=np.int64), Counter()
    for text in documents:
        ids = tok.encode(text)
        np.add.at(uni, ids, 1)
        bi.update(itertools.pairwise(ids))
    return uni, bi


def as_dict(counts):
    prev, nxt, c = counts.bigram_triples()
    return dict(zip(zip(prev.tolist(), nxt.tolist()), c.tolist()))


def write_mixed_corpus(folder):
    """A .txt with <|endoftext|> separators and a gzipped .jsonl, in a folder tree."""
    docs_txt = ["The cat sat on the mat.\nIt was happy.\n",
                "Another   document,\twith  odd spacing!\n\n\nAnd lines.\n", "x"]
    docs_jsonl = ["JSON one: North Korea", " leading space", "ünïcödé ☃ text\nend"]
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("<|endoftext|>\n".join(docs_txt))
    with gzip.open(folder / "sub" / "b.jsonl.gz", "wt", encoding="utf-8") as f:
        for i, d in enumerate(docs_jsonl):
            f.write(json.dumps({"id": i, "text": d}) + "\n")
    return docs_txt, docs_jsonl


def test_counts_equal_a_direct_count(tmp_path, cache, tok, monkeypatch):
    docs_txt, docs_jsonl = write_mixed_corpus(tmp_path / "corpus")
    # Flush and merge after a handful of tokens so every boundary case is crossed.
    monkeypatch.setattr(P, "FLUSH_TOKENS", 5)
    monkeypatch.setattr(P, "MERGE_MIN", 3)
    counts = C.corpus_counts(tmp_path / "corpus", tok)
    uni, bi = direct_counts(tok, docs_txt + docs_jsonl)
    np.testing.assert_array_equal(counts.unigrams, uni)
    assert as_dict(counts) == dict(bi)
    assert counts.n_tokens == uni.sum() and counts.n_documents == 6
    assert counts.n_bigrams == sum(bi.values()) and counts.n_distinct_bigrams == len(bi)
    assert counts.bigrams.shape == (50257, 50257)
    # by_next is c transposed: row u holds the tokens that precede u
    u = tok.encode(" Korea")[0]
    assert counts.by_next()[[u], :].toarray()[0, tok.encode(" North")[0]] == 1


def test_pieces_of_one_long_document_are_joined(tmp_path, cache, tok, monkeypatch):
    text = "".join(f"Line {i} of a long book, with words.\n" for i in range(300))
    f = tmp_path / "long.txt"
    f.write_text(text + "<|endoftext|>\nA second document.\n")
    monkeypatch.setattr(C, "PIECE_CHARS", 400)
    monkeypatch.setattr(P, "FLUSH_TOKENS", 50)
    counts = C.corpus_counts(f, tok)
    uni, bi = direct_counts(tok, [text, "A second document.\n"])
    np.testing.assert_array_equal(counts.unigrams, uni)
    assert as_dict(counts) == dict(bi)
    assert counts.n_documents == 2


def test_sample_corpus(tok, cache):
    counts = C.corpus_counts(SAMPLE_CORPUS, tok)
    with gzip.open(SAMPLE_CORPUS, "rt", encoding="utf-8") as f:
        docs = [json.loads(line)["text"] for line in f]
    uni, _ = direct_counts(tok, docs[:40])
    first40 = C.corpus_counts(write_jsonl(cache.parent / "s.jsonl", docs[:40]), tok)
    np.testing.assert_array_equal(first40.unigrams, uni)
    assert counts.n_documents == len(docs) and counts.n_tokens > 600_000
    assert counts.n_distinct_bigrams > 100_000


def write_jsonl(path, docs):
    path.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    return path


def test_cache_reused_by_content_and_invalidated_on_change(tmp_path, cache, tok, monkeypatch):
    f = write_jsonl(tmp_path / "c.jsonl", ["one two three", "four five"])
    first = C.corpus_counts(f, tok)
    assert len(cache_files(cache)) == 1

    def no_tokenizing(*a, **k):
        raise AssertionError("tokenized although cached")

    with monkeypatch.context() as m:
        m.setattr(C, "iter_count_piece", no_tokenizing)
        m.setattr(C, "count_piece", no_tokenizing)
        again = C.corpus_counts(f, tok)
        np.testing.assert_array_equal(again.unigrams, first.unigrams)
        assert as_dict(again) == as_dict(first) and again.key == first.key
        # same content under another name: the same entry
        other = tmp_path / "renamed.jsonl"
        shutil.copy(f, other)
        assert C.corpus_counts(other, tok).key == first.key
        # one byte changed, same size: recounted
        f.write_text(f.read_text().replace("four", "fout"))
        with pytest.raises(AssertionError, match="tokenized although cached"):
            C.corpus_counts(f, tok)
    changed = C.corpus_counts(f, tok)
    uni, bi = direct_counts(tok, ["one two three", "fout five"])
    np.testing.assert_array_equal(changed.unigrams, uni)
    assert as_dict(changed) == dict(bi)
    assert len(cache_files(cache)) == 2
    # another vocabulary size is another entry
    assert C.corpus_counts(f, tok, n_vocab=50300).unigrams.shape == (50300,)
    assert len(cache_files(cache)) == 3


def test_unreadable_cache_entry_is_recounted(tmp_path, cache, tok):
    f = write_jsonl(tmp_path / "c.jsonl", ["one two three"])
    first = C.corpus_counts(f, tok)
    (cache / "corpus" / f"{first.key}.npz").write_bytes(b"garbage")
    again = C.corpus_counts(f, tok)
    np.testing.assert_array_equal(again.unigrams, first.unigrams)


def test_cancel_mid_pass_leaves_no_cache(tmp_path, cache, tok, monkeypatch):
    words = " ".join(f"w{i}" for i in range(250))  # 400 documents of 1 KB: 400 KB
    f = write_jsonl(tmp_path / "c.jsonl", [f"document {i}: {words}" for i in range(400)])
    monkeypatch.setattr(C, "_PROGRESS_SECONDS", 0.0)
    monkeypatch.setattr(P, "BATCH_CHARS", 200)
    job = C.iter_corpus_counts(f, tok, workers=1)
    seen = [next(job) for _ in range(5)]
    assert 0 < seen[-1].fraction < 1 and seen[-1].message.startswith("counting: ")
    job.close()
    assert cache_files(cache) == []
    # run to the end: monotone progress, ending at 1, and a cache entry
    seen = []
    C.corpus_counts(f, tok, on_progress=seen.append)
    fractions = [p.fraction for p in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert len(cache_files(cache)) == 1


@pytest.mark.parametrize("name,content,expected", BAD_INPUTS)
def test_bad_corpus_input_one_line_and_nothing_cached(tmp_path, cache, tok, name, content,
                                                      expected):
    good = write_jsonl(tmp_path / "good.jsonl", ["fine text here"])
    f = tmp_path / name
    f.write_bytes(content)
    with pytest.raises(InputError) as err:
        C.corpus_counts([good, f], tok)
    msg = str(err.value)
    assert expected in msg and "\n" not in msg and name in msg
    assert cache_files(cache) == []


def test_single_token_documents_have_unigram_counts_and_no_bigrams(tmp_path, cache, tok):
    """A corpus of one-token documents: unigram counts (cached like any other), an empty
    bigram matrix, and a clear refusal from what needs bigrams (issue 16, item 3)."""
    f = write_jsonl(tmp_path / "one.jsonl", ["a", " b", " b"])
    a, b = tok.encode("a"), tok.encode(" b")
    assert len(a) == len(b) == 1
    for _ in range(2):  # counted, then from the cache
        counts = C.corpus_counts(f, tok)
        assert counts.unigrams[a[0]] == 1 and counts.unigrams[b[0]] == 2
        assert counts.n_tokens == 3 == int(counts.unigrams.sum()) and counts.n_documents == 3
        assert counts.n_distinct_bigrams == 0 and counts.n_bigrams == 0
        assert len(cache_files(cache)) == 1
    with pytest.raises(InputError, match="no bigrams .* so there is no bigram table"):
        bigrams_table(counts)
    assert counts_table(tok, counts)[0] == ["token_id", "token", "count"]


def test_missing_paths_and_no_tokenizer(tmp_path, cache, tok):
    with pytest.raises(InputError, match="no such file"):
        C.corpus_counts(tmp_path / "nope.txt", tok)
    with pytest.raises(InputError, match="No corpus files"):
        C.corpus_counts(tmp_path, tok)
    f = write_jsonl(tmp_path / "c.jsonl", ["text"])
    with pytest.raises(InputError, match="no tokenizer"):
        C.corpus_counts(f, None)
    with pytest.raises(InputError, match="outside the model's vocabulary of 300"):
        C.corpus_counts(f, tok, n_vocab=300)
    assert cache_files(cache) == []


def test_a_file_changed_while_counted_is_refused_and_not_cached(tmp_path, cache, tok,
                                                                monkeypatch):
    """The files are hashed for the cache key, then read again to count; a file edited in
    between is refused in one line, and nothing of it is kept (issue 43)."""
    f = write_jsonl(tmp_path / "c.jsonl", [f"document {i}: some words here" for i in range(50)])
    monkeypatch.setattr(C, "_PROGRESS_SECONDS", 0.0)
    monkeypatch.setattr(P, "BATCH_CHARS", 100)
    job = C.iter_corpus_counts(f, tok, workers=1)
    while not next(job).message.startswith("counting: "):
        pass
    with open(f, "a", encoding="utf-8") as out:  # an edit after hashing
        out.write(json.dumps({"text": "appended later"}) + "\n")
    with pytest.raises(InputError) as err:
        while True:
            next(job)
    assert str(err.value) == (f"{f} changed while it was read; nothing of it is kept: count "
                              "the corpus again once it no longer changes.")
    assert cache_files(cache) == [] and piece_files(cache) == []
    C.corpus_counts(f, tok)  # unchanged now: counted and cached
    assert len(cache_files(cache)) == 1


def piece_files(cache):
    folder = cache / "corpus-pieces"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_unreadable_file(tmp_path, cache, tok, monkeypatch):
    f = write_jsonl(tmp_path / "c.jsonl", ["text here"])

    real_open = os.open

    def refuse(path, *args, **kwargs):  # as for a file without read permission
        if os.fspath(path) == os.fspath(f):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(InputError, match=r"c.jsonl: cannot open \(Permission denied\)"):
        C.corpus_counts(f, tok)
    assert cache_files(cache) == []


def test_tokenizer_identity(tok, small_vocab_layer):
    from detokgui.core.model.identity import tokenizer_identity

    assert tokenizer_identity(gpt2_tokenizer()) == tokenizer_identity(tok)
    assert tokenizer_identity(small_vocab_layer.tokenizer) != tokenizer_identity(tok)
