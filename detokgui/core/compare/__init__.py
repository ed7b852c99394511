"""Several models: the per-head summary numbers of one model (`head_metrics`), a pair of
models with their token mapping and head matching (`pair`), what the window's comparison
views show (`views`), and a training series of checkpoints (`series`).

May import: every other part of `core`.
"""
