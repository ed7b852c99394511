"""`dg.load`: a model's layer 0, as the GUI and the command line load it."""

from __future__ import annotations

from detokgui.api.jobs import ProgressArg, load_progress


def load(model: str = "gpt2", device=None, *, progress: ProgressArg = True):
    """The layer 0 of `model` (`detokgui.core.Layer0`, `Layer0.from_pretrained`): a hub
    name ("gpt2", "distilgpt2", ...; "NAME@REVISION" for a branch, tag or commit, whose
    resolved commit is `layer.revision`; only layer 0's bytes are downloaded), a local folder of a GPT-2, GPT-Neo or OPT
    checkpoint, "demo" (the trained demo model shipped with detokgui) or "random-demo".

    device: "cpu", "cuda" or a torch.device; None = CUDA when available, else CPU.
    progress: a tqdm.auto bar while it loads (True), none (False), or a function called
    with each `core.base.progress.Progress`. Raises `detokgui.core.ModelLoadError` with a
    one-line message when the model cannot be loaded."""
    from detokgui.core import Layer0

    report, close = load_progress(progress, f"loading {model}")
    try:
        return Layer0.from_pretrained(str(model), device=device, progress=report)
    finally:
        close()
