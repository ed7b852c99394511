"""The provenance record of a view's export (`core.model.provenance`): what the window
shows, as a record every file exported from a plot carries (PNG text chunk, SVG
<metadata>, PDF information, CSV sidecar; `PlotFrame.export`).

It holds the model (and model B while comparing), the view and plot, the conventions the
drawn result states, the panel's options (its options dataclass), the shared selection
(head, tokens, query position, token set, token sigma), the corpus's identity and the
session file the window was opened from or saved to."""

from __future__ import annotations

from dataclasses import asdict, is_dataclass

from detokgui.core.corpus.provenance import corpus_identity
from detokgui.core.model.provenance import provenance_record
from detokgui.gui.view_figures import panel_of


def selection(state) -> dict:
    """The shared selection of `state` (AppState) as plain values."""
    return {
        "head": state.head, "query_token": state.query_token, "key_token": state.key_token,
        "query_position": state.query_position, "token_set": list(state.token_set),
        "sigma": state.sigma.label(),
    }


def panel_options(panel) -> dict:
    """A panel's options dataclass as a dict ({} for a panel without one)."""
    value = getattr(getattr(panel, "options", None), "value", None)
    return asdict(value) if is_dataclass(value) else {}


def panel_record(panel, analysis: str | None, **extra) -> dict:
    """The provenance record of what `panel` shows now (GUI thread); `analysis` names the
    table or figure exported, `extra` adds top-level entries (e.g. the plot's name)."""
    state = panel.state
    options = {**panel_options(panel), "selection": selection(state)}
    return provenance_record(
        panel.layer, analysis=analysis, view=panel.title, **extra,
        conventions={"labels": panel.result_conventions()}, options=options,
        corpus=corpus_identity(state.corpus) if state.corpus else None,
        layer_b=state.layer_b, session=state.session_path)


def view_record(frame) -> dict:
    """The provenance record of what `frame` (a PlotFrame) shows now (GUI thread)."""
    panel = panel_of(frame)
    if panel is None:
        return provenance_record(None, analysis=frame.analysis, plot=frame.name)
    return panel_record(panel, frame.analysis, plot=frame.name)
