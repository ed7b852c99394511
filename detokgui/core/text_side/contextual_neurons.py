"""The Contextual neurons view's ranking (C5): the contextual circuit of some heads, every
layer-0 MLP neuron ranked by the size of its contextual component (std over the
vocabulary of c_m(x) = ext(x) . W2[:, m]), and one row per neuron with the LISTED tokens
of largest and smallest c_m(x) for the first TOP neurons (`iter_contextual_ranking`)."""

from __future__ import annotations

from dataclasses import dataclass

from detokgui.core.base.progress import Job
from detokgui.core.model.tokens import display_token
from detokgui.core.text_side import circuits

TOP = 100  # neurons whose extreme tokens the ranking lists
LISTED = 5  # tokens per side shown in the ranking table


@dataclass
class Ranking:
    label: str  # the circuit
    heads: list[int]
    ranking: circuits.NeuronRanking
    rows: list[tuple]  # (rank, neuron, size, mean, top tokens, bottom tokens) per neuron


def iter_contextual_ranking(layer, heads, k: int) -> Job[Ranking]:
    """The circuit of `heads` (None: B4's contextual heads) and its neurons' `Ranking`,
    each listed neuron's tokens joined by spaces ("" beyond the first TOP)."""
    c = yield from circuits.iter_contextual_circuit(layer, None if heads is None
                                                    else list(heads))
    r = yield from circuits.iter_rank_neurons(layer, c, TOP, k)
    tok = layer.tokenizer

    def joined(ids):
        return " ".join(display_token(tok, int(t)) for t in ids[:LISTED])

    top = {int(m): (joined(r.top_ids[k]), joined(r.bottom_ids[k]))
           for k, m in enumerate(r.top_neurons.tolist())}
    rows = [(k + 1, m, float(r.size[m]), float(r.mean[m]), *top.get(m, ("", "")))
            for k, m in enumerate(r.order.tolist())]
    return Ranking(c.label(), list(c.heads), r, rows)
