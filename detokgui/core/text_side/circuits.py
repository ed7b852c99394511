"""What layer-0 heads write (docs/math/text-side.md#c5-contextual-neurons and
docs/math/text-side.md#ov-circuit).

Notation: docs/math/notation.md. W^VO_h = Wv_h W^O_h with Wv_h = C diag(gamma_1) W^V_h (the folded
factors of `Layer0`, [d, d'] and [d', d]); a head's output at query i is
sum_j alpha_{i,j,h} (x_j / s_j) W^VO_h plus the constant b^VO share (attention sums to 1).
s_x below is a token's LayerNorm scale averaged over positions, mean_j sigma(e_x + p_j)
(the token-view default, docs/math/sigma.md#token-only-views), so every function here needs the
sigma table.

Contextual circuit: the six terms split into those of the key POSITION (T_ep + T_pp +
T_p: the B4 positional pattern) and those of the key TOKEN (T_ee + T_pe + T_e). For a
contextual head the query token's own part T_ee is small, so
    alpha_{n,j,h} ~ pos_h(n, j) f_h(t_j) / N_h(n),   N_h(n) = sum_{j<=n} pos_h(n, j) f_h(t_j)
with pos_h the B4 pattern of the query token t_n at n (key sigma = vocabulary mean) and the
content factor
    f_h(x) = exp((qbar_h + bq_h) . (e_x Wk_h) / (s_x tau))                        (T_pe + T_e)
where qbar_h = p_n Wq_h / sbar_n at a chosen query position n, or by default its mean over
all positions (sbar_n = vocabulary-mean sigma at n). A head is "contextual" in that study
when N_h(n) is nearly the same number for every text and position (`iter_normalisation`
measures it on a corpus); replacing N_h(n) by one number norm_h turns the head's output
into a bag of tokens weighted by position only:
    ext(x) = sum_{h in S} (f_h(x) / norm_h) (e_x / s_x) W^VO_h        (extended embedding)
    out_n ~ b^VO + sum_{h in S} sum_{j<=n} pos_h(n, j) ext_h(t_j)
The head set S defaults to the heads the B4 classification calls contextual.

Contextual neurons: with ln_2 folded like ln_1 (W2 = C diag(gamma_2) W_fc, b2 = beta_2 W_fc
+ b_fc), a layer-0 MLP neuron m computes m(r) = r W2[:, m] / sigma(r) + b2[m] for the
residual r = x + attention output. Its token contribution vector is
    c_m(x) = ext(x) . W2[:, m]
APPROXIMATION: the division by ln_2's scale sigma(r_n) is left out of c_m. It is one
positive number per position shared by all tokens and neurons, so it changes neither the
order of tokens within a neuron nor the order of neurons by the size of their contextual
component (std over the vocabulary of c_m). `iter_neuron_validation` does not need the
approximation: it applies ln_2 exactly to the bag-of-tokens residual.

Whole-vocabulary passes go through the rank-d' factors: E Wk_h and E Wv_h per chunk of
rows, never a V x V or d x d matrix.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from detokgui.core.base.checks import as_int, check_choice, check_heads, check_position, check_token
from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import Job, Progress, run
from detokgui.core.model.conventions import sigma_stats_job
from detokgui.core.model.sigma import sequence_sigma
from detokgui.core.model.terms import position_factors
from detokgui.core.position_side.positional import _rescaled as rescaled
from detokgui.core.position_side.positional import iter_classify_heads
from detokgui.core.text_side.empirical import TextSource, _np, forward

_ROWS = 4096  # vocabulary rows per chunk


def _sigma_job(layer, lo: float = 0.0, hi: float = 0.2) -> Job:

    return (yield from _rescaled(sigma_stats_job(layer), lo, hi))


def _rescaled(job: Job, lo: float, hi: float) -> Job:

    return (yield from rescaled(job, lo, hi))


# --------------------------------------------------------------------------- content factor


@dataclass
class ContentFactor:
    """log f_h(x) for every token (module docstring), [len(heads), V] float64; `position`
    is the query position n of qbar_h, or None for the mean over positions."""

    heads: list[int]
    position: int | None
    log_f: np.ndarray

    @property
    def f(self) -> np.ndarray:
        return np.exp(self.log_f)


@torch.no_grad()
def _log_content(layer, hs: list[int], position: int | None) -> torch.Tensor:
    """log f_h(x) as [h, V] float64 (sigma table must be cached)."""

    st = layer.sigma_stats()
    Qp = position_factors(layer).Qp[hs]  # [h, L, d']  p_n Wq_h
    if position is None:
        qbar = (Qp / st.pos_mean[None, :, None]).mean(1)
    else:
        qbar = Qp[:, position] / st.pos_mean[position]
    a = torch.einsum("hdk,hk->dh", layer.Wk[hs], qbar + layer.bq[hs])  # [d, h]
    return (layer.E @ a).T.double() / (st.tok_mean.double() * layer.temperature)


def iter_content_factor(layer, heads=None, position=None) -> Job[ContentFactor]:
    """Generator job returning the `ContentFactor` (computes the sigma table if needed)."""
    hs = check_heads(layer, heads)
    pos = None if position is None else check_position(layer, position)
    yield from _sigma_job(layer, 0.0, 0.9)
    out = ContentFactor(heads=hs, position=pos, log_f=_np(_log_content(layer, hs, pos)))
    yield Progress(1.0, "content factor")
    return out


def content_factor(layer, heads=None, position=None) -> ContentFactor:
    """`iter_content_factor` run to completion."""
    return run(iter_content_factor(layer, heads, position))


# --------------------------------------------------------------------------- patterns


@torch.no_grad()
def text_patterns(layer, token_ids, heads=None) -> torch.Tensor:
    """The B4 positional pattern at every query position of a text, [h, n, n]:
    pos_h(i, j) = softmax_{j<=i}((T_ep + T_pp + T_p)(i, j) / tau) with the query's
    own sigma(e_{t_i} + p_i) and key sigma = vocabulary mean at j."""

    ids = layer.check_token_ids(token_ids)
    hs = check_heads(layer, heads)
    n = ids.shape[0]
    f = position_factors(layer)
    s_key = layer.sigma_stats().pos_mean[:n]
    x = layer.E[ids] + layer.P[:n]
    q = torch.matmul(x, layer.Wq[hs]) / sequence_sigma(layer, ids)[None, :, None]
    sc = torch.matmul(q, f.Kp[hs, :n].transpose(1, 2))  # [h, n, n]
    sc.add_(f.Tp_raw[hs, None, :n]).div_(s_key * layer.temperature)
    upper = torch.ones(n, n, dtype=torch.bool, device=ids.device).triu_(1)
    return torch.softmax(sc.masked_fill_(upper, -torch.inf), dim=-1)


# --------------------------------------------------------------------------- normalisation


@dataclass
class Normalisation:
    """N_h(n) = sum_{j<=n} pos_h(n, j) f_h(t_j) measured on texts, per head and query
    position n: median / q25 / q75 [len(heads), L] over the texts longer than n
    (texts[n] of them; NaN where none). norm[h] = the median over all texts and positions,
    spread[h] = (q75 - q25) / median over the same values: small means the head's
    normalisation hardly depends on the text (a contextual head)."""

    heads: list[int]
    position: int | None
    median: np.ndarray
    q25: np.ndarray
    q75: np.ndarray
    texts: np.ndarray
    norm: np.ndarray
    spread: np.ndarray
    n_texts: int
    source: str


@torch.no_grad()
def iter_normalisation(layer, texts: TextSource, heads=None, position=None
                       ) -> Job[Normalisation]:
    """Generator job (Progress per text) returning the `Normalisation` of `heads` over
    `texts`. Keeps one float32 per text, head and position (use max_texts on huge corpora)."""
    hs = check_heads(layer, heads)
    pos = None if position is None else check_position(layer, position)
    yield from _sigma_job(layer, 0.0, 0.1)
    log_f = _log_content(layer, hs, pos)
    shift = log_f.max(dim=1, keepdim=True).values  # f / exp(shift) cannot overflow
    f_rel = torch.exp(log_f - shift)
    L = layer.n_positions
    rows: list[np.ndarray] = []
    for ids, frac in texts.iterate(layer):
        pat = text_patterns(layer, ids, hs).double()  # [h, n, n]
        N = torch.matmul(pat, f_rel[:, ids].unsqueeze(-1)).squeeze(-1)  # [h, n]
        row = np.full((len(hs), L), np.nan, dtype=np.float32)
        row[:, : ids.shape[0]] = _np(torch.log(N) + shift)  # log N: float32 cannot overflow
        rows.append(row)
        yield Progress(0.1 + 0.85 * frac, f"normalisation factors: {len(rows)} texts")
    if not rows:
        raise InputError("The corpus holds no text.")
    values = np.exp(np.stack(rows).astype(np.float64))  # [texts, h, L]
    counts = np.sum(~np.isnan(values[:, 0, :]), axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # positions no text reaches
        q = np.nanquantile(values, [0.25, 0.5, 0.75], axis=0)
    flat = np.moveaxis(values, 1, 0).reshape(len(hs), -1)
    overall = np.array([np.nanquantile(r, [0.25, 0.5, 0.75]) for r in flat])
    yield Progress(1.0, "normalisation factors")
    return Normalisation(
        heads=hs, position=pos, median=q[1], q25=q[0], q75=q[2], texts=counts,
        norm=overall[:, 1], spread=(overall[:, 2] - overall[:, 0]) / overall[:, 1],
        n_texts=len(rows), source=texts.label(),
    )


def normalisation(layer, texts: TextSource, heads=None, position=None) -> Normalisation:
    """`iter_normalisation` run to completion."""
    return run(iter_normalisation(layer, texts, heads, position))


# --------------------------------------------------------------------------- circuit


def iter_contextual_heads(layer) -> Job[list[int]]:
    """Generator job returning the heads `positional.iter_classify_heads` labels
    "contextual" (possibly none)."""

    c = yield from iter_classify_heads(layer)
    return [h for h, label in zip(c.heads, c.labels) if label == "contextual"]


def contextual_heads(layer) -> list[int]:
    """`iter_contextual_heads` run to completion."""
    return run(iter_contextual_heads(layer))


@dataclass(eq=False)
class ContextualCircuit:
    """The bag-of-tokens model of the heads `heads` (module docstring).

    weight[r, x] = f_h(x) / (norm_h s_x) for h = heads[r], as [len(heads), V] on the
    layer's device, so that ext(x) = sum_h weight[h, x] e_x Wv_h W^O_h. norms and
    norm_source say where norm_h came from; position is qbar's query position (None =
    mean over positions). Holds no reference to the layer."""

    heads: list[int]
    norms: np.ndarray
    norm_source: str
    position: int | None
    weight: torch.Tensor

    def label(self) -> str:
        where = "mean over query positions" if self.position is None else (
            f"query position {self.position}")
        return (f"contextual circuit of heads {', '.join(map(str, self.heads))}; content "
                f"factor at {where}; norm_h from {self.norm_source}")


def iter_contextual_circuit(layer, heads=None, norms=None, position=None,
                            norm_source: str | None = None) -> Job[ContextualCircuit]:
    """Generator job returning a `ContextualCircuit`.

    heads: None = the heads B4 classifies as contextual (InputError when there are none).
    norms: one positive number per head (e.g. `Normalisation.norm` measured on a corpus);
    None = the weight-only estimate norm_h = mean over the vocabulary of f_h(x), i.e.
    N_h(n) if the past tokens were drawn uniformly from the vocabulary."""
    if heads is None:
        hs = yield from _rescaled(iter_contextual_heads(layer), 0.0, 0.5)
        if not hs:
            raise InputError(f"No head of {layer.name} is classified contextual (B4); "
                             "choose the heads of the circuit.")
    else:
        hs = check_heads(layer, heads)
    pos = None if position is None else check_position(layer, position)
    yield from _sigma_job(layer, 0.5, 0.9)
    log_f = _log_content(layer, hs, pos)  # [h, V] float64
    if norms is None:
        log_norm = torch.logsumexp(log_f, dim=1) - math.log(log_f.shape[1])
        source = "the vocabulary mean of f_h (weight-only)"
    else:
        arr = np.asarray(norms, dtype=np.float64).reshape(-1)
        if arr.shape[0] != len(hs) or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
            raise InputError(f"Give one positive normalisation factor per head "
                             f"({len(hs)}), not {list(arr)}.")
        log_norm = torch.from_numpy(np.log(arr)).to(log_f.device)
        source = norm_source or "given values"
    inv_s = 1.0 / layer.sigma_stats().tok_mean.double()
    weight = (torch.exp(log_f - log_norm[:, None]) * inv_s).to(layer.dtype)
    yield Progress(1.0, "contextual circuit")
    return ContextualCircuit(heads=hs, norms=_np(torch.exp(log_norm)), norm_source=source,
                             position=pos, weight=weight)


def contextual_circuit(layer, heads=None, norms=None, position=None,
                       norm_source: str | None = None) -> ContextualCircuit:
    """`iter_contextual_circuit` run to completion."""
    return run(iter_contextual_circuit(layer, heads, norms, position, norm_source))


def _token_ids(layer, tokens) -> torch.Tensor:
    ids = torch.as_tensor(tokens, dtype=torch.long).reshape(-1)
    for t in ids.tolist():
        check_token(layer, t)
    return ids.to(layer.device)


def _value_rows(layer, circuit: ContextualCircuit, rows) -> torch.Tensor:
    """G[x] = [weight_h(x) e_x Wv_h]_h for the vocabulary rows `rows`, [c, h, d']."""
    hs = circuit.heads
    E = layer.E[rows]
    V = torch.matmul(E, layer.Wv[hs].permute(1, 0, 2).reshape(layer.d, -1))
    V = V.reshape(E.shape[0], len(hs), layer.d_head)
    return V * circuit.weight[:, rows].T.unsqueeze(-1)


@torch.no_grad()
def extended_embeddings(layer, circuit: ContextualCircuit, tokens) -> torch.Tensor:
    """ext(x) = sum_{h in S} (f_h(x)/norm_h) (e_x/s_x) W^VO_h for the given token ids,
    [len(tokens), d]."""
    G = _value_rows(layer, circuit, _token_ids(layer, tokens))
    return torch.einsum("chk,hkd->cd", G, layer.Wo[circuit.heads])


def mlp_input(layer) -> tuple[torch.Tensor, torch.Tensor]:
    """ln_2 folded into the MLP's first map: W2 = C diag(gamma_2) W_fc [d, d_mlp] and
    b2 = beta_2 W_fc + b_fc [d_mlp], so that ln_2(r) W_fc + b_fc = r W2 / sigma(r) + b2."""
    W = layer.ln2_weight[:, None] * layer.mlp_in_weight
    return W - W.mean(dim=0, keepdim=True), layer.ln2_bias @ layer.mlp_in_weight + layer.mlp_in_bias


def check_neuron(layer, neuron) -> int:
    """Validate a layer-0 MLP neuron index (0-based)."""
    m = as_int(neuron, "neuron")
    n_mlp = layer.mlp_in_weight.shape[1]
    if not 0 <= m < n_mlp:
        raise InputError(f"Neuron {m} is outside 0..{n_mlp - 1} (layer 0 has {n_mlp}).")
    return m


def _neuron_read(layer, circuit: ContextualCircuit, neurons) -> torch.Tensor:
    """A[h, :, m] = W^O_h W2[:, m]: what neuron m reads from head h's value space,
    [h, d', len(neurons)]."""
    W2, _ = mlp_input(layer)
    return torch.matmul(layer.Wo[circuit.heads], W2[:, neurons])


@torch.no_grad()
def neuron_contributions(layer, circuit: ContextualCircuit, neuron) -> np.ndarray:
    """c_m(x) = ext(x) . W2[:, m] for every token x, [V] (float64; without ln_2's scale,
    see the module docstring). One [V, d] x [d, h] product."""
    m = check_neuron(layer, neuron)
    A = _neuron_read(layer, circuit, [m])[..., 0]  # [h, d']
    U = torch.einsum("hdk,hk->dh", layer.Wv[circuit.heads], A)  # [d, h]
    c = ((layer.E @ U).T * circuit.weight).sum(0)
    return _np(c.double())


@dataclass
class NeuronTokens:
    """The k tokens with the largest (top) and smallest (bottom) c_m(x), for one neuron."""

    neuron: int
    top_ids: np.ndarray
    top_values: np.ndarray
    bottom_ids: np.ndarray
    bottom_values: np.ndarray


def neuron_tokens(layer, circuit: ContextualCircuit, neuron, k: int = 10) -> NeuronTokens:
    """Top / bottom k tokens of one neuron's contribution vector."""
    c = torch.from_numpy(neuron_contributions(layer, circuit, neuron))
    k = max(1, min(as_int(k, "k"), c.shape[0]))
    top, bottom = torch.topk(c, k), torch.topk(c, k, largest=False)
    return NeuronTokens(neuron=int(neuron), top_ids=top.indices.numpy(),
                        top_values=top.values.numpy(), bottom_ids=bottom.indices.numpy(),
                        bottom_values=bottom.values.numpy())


@dataclass
class NeuronRanking:
    """Every layer-0 MLP neuron's contextual component: size[m] = std over the vocabulary
    of c_m(x), mean[m] its mean; order = neurons by size, largest first. For the first
    `len(top_neurons)` of them, the k tokens with the largest / smallest c_m(x)
    ([len(top_neurons), k])."""

    heads: list[int]
    size: np.ndarray
    mean: np.ndarray
    order: np.ndarray
    top_neurons: np.ndarray
    top_ids: np.ndarray
    top_values: np.ndarray
    bottom_ids: np.ndarray
    bottom_values: np.ndarray


@torch.no_grad()
def iter_rank_neurons(layer, circuit: ContextualCircuit, top: int = 50, k: int = 10
                      ) -> Job[NeuronRanking]:
    """Generator job returning the `NeuronRanking`. One pass over the vocabulary in row
    chunks builds G = [weight_h(x) e_x Wv_h] ([V, h d'], kept for the job) and its second
    moments, so Var_x c_m(x) = A_m^T Cov(G) A_m for all neurons at once; then the top
    `top` neurons' token extremes from G A[:, top]."""
    V = layer.n_vocab
    n_mlp = layer.mlp_in_weight.shape[1]
    top = max(1, min(as_int(top, "number of neurons"), n_mlp))
    k = max(1, min(as_int(k, "k"), V))
    width = len(circuit.heads) * layer.d_head
    G = torch.empty(V, width, dtype=layer.dtype, device=layer.device)
    gram = torch.zeros(width, width, dtype=torch.float64, device=layer.device)
    total = torch.zeros(width, dtype=torch.float64, device=layer.device)
    for a in range(0, V, _ROWS):
        b = min(V, a + _ROWS)
        g = G[a:b]
        g.copy_(_value_rows(layer, circuit, slice(a, b)).reshape(b - a, width))
        gram += (g.T @ g).double()
        total += g.sum(0, dtype=torch.float64)
        yield Progress(0.8 * b / V, f"contextual neurons: vocabulary {b}/{V}")
    A = _neuron_read(layer, circuit, slice(None)).reshape(width, n_mlp)
    mu = total / V
    cov = gram / V - torch.outer(mu, mu)
    Ad = A.double()
    var = ((cov @ Ad) * Ad).sum(0).clamp_min_(0)
    size, mean = var.sqrt(), mu @ Ad
    order = torch.argsort(size, descending=True)
    chosen = order[:top]
    c = G @ A[:, chosen]  # [V, top]
    hi, lo = torch.topk(c, k, dim=0), torch.topk(c, k, dim=0, largest=False)
    yield Progress(1.0, "contextual neurons")
    return NeuronRanking(
        heads=list(circuit.heads), size=_np(size), mean=_np(mean), order=_np(order),
        top_neurons=_np(chosen), top_ids=_np(hi.indices.T), top_values=_np(hi.values.T),
        bottom_ids=_np(lo.indices.T), bottom_values=_np(lo.values.T),
    )


def rank_neurons(layer, circuit: ContextualCircuit, top: int = 50, k: int = 10
                 ) -> NeuronRanking:
    """`iter_rank_neurons` run to completion."""
    return run(iter_rank_neurons(layer, circuit, top, k))


# --------------------------------------------------------------------------- validation


@torch.no_grad()
def predicted_preactivations(layer, circuit: ContextualCircuit, token_ids,
                             neurons=None) -> torch.Tensor:
    """The bag-of-tokens prediction of the layer-0 MLP pre-activations of a text,
    [n, len(neurons)] (all neurons by default):
        r_n = x_n + b^VO + sum_{h in S} sum_{j<=n} pos_h(n, j) ext_h(t_j)
        m(n) = ln_2(r_n) W_fc + b_fc
    (heads outside S contribute their constant b^VO share only)."""
    ids = layer.check_token_ids(token_ids)
    hs = circuit.heads
    n = ids.shape[0]
    pat = text_patterns(layer, ids, hs)  # [h, n, n]
    G = _value_rows(layer, circuit, ids).transpose(0, 1)  # [h, n, d']
    z = torch.matmul(pat, G)  # [h, n, d']
    out = torch.einsum("hnk,hkd->nd", z, layer.Wo[hs])
    r = layer.E[ids] + layer.P[:n] + layer.bVO + out
    w = F.layer_norm(r, (layer.d,), layer.ln2_weight, layer.ln2_bias, layer.eps)
    cols = slice(None) if neurons is None else [check_neuron(layer, m) for m in neurons]
    return torch.addmm(layer.mlp_in_bias[cols], w, layer.mlp_in_weight[:, cols])


@dataclass
class NeuronValidation:
    """Predicted (bag of tokens) against actual (forward pass) layer-0 MLP
    pre-activations of `neurons` at every position of `texts` texts: `points` pairs per
    neuron in all; the first `len(predicted[0])` of them kept for a scatter
    ([len(neurons), kept]); correlation[m] = Pearson r over all points."""

    neurons: list[int]
    heads: list[int]
    predicted: np.ndarray
    actual: np.ndarray
    correlation: np.ndarray
    points: int
    texts: int
    source: str


@torch.no_grad()
def iter_neuron_validation(layer, circuit: ContextualCircuit, neurons, texts: TextSource,
                           max_points: int = 20000) -> Job[NeuronValidation]:
    """Generator job (Progress per text) returning the `NeuronValidation`."""
    ms = [check_neuron(layer, m) for m in (
        [neurons] if isinstance(neurons, (int, np.integer)) else neurons)]
    if not ms:
        raise InputError("No neurons were chosen.")
    keep = max(0, as_int(max_points, "number of points"))
    yield from _sigma_job(layer, 0.0, 0.1)
    sums = torch.zeros(5, len(ms), dtype=torch.float64, device=layer.device)
    kept_p: list[torch.Tensor] = []
    kept_a: list[torch.Tensor] = []
    n_kept = points = n_texts = 0
    for ids, frac in texts.iterate(layer):
        pred = predicted_preactivations(layer, circuit, ids, ms).double()
        act = forward(layer, ids).mlp_pre[:, ms].double()
        sums += torch.stack([pred.sum(0), act.sum(0), (pred * pred).sum(0),
                             (act * act).sum(0), (pred * act).sum(0)])
        if n_kept < keep:
            take = min(keep - n_kept, pred.shape[0])
            kept_p.append(pred[:take])
            kept_a.append(act[:take])
            n_kept += take
        points += pred.shape[0]
        n_texts += 1
        yield Progress(0.1 + 0.9 * frac, f"neuron activations: {n_texts} texts")
    if not n_texts:
        raise InputError("The corpus holds no text.")
    sp, sa, spp, saa, spa = sums
    cov = spa / points - sp * sa / points**2
    var_p = (spp / points - (sp / points) ** 2).clamp_min(0)
    var_a = (saa / points - (sa / points) ** 2).clamp_min(0)
    corr = cov / (var_p * var_a).sqrt()

    def stacked(parts):
        if not parts:
            return np.empty((len(ms), 0))
        return _np(torch.cat(parts).T)

    return NeuronValidation(
        neurons=ms, heads=list(circuit.heads), predicted=stacked(kept_p),
        actual=stacked(kept_a), correlation=_np(corr), points=points, texts=n_texts,
        source=texts.label(),
    )


def neuron_validation(layer, circuit: ContextualCircuit, neurons, texts: TextSource,
                      max_points: int = 20000) -> NeuronValidation:
    """`iter_neuron_validation` run to completion."""
    return run(iter_neuron_validation(layer, circuit, neurons, texts, max_points))


# --------------------------------------------------------------------------- OV circuit

OV_DIRECTIONS = ("outputs", "sources")


def ov_final_norm_label(layer) -> str:
    if layer.lnf_weight is None:
        return "no ln_f in the checkpoint: centred output direction, no gamma"
    return "through ln_f's centring and gamma; its scale and beta left out"


@dataclass
class OVTopK:
    """The OV circuit of `heads` from one token, [len(heads), k] per side.

    direction "outputs": token = the source x; top/bottom = the output tokens y most
    promoted / suppressed. direction "sources": token = the output y; top/bottom = the
    source tokens x that most promote / suppress it. Scores (see `ov_scores`) are
    comparable across tokens and heads; `final_norm` says how ln_f was treated."""

    direction: str
    token: int
    heads: list[int]
    top_ids: np.ndarray
    top_scores: np.ndarray
    bottom_ids: np.ndarray
    bottom_scores: np.ndarray
    final_norm: str

    def describe(self, anchor: str) -> str:
        """What the lists rank (`anchor`: the token, as text) and by which score."""
        what = (f"output tokens y promoted / suppressed by the source x = {anchor}"
                if self.direction == "outputs" else
                f"source tokens x that promote / suppress the output y = {anchor}")
        return (f"{what} · score_h(x → y) = ((e_x/s_x) W^VO_h) C diag(γ_f) e_yᵀ (tied "
                f"unembedding; ln_f: {self.final_norm}) · {len(self.heads)} head"
                f"{'s' * (len(self.heads) != 1)}")


def _lnf_gamma(layer) -> torch.Tensor:
    g = layer.lnf_weight
    return torch.ones(layer.d, dtype=layer.dtype, device=layer.device) if g is None else g


@torch.no_grad()
def ov_scores(layer, token, direction: str = "outputs", heads=None) -> torch.Tensor:
    """score_h(x -> y) = ((e_x / s_x) W^VO_h) C diag(gamma_f) e_y^T for all tokens on the
    other side of `token`, [len(heads), V]: "outputs" fixes the source x, "sources" the
    output y. The output side goes through the tied unembedding (W_U = E^T) after the
    final LayerNorm ln_f, linearised: its centring C and gamma_f are applied, its scale
    1/sigma_f (one positive number per position: it does not change any ranking) and
    beta_f e_y^T (the same for every source and head) are left out. Never a V x V or
    d x d matrix: one [V, d] x [d, h] product."""
    check_choice("OV direction", direction, OV_DIRECTIONS)
    t = check_token(layer, token)
    hs = check_heads(layer, heads)
    s_tok = layer.sigma_stats().tok_mean
    g = _lnf_gamma(layer)
    Wv, Wo = layer.Wv[hs], layer.Wo[hs]  # [h, d, d'], [h, d', d]
    if direction == "outputs":
        u = torch.einsum("d,hdk,hke->he", layer.E[t], Wv, Wo) / s_tok[t]  # [h, d]
        w = (u - u.mean(dim=1, keepdim=True)) * g  # C then gamma_f
        return (layer.E @ w.T).T
    y = layer.E[t] * g
    z = torch.einsum("hke,e->hk", Wo, y - y.mean())  # W^O_h C diag(gamma_f) e_y^T
    return (layer.E @ torch.einsum("hdk,hk->dh", Wv, z)).T / s_tok


def ov_topk(layer, token, direction: str = "outputs", heads=None, k: int = 10) -> OVTopK:
    """Top / bottom k of `ov_scores` per head (needs the sigma table)."""
    sc = ov_scores(layer, token, direction, heads)
    k = max(1, min(as_int(k, "k"), sc.shape[1]))
    hi, lo = torch.topk(sc, k, dim=1), torch.topk(sc, k, dim=1, largest=False)
    return OVTopK(
        direction=direction, token=int(token), heads=check_heads(layer, heads),
        top_ids=_np(hi.indices), top_scores=_np(hi.values), bottom_ids=_np(lo.indices),
        bottom_scores=_np(lo.values), final_norm=ov_final_norm_label(layer),
    )
