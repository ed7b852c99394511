"""One rule for a typed token (issue 40, point 2): a text is a token only when it is
exactly one token of the model's tokenizer; otherwise the CLI, the library and the
window refuse it with the text's pieces and one-token spellings ("Korea" is K|orea: did
you mean " Korea"?), never rank one of its pieces in silence."""

from __future__ import annotations

import csv

import pytest
from test_tokenizers import spm_ckpt, spm_layer  # noqa: F401  (the sentencepiece model)

import detokgui as dg
from detokgui.cli import main as cli_main
from detokgui.core.base.errors import InputError
from detokgui.core.model.tokens import (
    SPACE_MARK,
    encode_text,
    gpt2_tokenizer,
    layer_token,
    one_token_spellings,
    quote_text,
    resolve_token,
)


@pytest.fixture(scope="module")
def tok():
    return gpt2_tokenizer()


@pytest.fixture(scope="module")
def demo():
    from detokgui.core import Layer0

    return Layer0.from_pretrained("demo", device="cpu")


def one_id(tok, text):
    ids = encode_text(tok, text)
    assert len(ids) == 1, (text, ids)
    return ids[0]


# --------------------------------------------------------------------------- core


def test_a_text_of_one_token_is_that_token(tok):
    assert resolve_token(tok, " Korea") == one_id(tok, " Korea")
    assert resolve_token(tok, SPACE_MARK + "Korea") == one_id(tok, " Korea")  # display form
    assert resolve_token(tok, "\n") == 198  # white space is a token like any other
    assert resolve_token(tok, "iens") == one_id(tok, "iens")
    assert resolve_token(tok, "<|endoftext|>") == 50256


def test_a_text_of_several_tokens_is_refused_with_its_pieces_and_spellings(tok):
    with pytest.raises(InputError) as e:
        resolve_token(tok, "Korea", "--query")
    msg = str(e.value)
    assert msg.startswith('--query "Korea" is 2 tokens (K|orea), not one;'), msg
    assert 'did you mean " Korea"?' in msg and "\n" not in msg

    with pytest.raises(InputError) as e:
        resolve_token(tok, "Korean War", "query")
    msg = str(e.value)
    assert msg.startswith('The query "Korean War" is 3 tokens (K|orean|' + SPACE_MARK + "War)")
    assert '" Korean"' in msg and '" War"' in msg  # each word's own one-token form

    with pytest.raises(InputError, match=r"is 2 tokens \(" + SPACE_MARK + "Korean|"):
        resolve_token(tok, " Korean War")
    with pytest.raises(InputError, match="is empty"):
        resolve_token(tok, "")


def test_spellings_are_one_token_each_best_first(tok):
    assert one_token_spellings(tok, "Korea") == [" Korea"]
    assert one_token_spellings(tok, "KOREA")[0] == " Korea"  # capitalised
    assert one_token_spellings(tok, "The cat")[:2] == [" The", " cat"]  # a form of each word
    for text in ("Korea", "Korean War", "einstein", " north korea", "The cat sat on a mat"):
        found = one_token_spellings(tok, text)
        assert 0 < len(found) <= 4 and text not in found
        assert all(len(encode_text(tok, s)) == 1 for s in found), found
    assert one_token_spellings(tok, "zzqxv") == []
    with pytest.raises(InputError, match="exactly one token") as e:
        resolve_token(tok, "zzqxv")
    assert "did you mean" not in str(e.value)


def test_long_and_odd_texts_stay_one_line(tok):
    with pytest.raises(InputError) as e:
        resolve_token(tok, "word " * 200)
    msg = str(e.value)
    assert "\n" not in msg and len(msg) < 400 and "is 201 tokens" in msg and "|…)" in msg
    with pytest.raises(InputError) as e:
        resolve_token(tok, 'a"b\\c\nd')
    assert '"a\\"b\\\\c\\nd"' in str(e.value) and "\n" not in str(e.value)
    assert quote_text(" Korea") == '" Korea"'


def test_layer_token_takes_ids_and_checks_them(demo):
    u = layer_token(demo, " Korea")
    assert layer_token(demo, u) == u
    with pytest.raises(InputError, match="outside the vocabulary"):
        layer_token(demo, demo.n_vocab)
    with pytest.raises(InputError, match="K|orea"):
        layer_token(demo, "Korea")


