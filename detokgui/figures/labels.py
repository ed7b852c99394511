"""The words the figures share (the model's name and the footer's model text are
`core.model.titles.model_name` / `model_text`): its family and softmax temperature, the
heads and query positions shown, the footer's parts that say so (see `style.new_figure`),
the T_ee heatmaps' symbol."""

from __future__ import annotations

from detokgui.core.model.conventions import temperature_label
from detokgui.core.model.titles import model_text
from detokgui.figures.registry import FigureContext

POSITION_LABEL = "Past token position ($j$)"


def heads_text(hs) -> str:
    return ("head " if len(hs) == 1 else "heads ") + ", ".join(str(h) for h in hs)


def position_note(ctx: FigureContext, paper: list[int], used: list[int]) -> str:
    shown = ", ".join(str(i) for i in used)
    if used == paper:
        return f"i = {shown}"
    return (f"i = {shown} (the paper's {', '.join(str(i) for i in paper)} scaled to "
            f"{ctx.n_positions} positions)")


def tee_symbol(h: int, raw: bool) -> str:
    """The T_ee heatmaps' colour bar title for head h: T^ee_{i,j,h}, or e_i W^QK_h e_j^T
    without LayerNorm."""
    return (rf"$\mathbf{{e}}_i\mathbf{{W}}^{{QK}}_{{{h}}}\mathbf{{e}}_j^\top$" if raw
            else rf"$T^{{\mathrm{{ee}}}}_{{i,j,{h}}}$")


def with_temperature(ctx: FigureContext, convention: str) -> str:
    """A softmax figure's conventions (index.md) with the temperature this model uses."""
    return f"{convention}; {temperature_label(ctx.layer)}"


def footer(ctx: FigureContext, *parts) -> list[str]:
    """The footer's parts (see `style.new_figure`): the model (`model_text`), then what
    this figure shows."""
    return [model_text(ctx.layer), *parts]
