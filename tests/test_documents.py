"""Reading a corpus: documents, pieces, windows, and a message for every bad input."""

import gzip
import json
from pathlib import Path

import pytest
from conftest import SAMPLE_CORPUS

from detokgui.core.base.errors import InputError
from detokgui.core.corpus.documents import (
    CorpusReader,
    corpus_files,
    corpus_windows,
    iter_token_pieces,
    iter_windows,
)
from detokgui.core.model.tokens import gpt2_tokenizer

SAMPLE = SAMPLE_CORPUS


@pytest.fixture(scope="module")
def tok():
    return gpt2_tokenizer()


def texts(paths, **kw):
    return [d.text for d in CorpusReader(paths, **kw)]


def test_txt_documents_split_at_endoftext_lines(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("first doc\nline two\n<|endoftext|>\n  <|endoftext|>  \nsecond\n<|endoftext|>\n")
    assert texts(f) == ["first doc\nline two\n", "second\n"]


def test_jsonl_text_field_other_fields_ignored_blank_lines_skipped(tmp_path):
    f = tmp_path / "a.jsonl"
    f.write_text(json.dumps({"text": "one", "source": "x"}) + "\n\n"
                 + json.dumps({"id": 3, "text": "two\nlines"}) + "\n")
    docs = list(CorpusReader(f))
    assert [d.text for d in docs] == ["one", "two\nlines"]
    assert [d.line for d in docs] == [1, 3]


def test_gzip_and_folders_recursive_sorted(tmp_path):
    (tmp_path / "sub").mkdir()
    with gzip.open(tmp_path / "sub" / "b.jsonl.gz", "wt") as f:
        f.write(json.dumps({"text": "zipped"}) + "\n")
    (tmp_path / "a.txt").write_text("plain")
    (tmp_path / "notes.md").write_text("ignored in folders")
    assert [p.name for p in corpus_files(tmp_path)] == ["a.txt", "b.jsonl.gz"]
    assert texts(tmp_path) == ["plain", "zipped"]
    r = CorpusReader(tmp_path)
    list(r)
    assert r.bytes_read == r.total_bytes and r.fraction == 1.0


BAD_INPUTS = [
    ("e.txt", b"", "is empty"),
    ("b.txt", b"abc\x00def", "NUL byte at byte offset 3"),
    ("u.txt", "h\u00e9llo".encode() + b" \xff rest", "invalid byte at byte offset 7"),
    ("n.jsonl", b'{"text": "ok"}\n{"title": "no text"}\n', "line 2: the JSON object has no"),
    ("j.jsonl", b'{"text": "ok"}\nnot json\n', "line 2: not valid JSON"),
    ("a.jsonl", b'{"text": "ok"}\n["a", "b"]\n', "line 2: a JSON array, not an object"),
    ("q.jsonl", b'"just text"\n', "line 1: a JSON string, not an object"),
    ("s.jsonl", b'{"text": 5}\n', "\"text\" is not a string"),
    ("w.txt", b"\n  \n<|endoftext|>\n", "holds no text"),
    ("g.txt.gz", b"not gzip at all", "not a valid gzip file"),
    ("x.csv", b"a,b", "unsupported file type"),
]


@pytest.mark.parametrize("name,content,expected", BAD_INPUTS)
def test_bad_input_names_file_and_place(tmp_path, name, content, expected):
    f = tmp_path / name
    f.write_bytes(content)
    with pytest.raises(InputError) as err:
        texts(f)
    assert expected in str(err.value) and name in str(err.value)


def test_binary_inside_gzip_gives_decompressed_offset(tmp_path):
    f = tmp_path / "bin.txt.gz"
    with gzip.open(f, "wb") as g:
        g.write(b"x" * 70000 + b"\x00")
    with pytest.raises(InputError, match="NUL byte at decompressed byte offset 70000"):
        texts(f)


def test_invalid_utf8_across_a_read_boundary_reports_its_offset(tmp_path):
    f = tmp_path / "u.txt"
    data = b"a" * 65535 + "\u00e9".encode() + b"b\xffc"  # é split across reads, bad byte after
    f.write_bytes(data)
    bad = data.index(b"\xff")
    with pytest.raises(InputError, match=f"offset {bad}"):
        texts(f)


def test_missing_path_and_empty_folder(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        corpus_files(tmp_path / "nope.txt")
    with pytest.raises(InputError, match="No corpus files"):
        corpus_files(tmp_path)


def test_long_document_pieces_tokenize_like_the_whole(tmp_path, tok):
    lines = [f"Line {i} of a long book, with words.\n" for i in range(400)]
    lines[100] = "   indented line\n"
    lines[200] = "\n"
    text = "".join(lines)
    f = tmp_path / "long.txt"
    f.write_text(text)
    docs = list(CorpusReader(f, piece_chars=500))
    assert len(docs) > 10 and not docs[0].continued and all(d.continued for d in docs[1:])
    assert "".join(d.text for d in docs) == text
    pieces = list(iter_token_pieces(tok, docs, batch_chars=2000))
    assert [t for p in pieces for t in p.ids] == tok.encode(text)


def test_windows_do_not_span_documents_and_prepend(tmp_path, tok):
    f = tmp_path / "w.jsonl"
    a, b = " one two three four five", " six seven"
    f.write_text(json.dumps({"text": a}) + "\n" + json.dumps({"text": b}) + "\n")
    ta, tb = tok.encode(a), tok.encode(b)
    assert list(corpus_windows(f, tok, 3)) == [ta[:3], ta[3:], tb]
    eos = tok.eos_token_id
    got = list(corpus_windows(f, tok, 3, prepend_bos=True))
    assert got == [[eos, *ta[:2]], [eos, *ta[2:4]], [eos, ta[4]], [eos, *tb]]


def test_iter_windows_joins_continued_pieces():
    from detokgui.core.corpus.documents import TokenPiece

    pieces = [TokenPiece([1, 2], False), TokenPiece([3], True), TokenPiece([4, 5], False)]
    assert list(iter_windows(pieces, 2)) == [[1, 2], [3], [4, 5]]
    assert list(iter_windows(pieces, 10)) == [[1, 2, 3], [4, 5]]


def test_shared_sample_corpus_reads(tok):
    r = CorpusReader(SAMPLE)
    n = sum(1 for _ in r)
    assert n > 100 and r.fraction == 1.0


def test_the_name_sample_is_the_shipped_corpus_unless_such_a_file_exists(tmp_path, monkeypatch):
    from detokgui.core.model.sources.demo import sample_corpus

    monkeypatch.chdir(tmp_path)
    assert corpus_files(["sample"]) == [sample_corpus()]
    assert sample_corpus().is_file()
    (tmp_path / "sample").mkdir()
    (tmp_path / "sample" / "mine.txt").write_text("my own text")
    assert corpus_files(["sample"]) == [Path("sample") / "mine.txt"]
