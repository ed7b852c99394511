"""Attention sinks in layer 0 (`detokgui export sinks`; docs/sinks.md): per head and query
position, the attention to key position 0 and its logit advantage split into the six
terms, averaged over corpus texts or over seeded random token sequences."""

from __future__ import annotations

from detokgui.api.arguments import heads_of, text_source
from detokgui.api.frames import analysis, tabled
from detokgui.api.jobs import ProgressArg, run_job
from detokgui.core.base.checks import check_choice

#: `per=`: one row per head and query position, or one per head
SINK_TABLES = ("position", "head")


def sink_texts(corpus=None, *, prepend_bos: bool = False, max_texts: int | None = None,
               n_texts: int = 16, length: int = 128, seed: int = 0):
    """The texts of a sink analysis: the corpus windows (`corpus`: "sample" or paths), or
    without a corpus `n_texts` seeded random sequences of `length` tokens
    (`core.text_side.sinks.SampleTexts`)."""
    from detokgui.core.text_side.sinks import SampleTexts

    if corpus is None:
        return SampleTexts(n_texts=n_texts, length=length, seed=seed, prepend_bos=prepend_bos)
    return text_source(corpus, prepend_bos, max_texts)


@analysis("sinks")
def sinks(layer, corpus=None, *, per: str = "position", heads=None,
          prepend_bos: bool = False, max_texts: int | None = None, n_texts: int = 16,
          length: int = 128, seed: int = 0, progress: ProgressArg = True):
    """Attention sinks in layer 0 (`export sinks`; docs/math/text-side.md#attention-sinks):
    the attention alpha_{i,0} to key position 0 and its logit advantage over the other keys'
    attention-weighted mean, split into the six terms (A^X_i = T_X[i,0] - sum_{j>=1} w_ij
    T_X[i,j], summing to A_i), averaged over the texts.

    per="position": head,i,attention_to_0,uniform,advantage,adv_ee,...,adv_p,sink_term,
    entropy,texts,bos,temperature (uniform = 1/(i+1), the attention to 0 were every key
    weighted alike); per="head": head,attention_to_0,uniform,advantage,adv_ee,...,adv_p,
    sink_term,texts,bos,temperature (means over every text and query position i >= 1;
    sink_term = the term with the largest mean advantage).

    Texts: the windows of `corpus` ("sample" or paths; `max_texts` reads only the first),
    else `n_texts` random sequences of `length` tokens drawn with `seed`; `prepend_bos`
    makes position 0 the model's BOS token."""
    from detokgui.core.text_side.sinks import iter_sinks
    from detokgui.core.text_side.tables import sink_heads_table, sinks_table

    check_choice("table (per)", per, SINK_TABLES)
    texts = sink_texts(corpus, prepend_bos=prepend_bos, max_texts=max_texts, n_texts=n_texts,
                       length=length, seed=seed)
    res = run_job(iter_sinks(layer, texts, heads_of(layer, heads)), "attention sinks",
                  progress)
    table = sinks_table(res) if per == "position" else sink_heads_table(res)
    return tabled(table, per=per, heads=res.heads, bos=res.bos, texts=res.n_texts,
                  source=res.source, temperature=res.temperature,
                  sink_terms={int(h): res.sink_term(h) for h in res.heads})
