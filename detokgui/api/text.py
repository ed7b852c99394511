"""Layer 0 on real text (`detokgui export sentence|empirical|kl`;
docs/math/text-side.md): the six terms of one text beside the model's attention, the
observed attention over corpus windows against the weight-based prediction, and each
term's KL contribution. The corpus passes show a progress bar and stop on Ctrl+C."""

from __future__ import annotations

from detokgui.api.arguments import heads_of, text_source, token_ids
from detokgui.api.frames import analysis, tabled
from detokgui.api.jobs import ProgressArg, run_job
from detokgui.core.model.conventions import DEFAULT_POSITION_CONVENTION


@analysis("sentence")
def sentence(layer, text, *, heads=None):
    """For a text (a string or token ids, at most n_positions tokens): the six terms ee..p,
    their sum, the predicted attention softmax(sum / temperature) and the model's actual
    attention (`export sentence`; docs/math/text-side.md#c1-sentence-view):
    head,i,j,term,value for j <= i."""
    from detokgui.core.text_side.tables import sentence_table

    ids = token_ids(layer, text)
    return tabled(sentence_table(layer, ids, heads),
                  tokens=ids, heads=heads_of(layer, heads), temperature=float(layer.temperature))


@analysis("empirical")
def empirical(layer, corpus, i: int | None = None, *,
              convention: str = DEFAULT_POSITION_CONVENTION,
              heads=None, prepend_bos: bool = False, max_texts: int | None = None,
              progress: ProgressArg = True):
    """The model's mean attention at query position i over the corpus windows longer than
    i (default: `conventions.default_query_position`, the paper's 500 scaled to the model),
    beside the weight-based prediction (B3) under `convention` (`export empirical`;
    docs/math/text-side.md#c2-empirical-attention): head,j,empirical,predicted,windows,
    convention. A window is at most n_positions tokens of one document; `prepend_bos`
    starts each with <|endoftext|> (the authors' convention); `max_texts` reads only the
    first windows."""
    from detokgui.core.base.checks import check_position
    from detokgui.core.model.conventions import default_query_position
    from detokgui.core.text_side.empirical import iter_empirical_attention
    from detokgui.core.text_side.tables import empirical_table

    i = default_query_position(layer.n_positions) if i is None else check_position(layer, i)
    texts = text_source(corpus, prepend_bos, max_texts)
    res = run_job(iter_empirical_attention(layer, texts, i, heads_of(layer, heads), convention),
                  "observed attention", progress)
    return tabled(empirical_table(res),
                  i=i, heads=res.heads, convention=res.convention, windows=res.windows,
                  texts=res.texts, source=res.source, prepend_bos=bool(prepend_bos),
                  max_texts=max_texts)


@analysis("kl")
def kl(layer, corpus, *, definition: str = "paper", heads=None, prepend_bos: bool = False,
       max_texts: int | None = None, progress: ProgressArg = True):
    """Each term's contribution to the KL divergence between the attention with and
    without it, per head and query position, averaged over the corpus windows (`export
    kl`; docs/math/text-side.md#c3-six-term-contribution): head,i,term,contribution,texts,
    definition. definition "paper": KL(P||Q) with sqrt(d') (eq 18-21); "code": the
    authors' script, KL(Q||P) averaged over j, without sqrt(d')."""
    from detokgui.core.text_side.empirical import iter_kl
    from detokgui.core.text_side.tables import kl_table

    texts = text_source(corpus, prepend_bos, max_texts)
    res = run_job(iter_kl(layer, texts, definition, heads_of(layer, heads)),
                  "KL contributions", progress)
    return tabled(kl_table(res),
                  heads=res.heads, definition=res.definition, label=res.label, texts=res.n_texts,
                  source=res.source, prepend_bos=bool(prepend_bos), max_texts=max_texts)
