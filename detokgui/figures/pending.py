"""Figures the registry reserves for computations that are not in this version yet (the
corpus-based ones and the contextual neurons). An implementation registers a builder under
the same key with `@figure(...)` (see `registry`), and the entry here is then ignored."""

from __future__ import annotations

from detokgui.figures.registry import planned

CORPUS_CORE = "needs the corpus counting core (C4) and the AUROC / frequency statistics (A5, A6)"
EMPIRICAL_CORE = "needs the empirical attention and KL contribution core (C2, C3)"

planned("fig02c_roc", paper="Fig 2-C", needs_corpus=True, pending=CORPUS_CORE,
        title="ROC curve of T_ee for the previous tokens of 'iens' (heads 1 and 7)",
        convention="σ per token = mean over positions; positives = bigram prefixes of the "
                   "corpus weighted by count")
planned("fig02d_auroc", paper="Fig 2-D", needs_corpus=True, pending=CORPUS_CORE,
        title="Mean bigram AUROC of T_ee per head",
        convention="σ per token = mean over positions; tokens without a bigram excluded "
                   "(the paper's code scored them 0)")
planned("fig03e_observed", paper="Fig 3-E", needs_corpus=True, pending=EMPIRICAL_CORE,
        title="Observed attention at i = 500 (mean and 95% interval over texts) against "
              "softmax(T_pp + T_p)",
        convention="paper convention for the prediction; observed = the model's attention")
planned("fig04_six_terms", paper="Fig 4", needs_corpus=True, pending=EMPIRICAL_CORE,
        title="Contribution C of each of the six terms per query position (heads 1 and 7)",
        convention="KL(P || Q) per the paper's equation with sqrt(d')")
planned("fig05_te_frequency", paper="Fig 5", needs_corpus=True, pending=CORPUS_CORE,
        title="T_e of every token against its corpus count (heads 1 and 7)",
        convention="T_e averaged over positions: b^QK e_v^T E_j[1/σ(e_v+p_j)]")
planned("fig06l_wte_variance", paper="Fig 6 (left)", needs_corpus=True, pending=CORPUS_CORE,
        title="Var(e_v) of the token embedding against the token's corpus count",
        convention="population variance over the d dimensions")
planned("fig11_te_all_heads", paper="Fig 11", needs_corpus=True, pending=CORPUS_CORE,
        title="T_e against corpus count, every head",
        convention="T_e averaged over positions: b^QK e_v^T E_j[1/σ(e_v+p_j)]")
planned("fig13_six_terms_all_heads", paper="Fig 13", needs_corpus=True, pending=EMPIRICAL_CORE,
        title="Contribution of the six terms per query position, every head",
        convention="KL(P || Q) per the paper's equation with sqrt(d')")
planned("study_c5_contextual_neurons", paper="C5 (contextual circuit)", needs_corpus=False,
        pending="needs the contextual-neuron core (C5)",
        title="Top contextual neurons: the tokens that push each neuron up or down through "
              "the contextual heads' OV circuits",
        convention="contextual heads from the B4 classification")
