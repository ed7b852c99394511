"""A model opened for viewing: `load_layer`, the job body that loads it with everything a
view would otherwise compute on the GUI thread, and the query token it starts with
(`default_query`)."""

from __future__ import annotations

import threading

from detokgui.core.model.provenance import layer0_digest
from detokgui.core.model.tokens import encode_text
from detokgui.core.model.tokens import prepare as prepare_tokens
from detokgui.core.model.weights import Layer0

#: One model loads at a time (A and B asked for together): transformers' lazy imports are
#: not safe from two threads at once, and two loads at once would double the peak memory.
_LOADING = threading.Lock()


def load_layer(name: str, device: str | None, report) -> Layer0:
    """Job body: load a model (a demo model, a folder or a hub name), its sigma table, its
    tokenizer's pieces and the digest of its layer-0 tensors; `report(fraction, message)`."""
    report(0.0, "")  # cancelled while waiting: stop here
    with _LOADING:
        layer = Layer0.from_pretrained(name, device=device,
                                       progress=lambda f, m: report(0.7 * f, m))
        layer.sigma_stats(progress=lambda f, m: report(0.7 + 0.3 * f, m))
        prepare_tokens(layer.tokenizer)  # not on the GUI thread when the first token shows
        layer0_digest(layer)  # every export's provenance names it: not on the GUI thread
    return layer


def default_query(layer) -> int:
    """' Korea' (the paper's running example) when the tokenizer has it, else token 0."""
    tok = layer.tokenizer
    if tok is not None:
        ids = encode_text(tok, " Korea")
        if len(ids) == 1 and ids[0] < layer.n_vocab:
            return ids[0]
    return 0
