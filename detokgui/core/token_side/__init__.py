"""The token side of layer 0 (A2-A7, docs/math/token-side.md): token-token affinity T_ee
and top-k (`affinity`), the affinity heatmap (`heatmap`), the streamed whole-vocabulary
pass and its cached head statistics (`vocab_pass`, `vocab_stats`), bigram AUROC (`auroc`),
self-assertion against corpus frequency (`frequency`), token-space neighbours
(`neighbours`), vocabulary search (`vocab_search`), and their tables.

May import: `core.base`, `core.model`, `core.corpus`.
"""
