"""core.token_side.affinity.resulting_sequence: the paper's Table 1 "resulting sequence"."""

from detokgui.core.model.conventions import SigmaChoice
from detokgui.core.token_side.affinity import TopK, resulting_sequence


def _topk(anchor: int, direction: str) -> TopK:
    return TopK(anchor, direction, [0], None, None, SigmaChoice())


def test_key_then_query(tiny_layer):
    tok = tiny_layer.tokenizer
    north, korea, newline = (tok.encode(t)[0] for t in (" North", " Korea", "\n"))
    assert resulting_sequence(tok, _topk(korea, "keys"), north) == " North Korea"
    assert resulting_sequence(tok, _topk(north, "queries"), korea) == " North Korea"
    assert resulting_sequence(tok, _topk(newline, "keys"), north) == " North\\n"
    assert resulting_sequence(None, _topk(7, "keys"), 3) == "<3><7>"
