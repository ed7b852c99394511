"""Layer 0 on real text (C1-C3, C5, OV; docs/math/text-side.md): the model's own attention
beside the six terms, empirical attention, the six-term KL contribution (`empirical`),
the Sentence view's matrices (`sentence_matrices`), contextual neurons and OV circuits
(`circuits`), the ranking of contextual neurons (`contextual_neurons`), their tables, and
the titles and hover lines of the empirical, KL and attention-sink plots (`titles`).

May import: `core.base`, `core.model`, `core.corpus`, `core.position_side`.
"""
