"""Reference facts about real GPT-2 small (docs/gpt2-reference.md). These need the real weights in
the local Hugging Face cache and are skipped cleanly without them (marker `gpt2`)."""

import pytest
import torch

from detokgui.core.token_side import affinity

pytestmark = pytest.mark.gpt2


@pytest.fixture(scope="module")
def gpt2():
    from detokgui.core import Layer0

    return Layer0.from_pretrained("gpt2", device="cpu")


def _token(layer, text):
    ids = layer.tokenizer.encode(text)
    assert len(ids) == 1, (text, ids)
    return ids[0]


@pytest.mark.parametrize(
    "head, query, key, rank",
    [
        (7, "yo", "Tok", 1),
        (7, " Korea", " North", 1),
        (7, " Einstein", " Albert", 1),
        (7, " Jackson", " Michael", 1),
        (7, " chloride", " aluminum", 1),
        (10, " chloride", " potassium", 2),
        (7, "iens", " sap", 1),
    ],
)
def test_paper_table_1(gpt2, head, query, key, rank):
    res = affinity.topk_keys(gpt2, _token(gpt2, query), k=rank, heads=[head])
    assert res.ids[0, rank - 1].item() == _token(gpt2, key)


def test_attention_equals_model(gpt2):
    from transformers import GPT2LMHeadModel

    model = GPT2LMHeadModel.from_pretrained("gpt2", attn_implementation="eager").eval()
    ids = gpt2.tokenizer.encode("The Democratic People's Republic of Korea is in East Asia. " * 20)
    with torch.no_grad():
        theirs = model(torch.tensor([ids]), output_attentions=True).attentions[0][0]
    assert (gpt2.attention(ids) - theirs).abs().max().item() < 1e-5


def test_position_embedding_variance_extremes(gpt2):
    var = gpt2.P.var(dim=1, unbiased=False)
    assert var.argmax().item() == 0
    assert var[-1] < var[1:-1].median()
