"""Corpus counts and the whole-vocabulary statistics (`detokgui export counts|stats|auroc|
frequency`; docs/math/text-side.md#c4-corpus-counts, docs/math/token-side.md). The
counts and the passes over V x V scores are the long computations: each shows a progress
bar and stops cleanly on Ctrl+C (`jobs.run_job`); their results are kept in detokgui's
disk cache, so a second call with the same model, corpus and conventions is quick.

A corpus argument is "sample", corpus files, folders or glob patterns (.txt, .jsonl,
optionally .gz or .zst, .parquet, .arrow; docs/large-corpora.md), a counts file (.npz,
`counts(..., out="counts.npz")`), or a `core.corpus.counts.CorpusCounts`. The counts are
made by `workers` processes (default one per core) or on the Dask cluster at `scheduler`,
with the same result whatever those are; `text_column` names the text of parquet, arrow
and jsonl files (default "text")."""

from __future__ import annotations

from detokgui.api.arguments import corpus_paths, heads_of
from detokgui.api.frames import analysis, tabled
from detokgui.api.jobs import ProgressArg, run_job, sigma_tables
from detokgui.api.tokens import sigma_choice


def corpus_counts(layer, corpus, progress: ProgressArg = True, *,
                  text_column: str | None = None, workers: int | None = None,
                  scheduler=None):
    """The `core.corpus.counts.CorpusCounts` of `corpus` with the model's tokenizer over its
    n_vocab ids (from the disk cache when the same files were counted before; a counts
    file or a CorpusCounts is checked against the model's tokenizer and V)."""
    from detokgui.core.corpus.counts import CorpusCounts, iter_corpus_counts, tokenizer_key
    from detokgui.core.corpus.countsfile import check_tokenizer

    if isinstance(corpus, CorpusCounts):
        if corpus.tokenizer_key:
            meta = {"tokenizer": corpus.tokenizer_key, "n_vocab": corpus.n_vocab,
                    "model": "another model"}
            check_tokenizer("The CorpusCounts given", meta, tokenizer_key(layer.tokenizer),
                            layer.n_vocab, layer.name)
        return corpus
    paths = corpus_paths(corpus, text_column=text_column, workers=workers,
                         scheduler=scheduler)
    return run_job(iter_corpus_counts(paths, layer.tokenizer, layer.n_vocab, model=layer.name),
                   "counting the corpus", progress)


def _corpus_label(counts) -> dict:
    return {"corpus": list(counts.files), "corpus_tokens": int(counts.n_tokens),
            "corpus_documents": int(counts.n_documents),
            "corpus_counts_file": counts.source or None}


@analysis("counts")
def counts(layer, corpus, *, bigrams: bool = False, out=None, text_column: str | None = None,
           workers: int | None = None, scheduler=None, progress: ProgressArg = True):
    """The corpus count of every token id (`export counts`): token_id,token,count; with
    `bigrams`, every bigram c(prev, next) > 0: prev_id,next_id,count.
    corpus: "sample" (the sample corpus shipped with detokgui), corpus files, folders or
    glob patterns, or a counts file (see the module docstring). `out`: a path ending in
    .npz also writes the counts as a counts file, with the tokenizer's identity, V, the
    input files' hashes and detokgui's version (`export counts --out FILE.npz`), which
    any corpus argument accepts."""
    from detokgui.core.corpus.tables import bigrams_table, counts_table

    c = corpus_counts(layer, corpus, progress, text_column=text_column, workers=workers,
                      scheduler=scheduler)
    if out is not None:
        write_counts_file(layer, c, out)
    table = bigrams_table(c) if bigrams else counts_table(layer.tokenizer, c)
    return tabled(table, bigrams=bool(bigrams), **_corpus_label(c))


def write_counts_file(layer, counts, out) -> None:
    """Write `counts` (made with the model's tokenizer) as the counts file `out` (.npz)."""
    from pathlib import Path

    from detokgui.core.base.errors import InputError
    from detokgui.core.corpus.counts import tokenizer_key
    from detokgui.core.corpus.countsfile import SUFFIX, write_counts

    if Path(out).suffix.lower() != SUFFIX:
        raise InputError(f"A counts file ends in {SUFFIX}, not {Path(out).name!r}.")
    write_counts(out, counts, tokenizer=tokenizer_key(layer.tokenizer), model=layer.name,
                 tokenizer_name=str(getattr(layer.tokenizer, "name_or_path", "") or ""))


