"""detokgui: the first attention layer of GPT-2, GPT-Neo and OPT models, from the weights alone.

The library API (`detokgui.api`) is reached from here, loaded on first use so that
`import detokgui` stays light (no torch, pandas or Qt):

    import detokgui as dg
    layer = dg.load("demo")
    dg.topk(layer, " Korea", k=10)   # a pandas DataFrame with the columns of `export topk`
"""

import importlib

__version__ = "0.1.0"


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    api = importlib.import_module("detokgui.api")  # not `from detokgui import api`: that
    # asks this function for "api" first
    if name in api.NAMES:
        value = api.resolve(name)
        globals()[name] = value  # later look-ups skip this function
        return value
    if name == "Layer0":
        from detokgui.core import Layer0

        return Layer0
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    api = importlib.import_module("detokgui.api")
    return sorted(set(globals()) | set(api.NAMES) | {"Layer0"})
