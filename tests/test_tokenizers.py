"""Any tokenizer a checkpoint ships (issue 18): a sentencepiece model shipped as rinna's
japanese-gpt-1b ships it (spiece.model + tokenizer_config.json naming a T5Tokenizer),
beside a random GPT-2, loaded through the user's path; and GPT-2's byte-level BPE
unchanged. The sentencepiece library itself and the tokenizer's own encode/decode are the
oracles."""

from __future__ import annotations

import gzip
import json
import re

import numpy as np
import pytest
from test_cli import read_csv, run_cli

from detokgui.core.base.errors import InputError, ModelLoadError
from detokgui.core.base.progress import run
from detokgui.core.corpus.counts import corpus_counts
from detokgui.core.corpus.documents import CorpusReader, corpus_windows
from detokgui.core.model import tokens
from detokgui.core.model.encode import iter_encode
from detokgui.core.model.sources.demo import sample_corpus, write_random_checkpoint
from detokgui.core.model.weights import Layer0
from detokgui.core.text_side.empirical import TextSource, sentence, text_window
from detokgui.core.text_side.tables import token_text

SENTENCE = "The people of the world have seen the history of the war and the city."


def _train(folder, vocab_size, lines, **special):
    import sentencepiece

    text = folder / "train.txt"
    text.write_text("\n".join(lines), encoding="utf-8")
    sentencepiece.SentencePieceTrainer.train(
        input=str(text), model_prefix=str(folder / "sp"), vocab_size=vocab_size,
        model_type="unigram", byte_fallback=True, minloglevel=2, **special)
    text.unlink()
    return folder / "sp.model"


def _sample_lines(n):
    """The first `n` non-blank lines of the sample corpus's texts."""
    out = []
    with gzip.open(sample_corpus(), "rt", encoding="utf-8") as f:
        for line in f:
            out.extend(s for s in json.loads(line)["text"].split("\n") if s.strip())
            if len(out) >= n:
                break
    return out[:n]


def _rinna_folder(folder, model, config):
    """A checkpoint folder shipping its tokenizer the way rinna/japanese-gpt-1b does."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "spiece.model").write_bytes(model.read_bytes())
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


@pytest.fixture(scope="module")
def spm_ckpt(tmp_path_factory):
    """(folder, sentencepiece processor): a unigram model with byte fallback trained on the
    sample corpus, as spiece.model + tokenizer_config.json, beside a random GPT-2 whose
    vocabulary is the tokenizer's."""
    import sentencepiece

    root = tmp_path_factory.mktemp("spm")
    model = _train(root, 2000, _sample_lines(4000), unk_id=0, bos_id=1, eos_id=2, pad_id=3)
    folder = _rinna_folder(root / "ckpt", model, {
        "tokenizer_class": "T5Tokenizer", "extra_ids": 0, "bos_token": "<s>",
        "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"})
    sp = sentencepiece.SentencePieceProcessor(model_file=str(model))
    write_random_checkpoint(folder, vocab_size=sp.get_piece_size(), tokenizer=False)
    return folder, sp


@pytest.fixture(scope="module")
def spm_layer(spm_ckpt):
    return Layer0.from_pretrained(str(spm_ckpt[0]))


def test_a_folder_with_only_a_sentencepiece_model_loads(spm_ckpt, spm_layer):
    folder, sp = spm_ckpt
    assert not (folder / "tokenizer.json").exists() and not (folder / "vocab.json").exists()
    tok = spm_layer.tokenizer
    assert tok is not None and len(tok) == sp.get_piece_size() == spm_layer.n_vocab
    assert tokens.scheme(tok) == tokens.SENTENCEPIECE
    ids = list(range(len(tok)))
    assert tok.convert_ids_to_tokens(ids) == [sp.id_to_piece(i) for i in ids]
    for text in (SENTENCE, "café, naïve — 日本語 ∮ e^{iπ}", "two  spaces\tand a tab"):
        assert tok.encode(text, add_special_tokens=False) == sp.encode(text)
        assert tok.decode(sp.encode(text)) == sp.decode(sp.encode(text))
    # The special tokens named by tokenizer_config.json, and sentencepiece's control pieces.
    assert (tok.bos_token, tok.eos_token, tok.unk_token) == ("<s>", "</s>", "<unk>")
    control = {i for i in ids if sp.is_control(i) or sp.is_unknown(i)}
    assert control and control <= tokens.special_ids(tok)
    assert {tok.bos_token_id, tok.eos_token_id, tok.unk_token_id} <= tokens.special_ids(tok)