@analysis("stats")
def stats(layer, *, heads=None, sigma: str = "mean", progress: ProgressArg = True):
    """Per head and query token u, over all V keys (`export stats`;
    docs/math/token-side.md#a4-head-statistics): head,query_id,query_token,self_rank,
    variance,top1_id,top1_token,top1_score. self_rank = 1 + #{v != u: T_ee(u, v) >
    T_ee(u, u)}; variance = Var_v T_ee(u, v). One pass over V x V scores per head, never
    held in memory."""
    from detokgui.core.token_side.tables import stats_table
    from detokgui.core.token_side.vocab_stats import iter_head_stats

    choice, hs = sigma_choice(sigma), heads_of(layer, heads)
    if choice.convention == "mean":
        sigma_tables(layer, progress)
    st = run_job(iter_head_stats(layer, choice, heads=hs), "head statistics", progress)
    return tabled(stats_table(layer, st),
                  heads=hs, sigma=choice.convention, sigma_label=choice.label(),
                  direction=st.direction)


@analysis("auroc")
def auroc(layer, corpus, *, heads=None, sigma: str = "mean", no_bigram: str = "skip",
          text_column: str | None = None, workers: int | None = None, scheduler=None,
          progress: ProgressArg = True):
    """The bigram AUROC of T_ee(u, .) per head and query token u (`export auroc`;
    docs/math/token-side.md#a5-bigram-auroc): head,query_id,query_token,auroc,positives,
    negatives. Positives: the keys v that precede u in the corpus (c(v, u) > 0, weighted
    by count). no_bigram: "skip" (default) lists the tokens with a bigram; "zero" every
    token, AUROC 0 for those without (the authors' convention). attrs["mean_auroc"] holds
    each head's mean (what the CLI prints). corpus, text_column, workers, scheduler: as
    for `counts`."""
    from detokgui.core.token_side.auroc import NO_BIGRAM_LABELS, check_no_bigram, iter_bigram_auroc
    from detokgui.core.token_side.tables import auroc_table

    check_no_bigram(no_bigram)
    choice, hs = sigma_choice(sigma), heads_of(layer, heads)
    c = corpus_counts(layer, corpus, progress, text_column=text_column, workers=workers,
                      scheduler=scheduler)
    if choice.convention == "mean":
        sigma_tables(layer, progress)
    res = run_job(iter_bigram_auroc(layer, c, choice, heads=hs), "bigram AUROC", progress)
    means, used = res.head_means(no_bigram)
    return tabled(auroc_table(layer, res, no_bigram),
                  heads=list(res.heads), sigma=choice.convention, sigma_label=choice.label(),
                  no_bigram=no_bigram, no_bigram_label=NO_BIGRAM_LABELS[no_bigram],
                  mean_auroc={int(h): float(m) for h, m in zip(res.heads, means.tolist())},
                  mean_over={int(h): int(k) for h, k in zip(res.heads, used.tolist())},
                  **_corpus_label(c))


@analysis("frequency")
def frequency(layer, corpus, *, heads=None, sigma: str = "mean", zero_counts: str = "exclude",
              text_column: str | None = None, workers: int | None = None, scheduler=None,
              progress: ProgressArg = True):
    """T_e(v) = b^QK_h e_v^T / s_v against the corpus count of every token v (`export
    frequency`; docs/math/token-side.md#a6-self-assertion-and-frequency):
    head,token_id,token,count,t_e. attrs["rho"]: Spearman rho(count, T_e) per head over
    the tokens used (zero_counts "exclude": tokens absent from the corpus left out;
    "include": tied at the lowest rank); attrs["rho_variance"]: rho(count, Var(e)).
    corpus, text_column, workers, scheduler: as for `counts`."""
    from detokgui.core.token_side.frequency import ZERO_COUNT_LABELS, frequency_stats
    from detokgui.core.token_side.tables import frequency_table

    choice, hs = sigma_choice(sigma), heads_of(layer, heads)
    c = corpus_counts(layer, corpus, progress, text_column=text_column, workers=workers,
                      scheduler=scheduler)
    if choice.convention == "mean":
        sigma_tables(layer, progress)
    fs = frequency_stats(layer, c, choice, hs, zero_counts)
    return tabled(frequency_table(layer, fs),
                  heads=hs, sigma=choice.convention, sigma_label=choice.label(),
                  zero_counts=zero_counts, zero_counts_label=ZERO_COUNT_LABELS[zero_counts],
                  rho={int(h): float(r) for h, r in zip(fs.heads, fs.rho_t_e.tolist())},
                  rho_variance=float(fs.rho_variance), tokens_used=fs.n_used, **_corpus_label(c))
