"""Whether corpus paths can be opened, checked before they become the shared corpus
(`check_corpus`: each file starts with a readable document; a counts file fits the model),
and the one line that names an opened corpus (`describe`)."""

from __future__ import annotations

from pathlib import Path

from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import Progress
from detokgui.core.corpus import countsfile
from detokgui.core.corpus.counts import tokenizer_key
from detokgui.core.corpus.documents import CorpusReader, scan_corpus
from detokgui.core.corpus.spec import Corpus, as_corpus
from detokgui.core.model.sources.demo import sample_corpus


def describe(paths, n_files: int, n_bytes: int, n_skipped: int = 0) -> str:
    """"sample corpus (12 files, 3.1 MB)", "a.jsonl + 2 more (3 files, 0.2 MB, 1 skipped)"."""
    if [Path(p) for p in paths] == [sample_corpus()]:
        name = "sample corpus"
    elif len(paths) == 1:
        name = Path(paths[0]).name
    else:
        name = f"{Path(paths[0]).name} + {len(paths) - 1} more"
    skipped = f", {n_skipped} skipped" if n_skipped else ""
    return f"{name} ({n_files} file{'s' * (n_files != 1)}, {n_bytes / 1e6:.1f} MB{skipped})"


def check_corpus(paths, layer=None):
    """Job body: the corpus files behind `paths` (a Corpus) exist, are regular files, and
    each starts with a readable document (InputError if not: a named pipe or device,
    binary, empty, not UTF-8, bad JSON lines, a damaged parquet or arrow file, no such
    text column); a counts file is read and, with `layer`, checked against its tokenizer
    and V. Returns the corpus, a one-line description and the folder entries skipped
    (`core.corpus.documents.Skipped`). Later problems surface when a view reads on."""
    paths = as_corpus(paths)
    scan = scan_corpus(paths)
    if scan.counts:
        if scan.files:
            raise InputError(f"{scan.counts[0]} is a counts file: open it alone (Open "
                             "counts…), not with corpus files.")
        parts = []
        for f in scan.counts:
            meta = countsfile.counts_meta(f)
            if layer is not None and layer.tokenizer is not None:
                countsfile.check_tokenizer(f, meta, tokenizer_key(layer.tokenizer),
                                           layer.n_vocab, layer.name)
            parts.append(meta)
        n_tokens = sum(m["n_tokens"] for m in parts)
        name = scan.counts[0].name + (f" + {len(parts) - 1} more" if len(parts) > 1 else "")
        return paths, f"counts {name} ({n_tokens / 1e6:,.1f} M tokens)", ()
    files = scan.files
    for k, f in enumerate(files):
        next(iter(CorpusReader(Corpus([f], text_column=paths.text_column))))
        yield Progress((k + 1) / len(files), f"Checking {f.name}")
    n_bytes = sum(f.stat().st_size for f in files)
    return (paths, "corpus: " + describe(paths, len(files), n_bytes, len(scan.skipped)),
            tuple(scan.skipped))
