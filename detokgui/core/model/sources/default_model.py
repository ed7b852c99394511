"""The default model (gpt2) and whether it can be opened: in the local Hugging Face cache,
or downloadable now. The window's first start and the CLI's default `--model` ask here
before they try to load it, so that a machine without gpt2 and without the hub learns so
in seconds (the shipped demo model is opened instead, or the CLI names `--model demo`)
rather than after huggingface_hub's minute of retries."""

from __future__ import annotations

from dataclasses import dataclass

from detokgui.core.base.errors import ModelLoadError
from detokgui.core.model.sources.hub import endpoint as hub_endpoint
from detokgui.core.model.sources.hub import offline_mode

DEFAULT_MODEL = "gpt2"

#: What the hub probe found: switched off by HF_HUB_OFFLINE, answering, or not answering;
#: or nothing (the probe was cancelled).
OFFLINE, REACHABLE, UNREACHABLE, NOT_PROBED = "offline", "reachable", "unreachable", "unknown"


def _checkpoint():
    """`core.model.sources.checkpoint`, imported on first use."""
    from detokgui.core.model.sources import checkpoint  # torch: the CLI's parser imports this

    return checkpoint


def cached_locally(name: str = DEFAULT_MODEL) -> bool:
    """The hub model `name`'s config.json is in the local Hugging Face cache (read from
    disk, no network). A config that is there but unusable counts as cached: loading
    then says what is wrong with it."""
    try:
        return _checkpoint().peek_config(name) is not None
    except ModelLoadError:
        return True


def probe_hub(timeout: float = 3.0) -> str:
    """OFFLINE, REACHABLE or UNREACHABLE: a TCP probe of the hub endpoint (at most
    `timeout` seconds; none at all in offline mode). Blocks: run it off the GUI thread."""
    if offline_mode():
        return OFFLINE
    return REACHABLE if _checkpoint().hub_reachable(timeout) else UNREACHABLE


@dataclass(frozen=True)
class Unavailable:
    """Why the default model was not opened: `reason` is one sentence for a person;
    `hub` is the probe's answer (None while the probe runs)."""

    name: str
    reason: str
    hub: str | None = None

    @property
    def downloadable(self) -> bool:
        return self.hub == REACHABLE

    def probed(self, hub: str) -> Unavailable:
        """The same, once the hub probe answered `hub` (a reason that said nothing of the
        hub now says what was found)."""
        unprobed = self.reason == why_not_cached(self.name, None)
        return Unavailable(self.name, why_not_cached(self.name, hub) if unprobed
                           else self.reason, hub)

    def what_to_do(self) -> str:
        """What a person can do instead (the first start's banner); without network, a
        machine with network writes the model's layer 0 into a folder (`detokgui
        download`), which opens here."""
        todo = {None: "(Checking whether the hub answers…)",
                OFFLINE: "Unset HF_HUB_OFFLINE to download it, or open a local checkpoint "
                         "folder.",
                REACHABLE: "Download it with the button below, or open a local checkpoint "
                           "folder.",
                }.get(self.hub, "Connect to the internet to download it, or open a local "
                                "checkpoint folder.")
        if self.hub in (None, REACHABLE):
            return todo
        return (f"{todo} Without network here: run `detokgui download {self.name} --out "
                "FOLDER` on a machine with network, copy FOLDER here and open it (Open "
                "folder…).")


def why_not_cached(name: str, hub: str | None) -> str:
    """One sentence: `name` is not in the local cache, and what the hub probe found."""
    if hub == OFFLINE:
        return f"{name} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set."
    if hub == UNREACHABLE:
        return (f"{name} is not in the local Hugging Face cache and the hub "
                f"({hub_endpoint()}) cannot be reached.")
    if hub == REACHABLE:
        return f"{name} has not been downloaded yet."
    return f"{name} is not in the local Hugging Face cache."


def cli_default_problem(name: str = DEFAULT_MODEL, timeout: float = 3.0) -> str | None:
    """For the CLI's default --model: None when `name` is cached or the hub answers, else
    one line naming the alternatives (`--model demo`, `--model FOLDER`). Takes at most
    `timeout` seconds (the hub probe), never huggingface_hub's retries."""
    if cached_locally(name):
        return None
    hub = probe_hub(timeout)
    if hub == REACHABLE:
        return None
    return (f"{why_not_cached(name, hub)} Use --model demo (the small trained demo model "
            f"shipped with detokgui, not GPT-2) or --model FOLDER (a local checkpoint).")
