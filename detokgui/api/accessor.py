"""`DataFrame.dg`: what detokgui adds to the DataFrames it returns.

    df.dg.conventions   # the analysis, model and conventions (a copy of df.attrs)
    df.dg.plot()        # its matplotlib Figure (`plots.plot`)
    df.dg               # in Jupyter: the conventions and the first rows (_repr_html_)

The results are `Result`s: DataFrames in every respect (every pandas operation works on
them and gives a Result again) whose Jupyter display shows the conventions above the
rows. The accessor only reads `attrs`, which pandas carries over to derived frames (a
filter, a sort), so `df[df["head"] == 7].dg.plot()` draws the rows kept under the same
conventions; a frame read back from a CSV is a plain DataFrame and has no conventions.
"""

from __future__ import annotations

import html

import pandas as pd

#: rows shown by the reprs
SHOWN_ROWS = 10


@pd.api.extensions.register_dataframe_accessor("dg")
class DetokAccessor:
    def __init__(self, df: pd.DataFrame):
        self._df = df

    @property
    def conventions(self) -> dict:
        """The analysis, the model and the conventions of this result (df.attrs)."""
        return dict(self._df.attrs)

    @property
    def analysis(self) -> str | None:
        return self._df.attrs.get("analysis")

    def plot(self, **kwargs):
        """The result's matplotlib Figure (see `detokgui.api.plots.plot`)."""
        from detokgui.api.plots import plot

        return plot(self._df, **kwargs)

    def _lines(self) -> list[tuple[str, str]]:
        return [(str(k), _shown(v, k)) for k, v in self._df.attrs.items()]

    def __repr__(self) -> str:
        lines = [f"{k}: {v}" for k, v in self._lines()]
        more = len(self._df) - SHOWN_ROWS
        rows = self._df.head(SHOWN_ROWS).to_string()
        tail = [f"... {more} more rows"] if more > 0 else []
        return "\n".join([*lines, f"{len(self._df)} rows", rows, *tail])

    def _repr_html_(self) -> str:
        """The conventions as a small table above the first rows (Jupyter's display)."""
        more = len(self._df) - SHOWN_ROWS
        tail = f"<p>… {more} more rows</p>" if more > 0 else ""
        rows = pd.DataFrame(self._df.head(SHOWN_ROWS)).to_html()
        return f"<div>{conventions_html(self._df)}{rows}{tail}</div>"


class Result(pd.DataFrame):
    """A detokgui result: a pandas DataFrame whose Jupyter display shows its conventions
    (`attrs`) above pandas' own table. Derived frames are Results too."""

    @property
    def _constructor(self):
        return Result

    def _repr_html_(self) -> str | None:
        table = super()._repr_html_()
        if table is None or not self.attrs:
            return table
        return f"<div>{conventions_html(self)}{table}</div>"


def conventions_html(df: pd.DataFrame) -> str:
    """The analysis, its row count and the conventions of `df.attrs` as a small table."""
    lines = [(str(k), _shown(v, k)) for k, v in df.attrs.items()]
    conv = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
                   f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
                   for k, v in lines)
    title = html.escape(str(df.attrs.get("analysis") or "result"))
    return f"<p><b>detokgui {title}</b>: {len(df)} rows</p><table>{conv}</table>"


def _shown(value, key: str = "") -> str:
    if key == "provenance" and isinstance(value, dict):
        model = value.get("model") or {}
        digest = model.get("layer0_sha256") or ""
        text = (f"detokgui {value.get('detokgui')}, {value.get('created')}"
                + (f", layer-0 SHA-256 {digest[:12]}…" if digest else "")
                + " (dg.save writes it into each file)")
        return text
    text = str(value)
    return text if len(text) <= 200 else text[:199] + "…"
