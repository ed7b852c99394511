"""The text-side CSV tables hold exactly the numbers of the results they are made from."""

import numpy as np

from detokgui.core.base.tables import write_csv
from detokgui.core.text_side import circuits as ci
from detokgui.core.text_side import empirical as em
from detokgui.core.text_side.tables import (
    empirical_table,
    kl_table,
    neuron_ranking_table,
    neuron_table,
    normalisation_table,
    ov_table,
    sentence_table,
    sentence_values_table,
    validation_table,
)

WINDOWS = [[464, 3290, 11, 290, 262, 3797, 13, 383, 4171], [40, 1101, 257, 1492, 13]]


def rows_of(table):
    header, rows = table
    return header, list(rows)


def test_sentence_and_kl_tables(tiny_layer):
    header, rows = rows_of(sentence_table(tiny_layer, WINDOWS[1], heads=[2]))
    assert header == ["head", "i", "j", "term", "value"] and len(rows) == 9 * 15
    data = em.sentence(tiny_layer, WINDOWS[1], [2])
    for h, i, j, term, v in rows:
        assert h == 2 and np.isclose(v, data.values(term)[0, i, j])
    two = em.sentence(tiny_layer, WINDOWS[1], [0, 2])
    shown = {"ee": two.terms["ee"], "actual": two.actual}
    header, again = rows_of(sentence_values_table([0, 2], shown))
    assert header == ["head", "i", "j", "term", "value"] and len(again) == 2 * 2 * 15
    mine = [r for r in again if r[0] == 2]
    theirs = [r for r in rows if r[3] in shown]
    assert [r[:4] for r in mine] == [r[:4] for r in theirs]
    assert np.allclose([r[4] for r in mine], [r[4] for r in theirs], atol=1e-6)
    res = em.kl(tiny_layer, em.TextSource.tokens(WINDOWS), "paper", heads=[1])
    header, rows = rows_of(kl_table(res))
    assert header[-3:] == ["texts", "definition", "temperature"] and len(rows) == 6 * 9
    for h, i, term, c, texts, definition, tau in rows:
        assert tau == tiny_layer.temperature
        assert (h, definition) == (1, "paper") and texts == (2 if i < 5 else 1)
        assert c == res.line(1, term)[i]


def test_empirical_and_normalisation_tables(tiny_layer):
    res = em.empirical_attention(tiny_layer, em.TextSource.tokens(WINDOWS), 6, heads=[0, 3])
    header, rows = rows_of(empirical_table(res))
    assert header == ["head", "j", "empirical", "predicted", "windows", "convention",
                      "temperature"]
    assert len(rows) == 2 * 7 and {r[4] for r in rows} == {1}
    assert {r[6] for r in rows} == {tiny_layer.temperature}
    assert [r[2] for r in rows[7:]] == res.empirical[1].tolist()
    header, rows = rows_of(empirical_table(res, pattern=True))
    assert header == ["head", "j", "empirical", "predicted", "pattern", "windows",
                      "convention", "temperature"]
    assert [r[4] for r in rows[7:]] == res.pattern[1].tolist()
    norm = ci.normalisation(tiny_layer, em.TextSource.tokens(WINDOWS), [1])
    header, rows = rows_of(normalisation_table(norm))
    assert header == ["head", "n", "median", "q25", "q75", "texts"] and len(rows) == 9
    assert [r[2] for r in rows] == norm.median[0, :9].tolist()


def test_neuron_tables(tiny_layer, tmp_path):
    circuit = ci.contextual_circuit(tiny_layer, [0, 2], [1.0, 2.0])
    nt = ci.neuron_tokens(tiny_layer, circuit, 9, k=3)
    out = tmp_path / "n.csv"
    assert write_csv(out, neuron_table(tiny_layer, nt)) == 6
    text = out.read_text(encoding="utf-8").splitlines()
    assert text[0] == "rank,token_id,token,contribution,side"
    first = tiny_layer.tokenizer.decode([int(nt.top_ids[0])])
    assert text[1].startswith(f"1,{int(nt.top_ids[0])},")
    assert first.strip() in text[1] and "\u2423" not in "".join(text)
    rk = ci.rank_neurons(tiny_layer, circuit, top=2, k=2)
    header, rows = rows_of(neuron_ranking_table(tiny_layer, rk))
    assert len(rows) == 256 and [r[1] for r in rows] == rk.order.tolist()
    assert rows[0][4].count("|") == 1 and rows[5][4] == ""
    val = ci.neuron_validation(tiny_layer, circuit, [9, 4], em.TextSource.tokens(WINDOWS))
    header, rows = rows_of(validation_table(val))
    assert header == ["neuron", "point", "predicted", "actual", "correlation"]
    assert len(rows) == 2 * 14 and rows[14][0] == 4
    assert [r[3] for r in rows[:14]] == val.actual[0].tolist()


def test_ov_table(tiny_layer):
    top = ci.ov_topk(tiny_layer, 2159, "sources", heads=[1], k=2)
    header, rows = rows_of(ov_table(tiny_layer, top))
    assert header[:4] == ["head", "direction", "token_id", "token"] and len(rows) == 4
    assert rows[0][:6] == (1, "sources", 2159, tiny_layer.tokenizer.decode([2159]), "top", 1)
    assert rows[2][4] == "bottom" and rows[2][8] == top.bottom_scores[0, 0]
