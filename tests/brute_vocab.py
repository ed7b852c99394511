"""Brute-force oracles for the whole-vocabulary statistics, from a checkpoint's raw tensors:
the folding written out with explicit d x d matrices, sigma from materialised e_v + p_j,
whole V x V score matrices in float64 (small vocabularies only), and statistics as
textbook loops over pairs."""

import json

import numpy as np
import torch
from safetensors.torch import load_file


def raw_model(folder):
    """Layer-0 tensors of a checkpoint folder in float64, as stored (unfolded)."""
    st = load_file(str(folder / "model.safetensors"))
    cfg = json.loads((folder / "config.json").read_text())
    pre = "transformer."
    t = {k: st[pre + k].double() for k in ("wte.weight", "wpe.weight", "h.0.ln_1.weight",
                                             "h.0.ln_1.bias", "h.0.attn.c_attn.weight",
                                             "h.0.attn.c_attn.bias")}
    return {"E": t["wte.weight"], "P": t["wpe.weight"], "g": t["h.0.ln_1.weight"],
            "beta": t["h.0.ln_1.bias"], "W": t["h.0.attn.c_attn.weight"],
            "b": t["h.0.attn.c_attn.bias"], "H": cfg["n_head"],
            "eps": cfg.get("layer_norm_epsilon", 1e-5)}


def token_sigma(raw, convention="mean", position=0):
    """Per-token sigma: mean over positions of sigma(e_v + p_j), at one position, or 1."""
    E, P = raw["E"], raw["P"]
    if convention == "none":
        return torch.ones(E.shape[0], dtype=torch.float64)
    x = E[:, None, :] + (P[None] if convention == "mean" else P[None, position : position + 1])
    s = torch.sqrt(x.var(-1, unbiased=False) + raw["eps"])
    return s.mean(1)


def qk_matrices(raw):
    """Per head: W^QK_h = Wq_h Wk_h^T (d x d) and b^QK_h = bq_h Wk_h^T (d)."""
    E, W, b, H = raw["E"], raw["W"], raw["b"], raw["H"]
    d = E.shape[1]
    dh = d // H
    C = torch.eye(d, dtype=torch.float64) - torch.full((d, d), 1.0 / d, dtype=torch.float64)
    G = C @ torch.diag(raw["g"])
    out = []
    for h in range(H):
        q, k = slice(h * dh, (h + 1) * dh), slice(d + h * dh, d + (h + 1) * dh)
        Wq, Wk = G @ W[:, q], G @ W[:, k]
        bq = raw["beta"] @ W[:, q] + b[q]
        out.append((Wq @ Wk.T, bq @ Wk.T))
    return out


def tee_matrix(raw, convention="mean", positions=(0, 0)):
    """T_ee(u, v) for all u, v and heads, [H, V, V] float64."""
    E = raw["E"]
    s_q = token_sigma(raw, convention, positions[0])
    s_k = token_sigma(raw, convention, positions[1])
    mats = [E @ WQK @ E.T for WQK, _ in qk_matrices(raw)]
    return (torch.stack(mats) / (s_q[None, :, None] * s_k[None, None, :])).numpy()


def te_matrix(raw, convention="mean"):
    """T_e(v) = b^QK_h e_v^T / s_v, [H, V] float64."""
    s = token_sigma(raw, convention)
    return torch.stack([(raw["E"] @ bqk) / s for _, bqk in qk_matrices(raw)]).numpy()


def weighted_auroc(scores, weights):
    """AUROC by the pairwise definition: sum over positive p (weight c_p) and negative n of
    c_p ([s_p > s_n] + 1/2 [s_p = s_n]) / (sum_p c_p * #negatives); NaN without positives
    or negatives."""
    pos = np.flatnonzero(weights > 0)
    neg = np.flatnonzero(weights == 0)
    if pos.size == 0 or neg.size == 0:
        return float("nan")
    total = 0.0
    for p in pos:
        above = np.sum(scores[p] > scores[neg]) + 0.5 * np.sum(scores[p] == scores[neg])
        total += weights[p] * above
    return total / (weights[pos].sum() * neg.size)
