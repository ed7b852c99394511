"""The Tokens panel's Qt-free halves: vocabulary search and reading a text file."""

import pytest

from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import run
from detokgui.core.model.tokens import SPACE_MARK
from detokgui.core.token_side.vocab_search import read_text_file, search_vocabulary

STRINGS = [SPACE_MARK + "North", "North", "Northern", SPACE_MARK + "Korea", "or"]


def test_modes_shortest_first():
    assert run(search_vocabulary(STRINGS, "or", "substring")) == [4, 1, 0, 3, 2]
    assert run(search_vocabulary(STRINGS, " North", "prefix")) == [0]
    assert run(search_vocabulary(STRINGS, "North", "prefix")) == [1, 0, 2]  # space ignored
    assert run(search_vocabulary(STRINGS, "^ K", "regex")) == [3]


def test_bad_searches_are_input_errors():
    with pytest.raises(InputError, match="invalid regular expression"):
        run(search_vocabulary(STRINGS, "(", "regex"))
    with pytest.raises(InputError, match="did not finish"):
        run(search_vocabulary(STRINGS, "x", "regex", seconds=0))
    with pytest.raises(ValueError):
        run(search_vocabulary(STRINGS, "x", "glob"))


def test_read_text_file(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"a\r\nb\xff" + "é".encode() * 10)
    assert read_text_file(str(path), block=3) == "a\nb\ufffd" + "é" * 10
    with pytest.raises(InputError, match="t2.txt"):
        read_text_file(str(tmp_path / "t2.txt"))
