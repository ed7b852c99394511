"""The arguments the analyses share, read as the command line reads them: texts and
tokens (a token given as text or as an id), heads, corpus paths and text sources. Bad
input is an `InputError` with a one-line message."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from detokgui.core.base.checks import check_heads, check_text, check_token
from detokgui.core.base.errors import InputError
from detokgui.core.corpus.spec import Corpus, as_corpus
from detokgui.core.model.tokens import encode_text, layer_token


def tokens_of(layer, text: str, blank_ok: bool = False) -> list[int]:
    """The token ids of `text` (the model's tokenizer); InputError for an empty text
    (white space only too, unless `blank_ok`) or a model without a tokenizer."""
    if layer.tokenizer is None:
        raise InputError(f"{layer.name} has no tokenizer files, so text cannot be tokenized.")
    if not check_text(text) or not (text if blank_ok else text.strip()):
        raise InputError("The text is empty.")
    ids = encode_text(layer.tokenizer, text)  # without added specials (OPT's </s>)
    if not ids:
        raise InputError("The text has no tokens.")
    return ids


def token_ids(layer, tokens, what: str = "text") -> list[int]:
    """A text (tokenized) or a sequence of token ids, as ids."""
    if isinstance(tokens, str):
        return tokens_of(layer, tokens)
    try:
        ids = [check_token(layer, t) for t in tokens]
    except TypeError:
        raise InputError(f"The {what} must be a string or a sequence of token ids, not "
                         f"{tokens!r}.") from None
    if not ids:
        raise InputError(f"The {what} has no tokens.")
    return ids


def single_token(layer, token, what: str = "token") -> int:
    """A token id, or a text that is exactly one token (`core.model.tokens.layer_token`: a text
    of several tokens is refused with its pieces and one-token spellings, never cut to
    one of them; "␣Korea" is read as " Korea")."""
    return layer_token(layer, token, what)


def single_tokens(layer, tokens, what: str = "token") -> list[int]:
    """One token or several (a list of texts or ids), each as `single_token`."""
    if isinstance(tokens, (str, int)) or not isinstance(tokens, Sequence):
        return [single_token(layer, tokens, what)]
    if not tokens:
        raise InputError("No token was given.")
    return [single_token(layer, t, what) for t in tokens]


def heads_of(layer, heads) -> list[int]:
    """None = every head; a head number or a list of them (`core.base.checks.check_heads`)."""
    return check_heads(layer, heads)


def corpus_paths(corpus, *, text_column: str | None = None, workers: int | None = None,
                 scheduler=None):
    """Corpus files, folders, glob patterns or counts files (a path or a list of them, or
    a `core.corpus.spec.Corpus`) as a Corpus with the options given; "sample" is the
    sample corpus shipped with detokgui, as on the command line."""
    if corpus is None:
        raise InputError("This analysis needs a corpus: corpus=\"sample\" or file paths.")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise InputError(f"workers must be a whole number of at least 1, not {workers!r}.")
    if text_column is not None and (not isinstance(text_column, str) or not text_column):
        raise InputError(f"text_column must be a column name, not {text_column!r}.")
    items = corpus if isinstance(corpus, Corpus) else (
        [corpus] if isinstance(corpus, (str, Path)) else list(corpus))
    if not items:
        raise InputError("No corpus path was given.")
    return as_corpus(items, text_column=text_column, workers=workers, scheduler=scheduler)


def text_source(corpus, prepend_bos: bool = False, max_texts: int | None = None):
    """The corpus windows as `core.text_side.empirical.TextSource` (the CLI's --corpus,
    --prepend-bos, --max-texts)."""
    from detokgui.core.text_side.empirical import TextSource

    return TextSource.corpus(corpus_paths(corpus), prepend_bos=prepend_bos, max_texts=max_texts)
