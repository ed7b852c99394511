"""Several models: the per-head summary numbers of one model (`head_metrics`), a pair of
models with their token mapping and head matching (`pair`), what the window's comparison
views show (`views`) and say about the pair of heads (`pair_texts`), and a training series
of checkpoints (`series`).

May import: every other part of `core`.
"""
