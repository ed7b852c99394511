"""The public library API: `import detokgui as dg`.

    layer = dg.load("demo")                  # or "gpt2", a local folder
    df = dg.topk(layer, " Korea", k=10)      # a pandas DataFrame, the columns of `export topk`
    df.attrs                                 # its conventions: analysis, model, sigma, ...
    fig = dg.plot(df)                        # or df.dg.plot(): a matplotlib Figure

Every analysis is one function taking the layer first and returning a DataFrame whose
columns are those of the matching `detokgui export` CSV (built by the same table
functions of `detokgui.core`), with its conventions in `DataFrame.attrs`. Long passes
show a progress bar (`tqdm.auto`) and stop cleanly on Ctrl+C / a notebook interrupt.

The functions live in modules named after what they hold (`tokens`, `position`,
`corpus`, `text`, `circuits`, `compare`, `plots`, `series`, `sharing`); `detokgui`
re-exports them lazily, so that `import detokgui` loads neither torch, pandas nor Qt.
"""

from __future__ import annotations

import importlib

#: public name -> the module of detokgui.api that defines it
NAMES = {
    "load": "loading",
    "terms": "tokens", "sigma": "tokens", "topk": "tokens", "heatmap": "tokens",
    "neighbours": "tokens",
    "bias": "position", "neurons": "position", "pattern": "position",
    "head_classes": "position", "slopes": "position",
    "counts": "corpus", "stats": "corpus", "auroc": "corpus", "frequency": "corpus",
    "sentence": "text", "empirical": "text", "kl": "text", "sinks": "sinks",
    "composition": "composition", "behaviour": "composition",
    "neuron": "circuits", "ov": "circuits",
    "compare": "compare", "compare_metrics": "compare", "head_metrics": "compare",
    "plot": "plots", "figure": "plots",
    "series": "series",
    "save": "sharing", "provenance": "sharing", "open_session": "sharing",
}

#: the analyses, each returning a DataFrame
ANALYSES = ("terms", "sigma", "topk", "heatmap", "neighbours", "bias", "neurons", "pattern",
            "head_classes", "slopes", "counts", "stats", "auroc", "frequency", "sentence",
            "empirical", "kl", "sinks", "neuron", "ov", "compare", "compare_metrics",
            "head_metrics", "composition", "behaviour")

__all__ = [
    "ANALYSES", "NAMES", "auroc", "behaviour", "bias", "compare", "compare_metrics",
    "composition", "counts", "empirical",
    "figure", "frequency", "head_classes", "head_metrics", "heatmap", "kl", "load",
    "neighbours", "neuron", "neurons", "open_session", "ov", "pattern", "plot", "provenance",
    "resolve", "save", "sentence", "series", "sigma", "sinks", "slopes", "stats", "terms",
    "topk",
]


def resolve(name: str):
    """The public object `name` (imports its module on first use)."""
    module = importlib.import_module(f"detokgui.api.{NAMES[name]}")
    return getattr(module, name)


def __getattr__(name: str):
    if name in NAMES:
        return resolve(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(NAMES))
