"""A user's corpus: files read as documents and windows, streamed (`documents`), their
unigram and bigram counts, cached (`counts`), the counts as tables (`tables`), a
corpus's identity in a provenance record (`provenance`), and whether paths can be opened
as a corpus (`check`).

May import: `core.base`, `core.model`.
"""
