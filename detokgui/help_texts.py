"""Help texts that the app's command line (`gui.arguments`) and `detokgui export` (`cli`)
share. Plain strings only: importing this loads nothing else (no torch, no Qt)."""

CORPUS_PATHS = ("corpus files (.txt, .jsonl, optionally .gz), folders, or 'sample' (the "
                "sample corpus shipped with detokgui)")
