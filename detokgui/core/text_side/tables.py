"""Tidy tables (header + rows) of the text-side results (docs/math/text-side.md):
what CSV export writes, from the same functions the views and tests use. Written with
`core.base.tables.write_csv`.

Token columns hold the token's real string (' Korea', with its leading space), never the
on-screen form; every result that depends on a convention or definition says which in a
column of its own.
"""

from __future__ import annotations

import torch

from detokgui.core.base.checks import check_heads
from detokgui.core.base.tables import Table
from detokgui.core.model.terms import TERM_NAMES
from detokgui.core.model.tokens import token_string
from detokgui.core.text_side.empirical import SENTENCE_TERMS, sentence


def token_text(tokenizer, token_id: int) -> str:
    """The text a token stands for, as written to files (`tokens.token_string`: ' Korea'
    with its leading space for 'ĠKorea' and '▁Korea' alike; "" without a tokenizer)."""

    return token_string(tokenizer, int(token_id))


def sentence_table(layer, token_ids, heads=None) -> Table:
    """head,i,j,term,value for j <= i: the six terms ee..p, their sum, the predicted
    attention softmax(sum / tau) and the model's actual attention
    (docs/math/text-side.md#c1-sentence-view). Computed
    one head at a time while the rows are written."""

    ids = layer.check_token_ids(token_ids).tolist()
    hs = check_heads(layer, heads)

    def rows():
        for h in hs:
            data = sentence(layer, ids, [h])
            yield from _sentence_rows([h], {m: data.values(m) for m in SENTENCE_TERMS})

    return SENTENCE_HEADER, rows()


SENTENCE_HEADER = ["head", "i", "j", "term", "value"]


def _sentence_rows(heads, values):
    n = next(iter(values.values())).shape[-1]
    ii, jj = torch.tril_indices(n, n)
    ii_l, jj_l = ii.tolist(), jj.tolist()
    for r, h in enumerate(heads):
        for name, arr in values.items():
            for i, j, v in zip(ii_l, jj_l, arr[r][ii_l, jj_l].tolist()):
                yield (h, i, j, name, float(v))


def sentence_values_table(heads, values) -> Table:
    """The rows of `sentence_table` (head,i,j,term,value for j <= i) from matrices already
    computed: values[term] = [len(heads), n, n] (e.g. a sentence view's shown matrices)."""
    return SENTENCE_HEADER, _sentence_rows(list(heads), dict(values))


def empirical_table(result, pattern: bool = False) -> Table:
    """head,j,empirical,predicted,windows,convention,temperature for an
    `empirical.EmpiricalAttention` (docs/math/text-side.md#c2-empirical-attention): mean
    attention at query position i over `windows` texts longer than i, and the weight-based
    prediction under `convention`, a softmax divided by `temperature` (tau). With
    `pattern`, a column "pattern" after "predicted" holds the mean B4 positional pattern of
    the same texts."""
    emp, pred, pat = result.empirical.tolist(), result.predicted.tolist(), result.pattern.tolist()

    def rows():
        for r, h in enumerate(result.heads):
            for j in range(result.i + 1):
                extra = (float(pat[r][j]),) if pattern else ()
                yield (h, j, float(emp[r][j]), float(pred[r][j]), *extra, result.windows,
                       result.convention, float(result.temperature))

    return ["head", "j", "empirical", "predicted", *(["pattern"] if pattern else []),
            "windows", "convention", "temperature"], rows()


def kl_table(result) -> Table:
    """head,i,term,contribution,texts,definition,temperature for an
    `empirical.KLContributions` (docs/math/text-side.md#c3-six-term-contribution); only
    positions i that some text reaches (texts = how many); temperature = the tau the
    definition's softmaxes divide by (1 for "code")."""
    c = result.contribution.tolist()
    texts = result.texts.tolist()

    def rows():
        for r, h in enumerate(result.heads):
            for x, term in enumerate(result.terms):
                for i, k in enumerate(texts):
                    if k:
                        yield (h, i, term, float(c[r][x][i]), int(k), result.definition,
                               float(result.temperature))

    return ["head", "i", "term", "contribution", "texts", "definition", "temperature"], rows()


def neuron_table(layer, result) -> Table:
    """rank,token_id,token,contribution,side for a `circuits.NeuronTokens`: side "top" are
    the tokens with the largest contribution c_m(x), "bottom" the smallest
    (docs/math/text-side.md#c5-contextual-neurons)."""
    tok = layer.tokenizer

    def rows():
        for side, ids, vals in (("top", result.top_ids, result.top_values),
                                ("bottom", result.bottom_ids, result.bottom_values)):
            for rank, (t, v) in enumerate(zip(ids.tolist(), vals.tolist()), start=1):
                yield (rank, t, token_text(tok, t), float(v), side)

    return ["rank", "token_id", "token", "contribution", "side"], rows()


