"""Circuits through layer 0 (`detokgui export neuron` and the GUI's OV panel;
docs/math/text-side.md#c5-contextual-neurons): the tokens that drive one MLP neuron
through the contextual heads, and a head's OV circuit from or to one token."""

from __future__ import annotations

from detokgui.api.arguments import heads_of, single_token, text_source
from detokgui.api.frames import analysis, tabled
from detokgui.api.jobs import ProgressArg, run_job, sigma_tables
from detokgui.core.base.errors import InputError


@analysis("neuron")
def neuron(layer, neuron: int, k: int = 20, *, heads=None, corpus=None,
           prepend_bos: bool = False, max_texts: int | None = None,
           progress: ProgressArg = True):
    """A layer-0 MLP neuron m's top and bottom k tokens x by its contextual component
    c_m(x) through the contextual heads' OV circuits (`export neuron`):
    rank,token_id,token,contribution,side. heads: the contextual circuit's heads (default:
    those the B4 classification calls contextual). With a corpus, the normalisation
    norm_h is measured on its windows; without, it is the vocabulary mean (weight-only).
    attrs["circuit"] says which (the line the CLI prints)."""
    from detokgui.core.base.checks import check_count
    from detokgui.core.text_side import circuits
    from detokgui.core.text_side.tables import neuron_table

    k = check_count(k, "k")
    hs = None if heads is None else heads_of(layer, heads)
    circuits.check_neuron(layer, neuron)
    norms = source = None
    if corpus is not None:
        texts = text_source(corpus, prepend_bos, max_texts)
        if hs is None:
            hs = run_job(circuits.iter_contextual_heads(layer), "contextual heads", progress)
            if not hs:
                raise InputError(f"No head of {layer.name} is classified contextual; choose "
                                 "them with heads=[...].")
        norms = run_job(circuits.iter_normalisation(layer, texts, hs), "normalisation",
                        progress).norm
        source = texts.label()
    elif prepend_bos or max_texts is not None:
        raise InputError("prepend_bos and max_texts need a corpus.")
    circuit = run_job(circuits.iter_contextual_circuit(layer, hs, norms, norm_source=source),
                      "contextual circuit", progress)
    table = neuron_table(layer, circuits.neuron_tokens(layer, circuit, neuron, k))
    return tabled(table,
                  neuron=int(neuron), k=k, heads=list(circuit.heads), circuit=circuit.label(),
                  corpus=source)


@analysis("ov")
def ov(layer, token, k: int = 10, *, direction: str = "outputs", heads=None,
       progress: ProgressArg = True):
    """The OV circuit of each head from (direction "outputs") or to ("sources") one token
    (an id or a single-token text): the k tokens most promoted ("top") and suppressed
    ("bottom") (the GUI's OV panel; `core.text_side.circuits.ov_scores`):
    head,direction,token_id,token,side,rank,other_id,other_token,score. The unembedding
    goes through ln_f's centring and gamma (attrs["final_norm"])."""
    from detokgui.core.text_side.circuits import ov_topk
    from detokgui.core.text_side.tables import ov_table

    t = single_token(layer, token)
    sigma_tables(layer, progress)
    res = ov_topk(layer, t, direction, heads_of(layer, heads), k)
    return tabled(ov_table(layer, res),
                  token_id=t, k=int(res.top_ids.shape[1]), direction=res.direction,
                  heads=res.heads, final_norm=res.final_norm)