# --------------------------------------------------------------------------- the CLI


def export(capsys, *args):
    rc = cli_main([str(a) for a in args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if not line.startswith("note:")]
    assert len(lines) == 1, err
    return lines[0]


def test_export_topk_refuses_a_word_without_its_space(tmp_path, capsys):
    out = tmp_path / "topk.csv"
    rc, _, err = export(capsys, "topk", "--model", "demo", "--query", "Korea", "--out", out)
    line = error_line(err)
    assert rc == 2 and not out.exists()
    assert line.startswith('detokgui export topk: error: --query "Korea" is 2 tokens (K|orea)')
    assert '" Korea"' in line

    rc, _, err = export(capsys, "topk", "--model", "demo", "--query", "Korean War", "--out", out)
    assert rc == 2 and not out.exists() and "is 3 tokens" in error_line(err)

    rc, _, err = export(capsys, "topk", "--model", "demo", "--direction", "queries", "--key",
                        "Korea", "--out", out)
    assert rc == 2 and error_line(err).startswith('detokgui export topk: error: --key "Korea"')

    (tmp_path / "q.txt").write_text(" Korea\nKorea\n", encoding="utf-8")
    rc, _, err = export(capsys, "topk", "--model", "demo", "--queries-file", tmp_path / "q.txt",
                        "--out", out)
    assert rc == 2 and "(K|orea)" in error_line(err) and not out.exists()


def test_export_topk_ranks_the_one_token_given(tmp_path, capsys, tok):
    u = one_id(tok, " Korea")
    for typed in (" Korea", SPACE_MARK + "Korea"):
        out = tmp_path / "topk.csv"
        rc, _lines, err = export(capsys, "topk", "--model", "demo", "--query", typed, "--k", 3,
                                 "--out", out)
        assert rc == 0, err
        with open(out, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        assert {(int(r["query_id"]), r["query_token"]) for r in rows} == {(u, " Korea")}
        assert len(rows) == 8 * 3


def test_export_neighbours_suggests_the_spaced_word(tmp_path, capsys):
    rc, _, err = export(capsys, "neighbours", "--model", "demo", "--token", " king", "--minus",
                        "Einstein", "--plus", " woman", "--out", tmp_path / "n.csv")
    line = error_line(err)
    assert rc == 2 and line.startswith('detokgui export neighbours: error: --minus "Einstein" '
                                       "is 2 tokens (E|instein)")
    assert '" Einstein"' in line


# --------------------------------------------------------------------------- the library


def test_the_library_refuses_the_same(demo):
    for call in (lambda: dg.topk(demo, "Korea", progress=False),
                 lambda: dg.topk(demo, [" Korea", "Korea"], progress=False),
                 lambda: dg.topk(demo, "Korea", direction="queries", progress=False),
                 lambda: dg.neighbours(demo, "Korea"),
                 lambda: dg.ov(demo, "Korea")):
        with pytest.raises(InputError) as e:
            call()
        assert "is 2 tokens (K|orea)" in str(e.value) and '" Korea"' in str(e.value)
    u = one_id(demo.tokenizer, " Korea")
    by_text = dg.topk(demo, " Korea", k=3, heads=7, progress=False)
    by_id = dg.topk(demo, u, k=3, heads=7, progress=False)
    assert list(by_text["key_id"]) == list(by_id["key_id"])
    assert set(by_text["query_id"]) == {u}


def test_a_sentencepiece_tokenizer_follows_the_same_rule(spm_layer):  # noqa: F811 (a fixture)
    """Any tokenizer: a text resolves to the one id it encodes to, or is refused with
    spellings that are each one token of that tokenizer."""
    tok = spm_layer.tokenizer
    resolved = refused = 0
    for text in ("people", " people", "the world", "history", "Histor", "xqzv", "café"):
        ids = encode_text(tok, text)
        if len(ids) == 1:
            assert resolve_token(tok, text) == layer_token(spm_layer, text) == ids[0]
            resolved += 1
            continue
        with pytest.raises(InputError, match=f"is {len(ids)} tokens") as e:
            resolve_token(tok, text)
        refused += 1
        for s in one_token_spellings(tok, text):
            assert len(encode_text(tok, s)) == 1 and f'"{s}"' in str(e.value)
    assert resolved and refused
