"""Figures rendered without a window (for `detokgui export ... --out x.png|svg`): the same
plot classes the panels use, drawn offscreen."""

from __future__ import annotations

import os
from pathlib import Path

_NOISE = ("propagateSizeHints",)


def quiet_qt_messages() -> None:
    """Drop the offscreen platform's harmless warnings; pass everything else on."""
    import sys

    from PySide6.QtCore import qInstallMessageHandler

    def handler(mode, context, message):
        if not any(n in message for n in _NOISE):
            print(message, file=sys.stderr)

    qInstallMessageHandler(handler)


def offscreen_app():
    """A QApplication for headless rendering (offscreen unless a display is present)."""
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    quiet_qt_messages()
    return QApplication.instance() or QApplication(["detokgui"])


def heatmap_figure(layer, values, token_ids, head: int, sigma, out: str | Path,
                   size=(900, 800)) -> None:
    """Save one head's T_ee heatmap for `token_ids` as PNG or SVG."""
    app = offscreen_app()
    from detokgui.core.tokens import display_token
    from detokgui.gui.plots import Heatmap, PlotFrame

    labels = [display_token(layer.tokenizer, t) for t in token_ids]
    frame = PlotFrame(f"T_ee head {head}")
    model = Path(layer.name).name or layer.name
    if sigma.convention == "none":
        title, bar = f"{model}: raw e W^QK e^T, head {head} (without LayerNorm, Fig 12)", \
            "raw e W^QK e^T"
    else:
        title, bar = f"{model}: T_ee, head {head} (Fig 2-B) — {sigma.label()}", "T_ee"
    hm = Heatmap(title=title)
    hm.set_colorbar_label(bar)
    hm.setLabel("left", "query")
    hm.setLabel("bottom", "key")
    frame.view.addItem(hm, row=0, col=0)
    hm.set_matrix(values, labels, labels)
    hm.attach_colorbar(frame.view.ci, 0, 1)
    frame.resize(*size)
    frame.show() if os.environ.get("QT_QPA_PLATFORM") == "offscreen" else None
    app.processEvents()
    try:
        frame.export(out)
    finally:
        # Delete the Qt objects now: left to interpreter shutdown they crash PySide6.
        import shiboken6

        frame.close()
        shiboken6.delete(frame)
        app.processEvents()
