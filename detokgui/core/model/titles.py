"""How a model opened in the window is named: its title with the commit a hub revision
resolved to (`model_title`), a short name for a crowded line (`short_name`), the facts the
status bar keeps in view (`model_facts_text`) and the status bar's line for model A and
model B, loaded or being loaded (`model_status`); and how figures, footers and exported
files name it (`model_name`, `model_text`)."""

from __future__ import annotations

from pathlib import Path

from detokgui.core.model.conventions import temperature_label
from detokgui.core.model.families import with_family
from detokgui.core.model.sources.demo import DEMO_LABELS
from detokgui.core.model.sources.hub import short, split_revision


def short_commit(layer) -> str | None:
    """The commit a hub model resolved to, as people quote it (`sources.hub.short`), or
    None (a folder, a demo model, or a loader that does not say)."""
    return short(getattr(layer, "revision", None)) or None


def model_title(layer) -> str:
    """The model's name as typed (gpt2@step1000) and the commit it resolved to
    (`short_commit`), when it came from the hub."""
    commit = short_commit(layer)
    return f"{layer.name} (commit {commit})" if commit else layer.name


def short_name(name: str, most: int = 40) -> str:
    """A model's name for a crowded line: a folder's last part; at most `most` characters."""
    if Path(name).is_dir():  # not a hub name such as EleutherAI/gpt-neo-125m
        name = Path(name).name or name
    return name if len(name) <= most else name[: most - 1] + "…"


def model_facts_text(layer, load_seconds: float | None) -> str:
    """"CPU · V=50,257 · L=1,024 · 12 heads · d=768 · τ = √d′ = 8 · loaded in 2.1 s":
    what the status bar keeps in view whatever the window's width."""
    took = f" · loaded in {load_seconds:.1f} s" if load_seconds else ""
    return (f"{layer.device.type.upper()} · V={layer.n_vocab:,} · L={layer.n_positions:,} · "
            f"{layer.n_heads} heads · d={layer.d} · {temperature_label(layer, short=True)}"
            f"{took}")


def model_status(layer, layer_b, loading: str | None, loading_b: str | None,
                 matched: bool) -> tuple[str, str]:
    """(text, tooltip) of the status bar's model label: model A (`layer`, or "no model")
    with its architecture, or the one being `loading`; when comparing, A and B (`layer_b`,
    or the one being `loading_b`), whose heads are `matched` or not yet."""
    text = "no model" if layer is None else with_family(model_title(layer),
                                                          layer.family_label)
    revision = getattr(layer, "revision", None) if layer is not None else None
    note = f"Resolved commit {revision}" if revision else ""
    if layer is not None:
        facts = f"{layer.name}: {layer.summary}, d′={layer.d_head}"
        note = "\n".join(t for t in (facts, note) if t)
    if loading is not None:
        # short: the download's progress message beside it needs the room
        text = f"loading {DEMO_LABELS.get(loading, loading)}…"
        if layer is not None:
            note = f"Showing {model_title(layer)} until the new model is ready"
    b = layer_b
    if b is not None and layer is not None:
        # both names first, short: the details of each are in the tooltip
        matching = "" if matched else " (matching heads…)"
        note = "\n".join(part for part in (
            f"A: {text}", f"B: {b.name} | {b.summary} | V={b.n_vocab:,} L={b.n_positions}",
            note) if part)
        text = (f"A: {short_name(model_title(layer))} ({layer.n_heads} heads)  ‖  "
                f"B: {short_name(model_title(b))} ({b.n_heads} heads){matching}")
    elif loading_b is not None:
        text += f"  ‖  B: loading {short_name(DEMO_LABELS.get(loading_b, loading_b))}…"
    return text, note


def model_name(layer) -> str:
    """The model as figures name it: a folder's last part, a hub model without its owner;
    a hub model's commit appended ("tiny@step100, commit 1a2b3c4d5e")."""
    name = str(layer.name)
    commit = getattr(layer, "revision", None)
    if commit:
        repo, rev = split_revision(name)
        return f"{repo.rsplit('/', 1)[-1]}{'@' + rev if rev else ''}, commit {commit[:10]}"
    return Path(name).name if ("/" in name or "\\" in name) else name


def model_text(layer) -> str:
    """The model as footers and the index name it: "gpt2 (GPT-2, d=768, 12 heads,
    τ = √d′ = 8)" (`Layer0.summary`, `conventions.temperature_label`)."""
    return f"{model_name(layer)} ({layer.summary}, {temperature_label(layer)})"
