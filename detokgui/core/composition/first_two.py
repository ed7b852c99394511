"""What the Layer 1 page shows of a model's first two layers, in one job: the Q-, K- and
V-composition of its heads from the weights and their measured previous-token and
induction scores (`Layer1Result`), or why there is no layer 1 to show (`Unavailable`)."""

from __future__ import annotations

from dataclasses import dataclass

from detokgui.core.base.errors import InputError
from detokgui.core.base.progress import Job, rescaled
from detokgui.core.composition.behaviour import Behaviour, behaviour_job
from detokgui.core.composition.scores import Composition, composition_job
from detokgui.core.model.layer1 import n_layers


@dataclass
class Layer1Result:
    composition: Composition
    behaviour: Behaviour


@dataclass
class Unavailable:
    """Why there is no layer 1 to show (a single-layer model, a layer built from tensors,
    a tokenizer without a BOS token for the sequences)."""

    message: str


def first_two_job(layer, sequences: int, prepend_bos: bool) -> Job[Layer1Result | Unavailable]:
    """`composition_job` (the first half of the progress), then `behaviour_job` on
    `sequences` repeated random sequences (seed 0, default length); an InputError of
    either, or a single-layer model, gives `Unavailable` with its message."""
    n = n_layers(layer)
    if n is not None and n < 2:
        return Unavailable(f"{layer.name} has a single layer: there is no layer 1 to "
                           "compose with layer 0.")
    try:
        comp = yield from rescaled(composition_job(layer), 0.0, 0.5)
        beh = yield from rescaled(behaviour_job(layer, sequences, None, 0, prepend_bos),
                                  0.5, 1.0)
    except InputError as exc:
        return Unavailable(str(exc))
    return Layer1Result(comp, beh)