def test_display_forms_and_real_strings(spm_layer, spm_ckpt):
    _, sp = spm_ckpt
    tok, V = spm_layer.tokenizer, spm_layer.n_vocab
    shown, real = tokens.vocabulary(tok, V), tokens.token_strings(tok, V)
    special = tokens.special_ids(tok)
    assert not any(tokens.SPIECE_MARK in s for s in shown + real)
    assert [tokens.display_token(tok, i) for i in range(V)] == shown
    assert [tokens.token_string(tok, i) for i in range(V)] == real
    words = [i for i in range(V) if sp.id_to_piece(i).startswith(tokens.SPIECE_MARK)
             and len(sp.id_to_piece(i)) > 1 and i not in special]
    assert len(words) > 100
    for i in words:
        piece = sp.id_to_piece(i)
        assert real[i] == " " + piece[1:].replace(tokens.SPIECE_MARK, " ")
        assert shown[i] == tokens.SPACE_MARK + real[i][1:]
    for i in special:  # literal, in both forms
        assert shown[i] == real[i] == sp.id_to_piece(i)
    for i in (i for i in range(V) if sp.is_byte(i)):
        byte = int(re.fullmatch(r"<0x([0-9A-F]{2})>", sp.id_to_piece(i))[1], 16)
        want = bytes([byte]).decode("utf-8", errors="backslashreplace")
        assert real[i] == want
        if byte >= 0x80:  # not UTF-8 on its own: \xNN in both forms
            assert real[i] == shown[i] == f"\\x{byte:02x}"
    assert shown[V - 1:] == [tokens.display_token(tok, V - 1)]
    assert tokens.vocabulary(tok, V + 2)[V:] == [f"<{V}>", f"<{V + 1}>"]


def test_the_vocabulary_is_built_once_and_handed_out_as_copies(spm_layer):
    """The display forms are kept per tokenizer: each call gets its own list, the same
    forms, cut or padded to the model's vocabulary size."""
    tok, V = spm_layer.tokenizer, spm_layer.n_vocab
    first = tokens.vocabulary(tok, V)
    first[0] = "changed by a caller"
    again = tokens.vocabulary(tok, V)
    assert again[0] == tokens.display_token(tok, 0) != "changed by a caller"
    assert again[1:] == first[1:] == [tokens.display_token(tok, i) for i in range(1, V)]
    assert tokens.vocabulary(tok, 5) == again[:5]
    assert tokens.vocabulary(tok, V + 1) == again + [f"<{V}>"]


def test_real_strings_concatenate_to_the_decoded_text(spm_layer):
    """Mid-text, a token adds exactly its real string to the tokenizer's own decoding (at
    a text's very start sentencepiece drops the word-start space)."""
    tok = spm_layer.tokenizer
    for text in (SENTENCE, "A short line, with 12 numbers: 3.14 and 2.72!",
                 " Leading space and (brackets) [and] {braces}; semi-colons."):
        ids = tok.encode(text, add_special_tokens=False)
        joined = "".join(tokens.token_string(tok, t) for t in ids)
        assert tok.decode(ids) == joined.removeprefix(" ")
        head = tok.encode("Before it:", add_special_tokens=False)
        whole = tok.decode(head + ids)
        assert whole.startswith(tok.decode(head))
        assert whole[len(tok.decode(head)):] == joined
        assert [token_text(tok, t) for t in ids] == [tokens.token_string(tok, t) for t in ids]


