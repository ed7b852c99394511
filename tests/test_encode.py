"""Tokenising a long text in pieces gives exactly the ids of one encode() call."""

import gzip
import json

import pytest
from conftest import SAMPLE_CORPUS

from detokgui.core.base.progress import Progress, run
from detokgui.core.model.encode import iter_encode
from detokgui.core.model.tokens import gpt2_tokenizer

CORPUS = SAMPLE_CORPUS


@pytest.fixture(scope="module")
def tok():
    return gpt2_tokenizer()


def corpus_text(n_docs: int) -> str:
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        docs = [json.loads(line)["text"] for _, line in zip(range(n_docs), f)]
    return "\n\n".join(docs)


def test_pieces_give_the_ids_of_one_encode(tok):
    text = corpus_text(30)
    assert text.count("\n") > 100
    seen = []
    ids = run(iter_encode(tok, text, piece_chars=1500, batch_chars=6000), seen.append)
    assert ids == tok.encode(text)
    assert len(seen) > 5 and all(isinstance(p, Progress) for p in seen)
    assert seen[-1].fraction == 1.0


def test_whitespace_at_the_cuts(tok):
    """Runs of newlines, spaces before newlines, tabs and CRLF around every possible cut."""
    parts = ["Hello world.\n\nNext", " line\n  indented\nX", "\t tab\r\nCRLF\n\n\nthree",
             "\n end \n", "ümlaut\nnaïve\n😀\nemoji"]
    text = "".join(parts) * 40
    for piece in (1, 7, 64):
        assert run(iter_encode(tok, text, piece_chars=piece)) == tok.encode(text)


def test_empty_and_short(tok):
    assert run(iter_encode(tok, "")) == []
    assert run(iter_encode(tok, " North Korea")) == tok.encode(" North Korea")
