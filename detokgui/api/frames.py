"""Results as pandas DataFrames: a `core.tables.Table` (header + rows, what the CLI writes
as CSV) becomes a DataFrame with the same columns, and its conventions go into
`DataFrame.attrs` (plain values: strings, numbers, lists, dicts), e.g.

    {"analysis": "topk", "model": "demo", "direction": "keys", "k": 10, "sigma": "mean",
     "sigma_label": "sigma = mean over positions", "heads": [0, ..., 7]}

"analysis" names the function that made it (`plots.plot` draws by it), "model" the
layer's name; the other keys are the function's arguments after parsing (a token given
as text is also given as its id) and the labels the CLI prints beside its CSV.
"""

from __future__ import annotations

import pandas as pd

from detokgui.api import accessor  # noqa: F401  (registers DataFrame.dg)
from detokgui.core.tables import Table


def frame(table: Table, analysis: str, layer, **conventions) -> pd.DataFrame:
    """The rows of `table` as a DataFrame with its header as columns, and `analysis`, the
    model's name and `conventions` in `attrs`."""
    header, rows = table
    df = pd.DataFrame.from_records(list(rows), columns=list(header))
    df.attrs.update({"analysis": analysis, "model": str(layer.name),
                     **{k: _plain(v) for k, v in conventions.items()}})
    return df


def _plain(value):
    """numpy scalars and tuples as Python values and lists (attrs stay printable and
    cheap to copy: pandas deep-copies them with every derived frame)."""
    if isinstance(value, dict):
        return {(_plain(k) if not isinstance(k, str) else k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        return value.item()
    return value