def test_sentence_tokens_and_the_six_terms(spm_layer, spm_ckpt):
    _, sp = spm_ckpt
    tok = spm_layer.tokenizer
    ids = run(iter_encode(tok, SENTENCE))
    assert ids == sp.encode(SENTENCE)
    long = (SENTENCE + "\n") * 50
    assert run(iter_encode(tok, long, piece_chars=300)) == sp.encode(long)
    data = sentence(spm_layer, ids, [0, 1])
    assert float(data.max_abs_diff.max()) < 1e-4  # the six terms give the model's attention
    labels = [tokens.display_token(tok, t) for t in ids]
    assert all(tokens.SPIECE_MARK not in s for s in labels)
    assert "".join(labels).replace(tokens.SPACE_MARK, " ").strip() == SENTENCE


def test_corpus_counts_and_windows_with_the_models_bos(spm_layer, spm_ckpt):
    _, sp = spm_ckpt
    tok, V = spm_layer.tokenizer, spm_layer.n_vocab
    counts = corpus_counts(sample_corpus(), tok, V, use_cache=False)
    docs = [d.text for d in CorpusReader(sample_corpus())]
    encoded = sp.encode(docs)
    assert counts.n_documents == len(docs)
    want = np.bincount(np.concatenate([np.asarray(e) for e in encoded]), minlength=V)
    assert np.array_equal(counts.unigrams, want)
    the = sp.encode("the")
    assert len(the) == 1 and counts.unigrams[the[0]] == sum(e.count(the[0]) for e in encoded)
    assert counts.unigrams[the[0]] > 100

    bos = tok.bos_token_id
    assert bos is not None and tokens.bos_id(tok) == bos != tok.eos_token_id
    n = spm_layer.n_positions
    plain = next(corpus_windows(sample_corpus(), tok, n))
    first = next(corpus_windows(sample_corpus(), tok, n, prepend_bos=True))
    assert first == [bos] + encoded[0][: n - 1] and plain == encoded[0][:n]
    window = text_window(spm_layer, TextSource.corpus(sample_corpus(), prepend_bos=True), 0)
    assert window == first
    assert tokens.bos_description(tok).startswith(f"<s> (id {bos}")


def test_csv_export_holds_the_real_strings(spm_ckpt, spm_layer, tmp_path):
    folder, sp = spm_ckpt
    corpus = tmp_path / "c.txt"
    corpus.write_text(SENTENCE + "\n<|endoftext|>\nThe world of the city.\n", encoding="utf-8")
    out = tmp_path / "counts.csv"
    r = run_cli("counts", "--model", str(folder), "--corpus", str(corpus), "--out", str(out))
    assert r.returncode == 0, r.stderr
    rows = read_csv(out)
    tok = spm_layer.tokenizer
    by_id = {int(x["token_id"]): x for x in rows}
    assert all(x["token"] == tokens.token_string(tok, i) for i, x in by_id.items())
    docs = sp.encode([SENTENCE + "\n", "The world of the city.\n"])
    (world,) = sp.encode("world")
    assert by_id[world]["token"] == " world"
    # the separator line is a file convention, never tokenized
    assert int(by_id[world]["count"]) == sum(d.count(world) for d in docs) > 1
    assert sum(int(x["count"]) for x in rows) == sum(map(len, docs))


@pytest.mark.gui
def test_vocabulary_search_finds_a_word_by_its_real_string(spm_layer, spm_ckpt):
    from detokgui.core.token_side.vocab_search import search_vocabulary

    _, sp = spm_ckpt
    tok = spm_layer.tokenizer
    shown = tokens.vocabulary(tok, spm_layer.n_vocab)
    (people,) = sp.encode("people")
    real = tokens.token_string(tok, people)
    assert real == " people"
    for mode in ("substring", "prefix"):
        hits = run(search_vocabulary(shown, real, mode))
        assert hits[0] == people and all("people" in shown[i] for i in hits)
    assert people in run(search_vocabulary(shown, r"^ peop", "regex"))


def test_no_bos_and_no_eos_is_a_clear_message(tmp_path):
    model = _train(tmp_path, 600, _sample_lines(500), unk_id=0, bos_id=-1, eos_id=-1)
    folder = _rinna_folder(tmp_path / "ckpt", model, {"tokenizer_class": "T5Tokenizer"})
    tok = tokens.load_tokenizer(folder, "bare", 600)
    assert tok.bos_token_id is None and tok.eos_token_id is None
    assert tokens.bos_id(tok) is None and "neither" in tokens.bos_description(tok)
    assert tokens.special_ids(tok) == {tok.unk_token_id}
    with pytest.raises(InputError, match="neither a BOS nor an EOS"):
        next(corpus_windows(sample_corpus(), tok, 64, prepend_bos=True))
    assert next(corpus_windows(sample_corpus(), tok, 64))  # without prepending: fine


