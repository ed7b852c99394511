"""An OPT token id in the padding range (embedding rows past the tokenizer's tokens) is
refused by the checks made before the model loads, as loading would refuse it after
(issue 45, point 5): the command line's pre-load shape counts the tokenizer's tokens."""

from types import SimpleNamespace

import pytest
from family_models import write

from detokgui.cli.common import model_shape
from detokgui.core import InputError, Layer0
from detokgui.core.base.checks import check_token


@pytest.fixture(scope="module")
def opt_folder(tmp_path_factory):
    folder, _ = write(tmp_path_factory.mktemp("opt"), "opt", seed=4)  # 50272 rows, 50257 tokens
    return folder


def test_padding_ids_are_refused_before_loading(opt_folder):
    shape = model_shape(SimpleNamespace(model=str(opt_folder)))
    assert shape.n_vocab == 50257
    assert check_token(shape, 50256) == 50256
    with pytest.raises(InputError, match=r"Token id 50260 is outside the vocabulary \(0..50256\)"):
        check_token(shape, 50260)
    layer = Layer0.from_pretrained(str(opt_folder), device="cpu")
    assert layer.n_vocab == shape.n_vocab  # what loading leaves, the same count


def test_without_tokenizer_files_the_rows_count(tmp_path):
    folder, _ = write(tmp_path / "bare", "opt", seed=4, tokenizer=False)
    assert model_shape(SimpleNamespace(model=str(folder))).n_vocab == 50272


def test_demo_model_counts_its_tokenizer():
    assert model_shape(SimpleNamespace(model="demo")).n_vocab == 50257
