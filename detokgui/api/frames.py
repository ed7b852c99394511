"""Results as pandas DataFrames: a `core.base.tables.Table` (header + rows, what the CLI writes
as CSV) becomes a DataFrame with the same columns, and its conventions go into
`DataFrame.attrs` (plain values: strings, numbers, lists, dicts), e.g.

    {"analysis": "topk", "model": "demo", "direction": "keys", "k": 10, "sigma": "mean",
     "sigma_label": "sigma = mean over positions", "heads": [0, ..., 7]}

"analysis" names the function that made it (`plots.plot` draws by it), "model" the
layer's name; the other keys are the function's arguments after parsing (a token given
as text is also given as its id) and the labels the CLI prints beside its CSV.

An analysis is written once, as a function returning `Tabled` (the table and its
conventions), and decorated with `@analysis(name)`: calling it gives the DataFrame, and
its `.table(...)` (same arguments) gives the `Tabled` itself, which the command line
writes as CSV (`core.base.tables.write_csv`) without pandas.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

from detokgui.core.base.tables import Table


class Tabled(NamedTuple):
    table: Table
    conventions: dict


def tabled(table: Table, **conventions) -> Tabled:
    return Tabled(table, conventions)


def analysis(name: str) -> Callable:
    """Decorate `fn(layer, ...) -> Tabled`: the decorated function returns
    `frame(...)` of it; `.table` is `fn` itself."""

    def wrap(fn: Callable[..., Tabled]):
        @functools.wraps(fn)
        def as_frame(layer, *args, **kwargs):
            tabled = fn(layer, *args, **kwargs)
            return frame(tabled.table, name, layer, **tabled.conventions)

        as_frame.table = fn
        return as_frame

    return wrap


def frame(table: Table, analysis: str, layer, **conventions):
    """The rows of `table` as a DataFrame (an `accessor.Result`) with its header as
    columns, and `analysis`, the model's name (and hub commit, `revision`) and
    `conventions` in `attrs`; `attrs["provenance"]` is the result's provenance record
    (`provenance_of`), which `dg.save` writes into every file it saves."""
    from detokgui.api.accessor import Result  # (and registers DataFrame.dg)

    header, rows = table
    df = Result.from_records(list(rows), columns=list(header))
    df.attrs.update({"analysis": analysis, "model": str(layer.name),
                     **({"revision": layer.revision} if getattr(layer, "revision", None) else {}),
                     **{k: _plain(v) for k, v in conventions.items()}})
    df.attrs["provenance"] = provenance_of(analysis, layer, conventions)
    return df


def provenance_of(analysis: str, layer, conventions: dict) -> dict:
    """The provenance record (`core.model.provenance.provenance_record`) of a result of
    `analysis` on `layer` (a Layer0; anything else, such as a window's figure without a
    model, gives a record without one) with `conventions`; a "corpus" among them (its
    paths) is identified by `core.corpus.provenance.corpus_identity`."""
    from detokgui.core.corpus.provenance import corpus_identity
    from detokgui.core.model.provenance import provenance_record

    corpus = conventions.get("corpus")
    is_layer = hasattr(layer, "E") and hasattr(layer, "cached")
    return provenance_record(layer if is_layer else None, analysis=analysis,
                             conventions=conventions,
                             corpus=corpus_identity(corpus) if corpus else None)


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
