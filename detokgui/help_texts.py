"""Help texts that the app's command line (`gui.arguments`) and `detokgui export` (`cli`)
share. Plain strings only: importing this loads nothing else (no torch, no Qt)."""

CORPUS_PATHS = ("corpus files (.txt or .jsonl, optionally .gz or .zst; .parquet; .arrow), "
                "folders (a datasets save_to_disk folder too), glob patterns, counts files "
                "(.npz), or 'sample' (the sample corpus shipped with detokgui)")