def test_a_broken_sentencepiece_model_is_a_clear_message(tmp_path):
    (tmp_path / "spiece.model").write_bytes(b"not a model at all")
    with pytest.raises(ModelLoadError, match="spiece.model: not a readable sentencepiece"):
        tokens.load_tokenizer(tmp_path, "broken", 100)
    assert tokens.load_tokenizer(tmp_path / "none", "none", 100) is None


def test_byte_level_bpe_is_unchanged_and_bos_comes_before_eos():
    tok = tokens.gpt2_tokenizer()
    assert tokens.scheme(tok) == tokens.BYTE_LEVEL
    (eot,) = tokens.special_ids(tok)
    assert tokens.bos_id(tok) == eot == tok.eos_token_id
    assert tokens.display_token(tok, eot) == tokens.token_string(tok, eot) == tok.decode([eot])
    ids = tok.encode(" North Korea\n café")
    assert "".join(tokens.token_strings(tok, len(tok))[t] for t in ids) == tok.decode(ids)
    assert [tokens.display_token(tok, t) for t in ids][:2] == ["␣North", "␣Korea"]
    # An OPT-like tokenizer: the same byte-level vocabulary with its own BOS </s>, which
    # its encode() puts before every text.
    from transformers import GPT2TokenizerFast

    vocab, merges = tokens.gpt2_tokenizer_files()
    opt = GPT2TokenizerFast(vocab=str(vocab), merges=str(merges), bos_token="</s>",
                            add_bos_token=True)
    bos = opt.convert_tokens_to_ids("</s>")
    assert tokens.scheme(opt) == tokens.BYTE_LEVEL
    assert tokens.bos_id(opt) == bos != opt.eos_token_id
    assert tokens.display_token(opt, bos) == "</s>" and bos in tokens.special_ids(opt)
    assert tokens.bos_description(opt).startswith(f"</s> (id {bos}")
    text = " North Korea and South Korea."
    assert opt.encode(text)[0] == bos  # what the typed text's tokens must not start with
    assert run(iter_encode(opt, text)) == opt.encode(text, add_special_tokens=False) == (
        tok.encode(text))
    window = next(corpus_windows(sample_corpus(), opt, 64, prepend_bos=True))
    assert window[0] == bos and window[1:] == next(corpus_windows(sample_corpus(), tok, 63))



def test_pieces_in_chunks_and_the_decoders_own_kinds(spm_layer):
    """all_pieces converts ids in chunks (the GIL is let go in between) and gives what one
    call gives; the decoder's kinds are read from the decoder alone, nested ones too."""
    for tok in (tokens.gpt2_tokenizer(), spm_layer.tokenizer):
        n = len(tok)
        assert n > tokens._PIECES_CHUNK or tok is spm_layer.tokenizer
        assert tokens.all_pieces(tok) == tok.convert_ids_to_tokens(list(range(n)))
    assert tokens._decoder_kinds(tokens.gpt2_tokenizer()) == {"ByteLevel"}
    backend = getattr(spm_layer.tokenizer, "backend_tokenizer", None)
    if backend is not None and backend.decoder is not None:
        whole = json.loads(backend.to_str())["decoder"]
        assert whole["type"] in tokens._decoder_kinds(spm_layer.tokenizer)

