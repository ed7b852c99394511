"""The words the figures share: the model's name, family and softmax temperature, the
heads and query positions shown, the footer's parts that say so (see `style.new_figure`),
the T_ee heatmaps' symbol."""

from __future__ import annotations

from pathlib import Path

from detokgui.core.model.conventions import temperature_label
from detokgui.figures.registry import FigureContext

POSITION_LABEL = "Past token position ($j$)"


def model_name(layer) -> str:
    """The model as figures name it: a folder's last part, a hub model without its owner;
    a hub model's commit appended ("tiny@step100, commit 1a2b3c4d5e")."""
    name = str(layer.name)
    commit = getattr(layer, "revision", None)
    if commit:
        from detokgui.core.model.sources.hub import split_revision

        repo, rev = split_revision(name)
        return f"{repo.rsplit('/', 1)[-1]}{'@' + rev if rev else ''}, commit {commit[:10]}"
    return Path(name).name if ("/" in name or "\\" in name) else name


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


def model_text(layer) -> str:
    """The model as footers and the index name it: "gpt2 (GPT-2, d=768, 12 heads,
    τ = √d′ = 8)" (`Layer0.summary`, `conventions.temperature_label`)."""
    return f"{model_name(layer)} ({layer.summary}, {temperature_label(layer)})"


def with_temperature(ctx: FigureContext, convention: str) -> str:
    """A softmax figure's conventions (index.md) with the temperature this model uses."""
    return f"{convention}; {temperature_label(ctx.layer)}"


def footer(ctx: FigureContext, *parts) -> list[str]:
    """The footer's parts (see `style.new_figure`): the model (`model_text`), then what
    this figure shows."""
    return [model_text(ctx.layer), *parts]
