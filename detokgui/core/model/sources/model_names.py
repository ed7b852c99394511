"""Model names known on this machine without the network, and the close ones to a name
that could not be opened ("did you mean 'gpt2'?").

A mistyped hub name (`gtp2`) cannot be told from an uncached one without asking the
hub, and an offline machine cannot ask; the names this machine knows can still be
compared with it: the models in the Hugging Face cache and in detokgui's layer-0 cache,
the demo models, and the well-known names of the families detokgui reads."""

from __future__ import annotations

import difflib
from pathlib import Path

from detokgui.core.model.sources.demo import DEMO_NAMES

#: Hub names of the supported families that people commonly open (docs/families.md).
WELL_KNOWN_MODELS = (
    "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "distilgpt2",
    "EleutherAI/gpt-neo-125m", "EleutherAI/gpt-neo-1.3B", "EleutherAI/gpt-neo-2.7B",
    "facebook/opt-125m", "facebook/opt-1.3b", "facebook/opt-2.7b", "facebook/opt-6.7b",
    "facebook/opt-13b", "facebook/opt-30b", "facebook/opt-66b",
    "microsoft/DialoGPT-small", "microsoft/DialoGPT-medium", "microsoft/DialoGPT-large",
    "cerebras/Cerebras-GPT-111M", "rinna/japanese-gpt-1b",
)

#: How alike (difflib's ratio, 0..1) a known name must be to be suggested.
CLOSE_ENOUGH = 0.6
#: Suggested besides the closest: names at most this much less alike than it.
NEAR_BEST = 0.05


def hf_cache_models() -> list[str]:
    """The model repositories in the Hugging Face cache (its `models--owner--name`
    folders), read from the folder names alone; [] when there is no cache."""
    try:
        from huggingface_hub import constants

        root = Path(constants.HF_HUB_CACHE)
        folders = [p.name for p in root.iterdir() if p.name.startswith("models--")]
    except (ImportError, OSError):
        return []
    return [f[len("models--"):].replace("--", "/") for f in sorted(folders)]


def known_models(also=()) -> list[str]:
    """Every model name this machine knows without the network, each once: the demo
    models, the Hugging Face cache's models, `also` (detokgui's own cache of hub models:
    `core.model.sources.hub.did_you_mean` passes them) and WELL_KNOWN_MODELS."""

    names = [*DEMO_NAMES, *hf_cache_models(), *also, *WELL_KNOWN_MODELS]
    return list(dict.fromkeys(names))


def close_model_names(name: str, n: int = 3, also=()) -> list[str]:
    """The known names (`known_models`) most like `name`, best first, compared without
    case and also by the part after the owner: a name that equals a known one but for
    case or owner ('GPT2', 'gpt-neo-125m') gives that one alone; otherwise those whose
    difflib ratio is at least CLOSE_ENOUGH and within NEAR_BEST of the best, at most
    `n`. A revision (NAME@REV) is kept on each suggestion. [] when none is close or
    `name` is itself known. `also`: more known names (`known_models`)."""
    base, sep, revision = name.strip().rpartition("@")  # as core.model.sources.hub.split_revision
    repo = base.strip() if sep and base else name.strip()
    revision = revision.strip() if sep and base else None
    if not repo:
        return []
    by_key: dict[str, list[str]] = {}
    for known in known_models(also):
        for key in {known.lower(), known.rsplit("/", 1)[-1].lower()}:
            by_key.setdefault(key, []).append(known)
    typed = repo.lower()
    if repo in by_key.get(typed, ()):
        return []
    if typed in by_key:
        found = by_key[typed]
    else:
        scored = sorted(((difflib.SequenceMatcher(None, typed, key).ratio(), key)
                         for key in by_key), reverse=True)
        best = scored[0][0] if scored else 0.0
        found = [m for score, key in scored
                 if score >= max(CLOSE_ENOUGH, best - NEAR_BEST) for m in by_key[key]]
    at = f"@{revision}" if revision else ""
    return [f"{m}{at}" for m in dict.fromkeys(found) if m != repo][:n]


def did_you_mean(name: str, also=()) -> str:
    """" Did you mean 'gpt2'?" (or 'a' or 'b'), with the leading space; "" when no known
    name is close to `name` (`close_model_names`)."""
    close = close_model_names(name, also=also)
    if not close:
        return ""
    return " Did you mean " + " or ".join(repr(m) for m in close) + "?"