def neuron_ranking_table(layer, result) -> Table:
    """rank,neuron,size,mean,top_tokens,bottom_tokens for a `circuits.NeuronRanking`
    (token lists for the neurons whose extremes were computed, joined by '|')."""
    tok = layer.tokenizer
    extremes = {int(m): r for r, m in enumerate(result.top_neurons.tolist())}

    def joined(ids) -> str:
        return "|".join(token_text(tok, t) for t in ids)

    def rows():
        for rank, m in enumerate(result.order.tolist(), start=1):
            r = extremes.get(m)
            top = joined(result.top_ids[r].tolist()) if r is not None else ""
            bottom = joined(result.bottom_ids[r].tolist()) if r is not None else ""
            yield (rank, m, float(result.size[m]), float(result.mean[m]), top, bottom)

    return ["rank", "neuron", "size", "mean", "top_tokens", "bottom_tokens"], rows()


def normalisation_table(result) -> Table:
    """head,n,median,q25,q75,texts for a `circuits.Normalisation` (positions some text
    reaches)."""
    cols = [result.median.tolist(), result.q25.tolist(), result.q75.tolist()]
    texts = result.texts.tolist()

    def rows():
        for r, h in enumerate(result.heads):
            for n, k in enumerate(texts):
                if k:
                    yield (h, n, *(float(c[r][n]) for c in cols), int(k))

    return ["head", "n", "median", "q25", "q75", "texts"], rows()


def validation_table(result) -> Table:
    """neuron,point,predicted,actual,correlation for a `circuits.NeuronValidation` (the
    kept points; correlation over all points)."""
    pred, act = result.predicted.tolist(), result.actual.tolist()

    def rows():
        for r, m in enumerate(result.neurons):
            for p, (a, b) in enumerate(zip(pred[r], act[r])):
                yield (m, p, float(a), float(b), float(result.correlation[r]))

    return ["neuron", "point", "predicted", "actual", "correlation"], rows()


def ov_table(layer, result) -> Table:
    """head,direction,token_id,token,side,rank,other_id,other_token,score for a
    `circuits.OVTopK` (other = the ranked output or source tokens)."""
    tok = layer.tokenizer
    anchor = token_text(tok, result.token)

    def rows():
        for r, h in enumerate(result.heads):
            for side, ids, vals in (("top", result.top_ids, result.top_scores),
                                    ("bottom", result.bottom_ids, result.bottom_scores)):
                for rank, (t, v) in enumerate(zip(ids[r].tolist(), vals[r].tolist()), 1):
                    yield (h, result.direction, result.token, anchor, side, rank, t,
                           token_text(tok, t), float(v))

    return ["head", "direction", "token_id", "token", "side", "rank", "other_id",
            "other_token", "score"], rows()


SINK_TERM_COLUMNS = [f"adv_{t}" for t in TERM_NAMES]


def sinks_table(result) -> Table:
    """head,i,attention_to_0,uniform,advantage,adv_ee,...,adv_p,sink_term,entropy,texts,bos,
    temperature for a `sinks.SinkProfile` (docs/math/text-side.md#attention-sinks), per
    query position i >= 1 that some text reaches: the mean attention to key position 0,
    1/(i+1) (its value were every key weighted alike), the mean logit advantage A_i of position 0 and its six terms A^X_i, the term with the
    largest of them, the mean entropy H(w_i) of the other keys' weights (nats), how many
    texts reach i, whether position 0 is the prepended BOS token, and tau."""
    att, adv, ent = result.attention.tolist(), result.advantage.tolist(), result.entropy.tolist()
    which = result.position_terms().tolist()
    texts = result.texts.tolist()

    def rows():
        for r, h in enumerate(result.heads):
            for i in range(1, result.n):
                terms = [float(adv[r][x][i]) for x in range(len(result.terms))]
                yield (h, i, float(att[r][i]), 1.0 / (i + 1), float(sum(terms)), *terms,
                       result.terms[which[r][i]], float(ent[r][i]), int(texts[i]),
                       result.bos, float(result.temperature))

    return ["head", "i", "attention_to_0", "uniform", "advantage", *SINK_TERM_COLUMNS,
            "sink_term", "entropy", "texts", "bos", "temperature"], rows()


def sink_heads_table(result) -> Table:
    """head,attention_to_0,uniform,advantage,adv_ee,...,adv_p,sink_term,texts,bos,temperature
    for a `sinks.SinkProfile`: per head, the means over every (text, query position i >= 1)
    (uniform: of 1/(i+1)), and the term with the largest mean advantage (the one that
    favours position 0 most: the sink's maker where position 0 is a sink)."""
    att, adv = result.head_attention.tolist(), result.head_advantage.tolist()

    def rows():
        for r, h in enumerate(result.heads):
            yield (h, float(att[r]), result.uniform, float(sum(adv[r])),
                   *(float(v) for v in adv[r]),
                   result.sink_term(h), int(result.n_texts), result.bos,
                   float(result.temperature))

    return ["head", "attention_to_0", "uniform", "advantage", *SINK_TERM_COLUMNS, "sink_term",
            "texts", "bos", "temperature"], rows()