@pytest.mark.gui
def test_gui_prepend_option_and_special_token_tooltip(qtbot, spm_layer):
    from PySide6.QtCore import Qt

    from detokgui.gui.jobs import JobRunner
    from detokgui.gui.panels.sentence_view import SentenceViewPanel
    from detokgui.gui.panels.token_search import TokenSearchPanel
    from detokgui.gui.state import AppState

    tok = spm_layer.tokenizer
    state, jobs = AppState(), JobRunner()
    view = SentenceViewPanel(state, jobs)
    qtbot.addWidget(view)
    view.options.set(source="corpus")
    view.show()
    state.set_model(spm_layer)
    box = view.options.widget("prepend")
    assert box.text() == "prepend BOS" and box.isEnabled()
    assert f"This model's BOS token: <s> (id {tok.bos_token_id}" in box.toolTip()

    search = TokenSearchPanel(state, jobs)
    qtbot.addWidget(search)
    search.show()
    qtbot.waitUntil(lambda: len(search.strings) == spm_layer.n_vocab, timeout=10000)
    search.search.setText("s")
    qtbot.waitUntil(lambda: tok.bos_token_id in search.results.token_ids(), timeout=10000)
    model = search.results.records()
    row = search.results.token_ids().index(tok.bos_token_id)
    tip = model.data(model.index(row, 2), Qt.ToolTipRole)
    assert tip.startswith(f"id {tok.bos_token_id}: special token <s>")
    ordinary = next(r for r, t in enumerate(search.results.token_ids())
                    if t not in tokens.special_ids(tok))
    assert model.data(model.index(ordinary, 2), Qt.ToolTipRole) is None
    jobs.cancel()
    jobs.wait(5000)


@pytest.mark.gui  # the window's load job: imports Qt
def test_prepare_reads_every_piece_once_off_the_gui_thread(tiny_ckpt, monkeypatch):
    """The window's load job (on a worker) reads the tokenizer's pieces: showing a token
    afterwards, on the GUI thread, converts no ids (without it, the first display there
    converted all 50257, ~0.3 s)."""
    from detokgui.core.model import tokens
    from detokgui.gui.models import load_layer

    layer = load_layer(str(tiny_ckpt), "cpu", lambda f, m: None)
    tok = layer.tokenizer
    calls = []
    real = type(tok).convert_ids_to_tokens
    monkeypatch.setattr(type(tok), "convert_ids_to_tokens",
                        lambda self, ids, *a, **k: calls.append(ids) or real(self, ids, *a, **k))
    assert tokens.display_token(tok, 4969) == "\u2423Korea"
    assert tokens.token_string(tok, 4969) == " Korea"
    assert calls == []


def _with_config(folder, **config):
    """`folder`'s tokenizer_config.json with `config` added."""
    path = folder / "tokenizer_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **config}))
    return folder


def test_a_tokenizer_read_before_from_the_same_files_is_taken_again(tmp_path):
    """Switching back to a model, or opening another with the same tokenizer files, takes
    the tokenizer already read (reading GPT-2's holds the GIL in 35-60 ms pieces, which
    stalled the window's switches, issue 16); other files, another tokenizer; the checks
    against the model's embedding still apply."""
    a = _with_config(write_random_checkpoint(tmp_path / "a", seed=1), model_max_length=901)
    b = _with_config(write_random_checkpoint(tmp_path / "b", seed=2), model_max_length=901)
    first = Layer0.from_pretrained(str(a)).tokenizer
    assert Layer0.from_pretrained(str(a)).tokenizer is first
    assert Layer0.from_pretrained(str(b)).tokenizer is first  # other weights, same files
    assert first.model_max_length == 901

    c = _with_config(write_random_checkpoint(tmp_path / "c", seed=3), model_max_length=902)
    other = Layer0.from_pretrained(str(c)).tokenizer
    assert other is not first and other.model_max_length == 902

    small = _with_config(write_random_checkpoint(tmp_path / "small", vocab_size=1000),
                         model_max_length=901)
    with pytest.raises(ModelLoadError, match="does not belong to these weights"):
        Layer0.from_pretrained(str(small))


def test_only_the_last_few_tokenizers_are_kept(tmp_path):
    import gc
    import weakref

    folder = write_random_checkpoint(tmp_path / "m", seed=1)
    _with_config(folder, model_max_length=911)
    kept = weakref.ref(Layer0.from_pretrained(str(folder)).tokenizer)
    for k in range(tokens.RECENT_TOKENIZERS):
        _with_config(folder, model_max_length=912 + k)
        Layer0.from_pretrained(str(folder))
        gc.collect()
        assert (kept() is None) == (k == tokens.RECENT_TOKENIZERS - 1)
