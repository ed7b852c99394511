"""A user's corpus: files read as documents and windows, streamed (`documents`), their
unigram and bigram counts, cached (`counts`), and the counts as tables (`tables`).

May import: `core.base`, `core.model`.
"""
