"""A user's corpus: files read as documents and windows, streamed (`documents`), their
unigram and bigram counts, cached (`counts`), the counts as tables (`tables`), and a
corpus's identity in a provenance record (`provenance`).

May import: `core.base`, `core.model`.
"""
