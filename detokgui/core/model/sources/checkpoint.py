"""Find a checkpoint of a supported family (local folder or Hugging Face hub name) and
read only the tensors layer 0 needs (which ones, and how they map onto the canonical
tensors: `detokgui.core.model.families`).

Safetensors files are read with plain file reads into freshly allocated tensors, one
tensor at a time, so peak memory is the size of what layer 0 needs, not of the file
(gpt2-xl's file is 6 GB; its layer 0 is about 0.4 GB). `.bin` checkpoints are pickles
and have to be loaded whole.
"""

from __future__ import annotations

import dataclasses
import json
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import torch

from detokgui.core.base.errors import ModelLoadError
from detokgui.core.model.families import ModelShape, read_config
from detokgui.core.model.families import get as get_family
from detokgui.core.model.sources import hub
from detokgui.core.model.sources.checkpoint_files import (
    load_bin,
    read_safetensors,
    read_safetensors_header,
)
from detokgui.core.model.sources.demo import demo_model_folder
from detokgui.core.model.sources.hub import did_you_mean, endpoint, offline_mode, recorded_commit


@dataclass(frozen=True)
class CheckpointFiles:
    folder: Path
    config: Path
    weights: tuple[Path, ...]
    weight_format: str  # "safetensors" or "bin"
    #: The hub commit (40 hex digits) the files are of; for a local folder, the one its
    #: `detokgui download` record names (`hub.recorded_commit`), else None.
    revision: str | None = None


# --------------------------------------------------------------------------- locating


def peek_config(name_or_path: str) -> ModelShape | None:
    """The config.json of a local checkpoint folder, or of a hub model already in the
    local cache, read without touching weights or the network; None when there is none.
    Raises ModelLoadError when the config exists but is unusable (as loading would)."""
    name = str(name_or_path).strip()
    if name == "demo":

        name = str(demo_model_folder())
    path = Path(name).expanduser()
    if path.is_dir():
        cfg = path / "config.json"
        return read_config(cfg, name) if cfg.is_file() else None
    if not name or path.exists() or _looks_like_path(name):
        return None

    repo, revision = hub.split_revision(name)
    mine = hub.cached(repo, revision)
    if mine is not None:
        return read_config(mine.folder / "config.json", name)
    try:
        from huggingface_hub import try_to_load_from_cache

        hit = try_to_load_from_cache(repo, "config.json", revision=revision)
    except (ImportError, ValueError, OSError):
        return None
    return read_config(Path(hit), name) if isinstance(hit, str) else None


def config_file(name_or_path: str) -> Path | None:
    """The config.json of a local checkpoint folder, or of a hub model (NAME@REVISION) in
    detokgui's cache or the Hugging Face cache, found without the network; None when there
    is none."""
    name = str(name_or_path).strip()
    path = Path(name).expanduser()
    if path.is_dir():
        return path / "config.json" if (path / "config.json").is_file() else None
    if not name or path.exists() or _looks_like_path(name):
        return None
    repo, revision = hub.split_revision(name)
    mine = hub.cached(repo, revision)
    if mine is not None:
        return mine.folder / "config.json"
    return _hf_cache_hit(repo, revision, "config.json")


def locate(name_or_path: str, *, progress=None) -> CheckpointFiles:
    """Resolve a local folder or hub name to the files of one checkpoint."""
    name = str(name_or_path).strip()
    if not name:
        raise ModelLoadError("No model given: name a Hugging Face model (e.g. gpt2) or a folder.")
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelLoadError(
                f"{name} is a file; give the folder that holds config.json and the weights."
            )

        return dataclasses.replace(_local_files(path, name), revision=recorded_commit(path))
    if _looks_like_path(name):
        raise ModelLoadError(f"There is no folder {name}.")
    return _hub_files(name, progress=progress)


def _hub_files(name: str, *, progress=None) -> CheckpointFiles:
    """A hub model `NAME` or `NAME@REVISION`: from the Hugging Face cache when it holds
    the model already (no network), else layer 0 only from detokgui's cache or the hub
    (`core.model.sources.hub`); offline, from whichever cache has it."""

    repo, revision = hub.split_revision(name)
    if not repo:
        raise ModelLoadError(f"{name!r} names no model before its @revision.")
    if revision == "":
        raise ModelLoadError(f"{name!r} has nothing after @: give a branch, tag or commit "
                             "(gpt2@main), or leave out the @.")
    found = _hf_cache_files(repo, revision, name)
    if found is not None:
        return found
    if hub.offline_mode() or not hub_reachable():
        mine = hub.cached(repo, revision)
        if mine is None:
            partial = (f"The cache holds {name}'s config but not its weights. "
                       if _hf_cache_hit(repo, revision, "config.json") else "")
            raise ModelLoadError(partial + _offline_hint(name))
        return dataclasses.replace(_local_files(mine.folder, name), revision=mine.commit)
    got = hub.fetch_layer0(repo, revision, progress, label=name)
    return dataclasses.replace(_local_files(got.folder, name), revision=got.commit)


def _looks_like_path(name: str) -> bool:
    """Hub names are `name` or `owner/name`; anything else is meant as a folder."""
    return name.startswith((".", "~", "/")) or name.count("/") > 1 or "\\" in name


def _local_files(folder: Path, name: str) -> CheckpointFiles:
    config = folder / "config.json"
    if not config.is_file():
        raise ModelLoadError(
            f"{name} has no config.json: it is not a Hugging Face checkpoint folder."
        )
    read_config(config, name)  # refuse other architectures before looking for weights
    single = folder / "model.safetensors"
    index = folder / "model.safetensors.index.json"
    binfile = folder / "pytorch_model.bin"
    if single.is_file():
        return CheckpointFiles(folder, config, (single,), "safetensors")
    if index.is_file():
        shards = _shards_for_layer0(index, read_config(config, name), name)
        missing = [s for s in shards if not (folder / s).is_file()]
        if missing:
            raise ModelLoadError(f"{name}: weight shard(s) missing: {', '.join(missing)}.")
        return CheckpointFiles(folder, config, tuple(folder / s for s in shards), "safetensors")
    if binfile.is_file():
        return CheckpointFiles(folder, config, (binfile,), "bin")
    raise ModelLoadError(
        f"{name} has no weights: expected model.safetensors, model.safetensors.index.json "
        "or pytorch_model.bin."
    )


def _shards_for_layer0(index: Path, shape: ModelShape, name: str,
                       block: int | None = None) -> list[str]:
    """The shards of a sharded checkpoint that hold layer-0 tensors (block `block`'s when
    given), from its index."""
    family = get_family(shape.family)
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        stored = (family.resolve(weight_map, shape, name) if block is None
                  else family.resolve_block(weight_map, shape, block, name))
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise ModelLoadError(f"{name}: {index.name} cannot be read ({exc}).") from exc
    except ModelLoadError as exc:
        raise ModelLoadError(f"{name}: {index.name} lists none of the layer-0 tensors.") from exc
    shards: list[str] = []
    for key in stored.values():
        shard = weight_map.get(key)
        if shard is not None and shard not in shards:
            shards.append(shard)
    return shards


def _offline_hint(name: str) -> str:
    """Why a hub model cannot be opened without the network, with the close names this
    machine knows (a typo such as 'gtp2' is the likeliest cause), and what to do. Setting
    HF_HUB_OFFLINE=1 (which skips the probe of the hub) is suggested only when it is not
    set already."""

    if offline_mode():
        why, connect, tail = "HF_HUB_OFFLINE is set", "Unset HF_HUB_OFFLINE and connect", ""
    else:
        why, connect = "the hub cannot be reached", "Connect"
        tail = " (HF_HUB_OFFLINE=1 makes this check instant.)"
    return (
        f"The model {name!r} is not in the local Hugging Face cache (nor in detokgui's) and "
        f"{why}.{did_you_mean(name)} {connect} once to download it (it is then cached), "
        "open a local checkpoint folder instead, or on a connected machine write its layer "
        f"0 with `detokgui download {name} --out FOLDER` and open that folder here.{tail}"
    )


def hub_reachable(timeout: float = 3.0) -> bool:
    """Quick TCP probe of the hub endpoint, so an offline machine fails in seconds, not
    after huggingface_hub's minute of retries."""

    url = urlparse(endpoint())
    host = url.hostname or "huggingface.co"
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _hf_cache_hit(repo: str, revision: str | None, filename: str) -> Path | None:
    """A file of the model in the Hugging Face cache (`hf_hub_download`'s), without the
    network; None when it is not there."""
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(repo, filename, revision=revision)
    except (ImportError, ValueError, OSError):
        return None
    return Path(found) if isinstance(found, str) else None


def _hf_cache_files(repo: str, revision: str | None, name: str) -> CheckpointFiles | None:
    """The model's files in the Hugging Face cache, found without the network; None when
    its config or weights are not there."""

    def hit(filename: str) -> Path | None:
        return _hf_cache_hit(repo, revision, filename)

    config = hit("config.json")
    if config is None:
        return None
    shape = read_config(config, name)
    folder = config.parent
    commit = folder.name if len(folder.name) == 40 else None
    single = hit("model.safetensors")
    if single is not None:
        return CheckpointFiles(folder, config, (single,), "safetensors", commit)
    index = hit("model.safetensors.index.json")
    if index is not None:
        paths = [hit(s) for s in _shards_for_layer0(index, shape, name)]
        if all(p is not None for p in paths):
            return CheckpointFiles(folder, config, tuple(paths), "safetensors", commit)
        return None
    binfile = hit("pytorch_model.bin")
    if binfile is not None:
        return CheckpointFiles(folder, config, (binfile,), "bin", commit)
    return None


# --------------------------------------------------------------------------- reading

def read_layer0_tensors(files: CheckpointFiles, shape: ModelShape,
                        name: str) -> dict[str, torch.Tensor]:
    """The canonical layer-0 tensors (`families.base`) of a checkpoint whose config.json
    gave `shape`: only the stored tensors the family needs are read."""
    family = get_family(shape.family)
    stored = read_stored(files.weights, files.weight_format,
                         lambda available: family.resolve(available, shape, name))
    return family.canonical(stored, shape, name)


def read_stored(weights: tuple[Path, ...], weight_format: str, select) -> dict[str, torch.Tensor]:
    """The stored tensors `select(names the files hold)` picks ({unprefixed name: stored
    name}), read from the weight files, keyed by the unprefixed names. Of safetensors
    files only those tensors' bytes are read; a `.bin` is loaded whole."""
    if weight_format != "safetensors":
        state = load_bin(weights[0], weights[0].name)
        names = select(set(state))
        return {k: state[v] for k, v in names.items() if v in state}
    headers = []
    for path in weights:
        try:
            size = path.stat().st_size
            with open(path, "rb") as f:
                headers.append(read_safetensors_header(f, path, size)[0])
        except OSError as exc:
            raise ModelLoadError(f"{path} cannot be read: {exc}") from exc
    names = select({k for h in headers for k in h})
    stored: dict[str, torch.Tensor] = {}
    for path, header in zip(weights, headers, strict=True):
        here = {k: v for k, v in names.items() if v in header and k not in stored}
        if here:
            stored.update(read_safetensors(path, here))
    return stored


# --------------------------------------------------------------------------- later blocks


def block_weights(source: str, shape: ModelShape, block: int, *, revision: str | None = None,
                  progress=None, label: str | None = None) -> tuple[tuple[Path, ...], str]:
    """(weight files, format) that hold layer 0's and block `block`'s stored tensors of
    the checkpoint `source` (a folder or a hub name, as `locate` takes it; `revision`: the
    hub commit the layer was loaded at), fetching block `block` from the hub when only
    layer 0 is on this machine (`hub.fetch_block`: only its byte ranges, with `progress`
    and Cancel as a layer-0 download). ModelLoadError when the checkpoint has no such
    block or it cannot be had."""
    label = label or str(source)
    if shape.n_layer is not None and block >= shape.n_layer:
        raise ModelLoadError(f"{label} has {shape.n_layer} layer"
                             f"{'s' if shape.n_layer != 1 else ''}: there is no layer {block} "
                             "to read.")
    path = Path(str(source)).expanduser()
    if path.is_dir():
        files = _local_files(path, label)
        weights = _with_block(files, shape, block, label)
        if weights is None:
            raise ModelLoadError(_layer0_only(path, label, block))
        return weights, files.weight_format
    repo, rev = hub.split_revision(str(source))
    rev = revision or rev
    found = _hf_cache_files(repo, rev, label)
    if found is not None:
        weights = _with_block(found, shape, block, label)
        if weights is not None:
            return weights, found.weight_format
    mine = hub.cached(repo, rev)
    if mine is None:
        if hub.offline_mode() or not hub_reachable():
            raise ModelLoadError(_offline_hint(label))
        mine = hub.fetch_layer0(repo, rev, progress, label=label)
    side = hub.fetch_block(mine, block, progress, label=label)
    return (mine.folder / "model.safetensors", side), "safetensors"


def _with_block(files: CheckpointFiles, shape: ModelShape, block: int,
                name: str) -> tuple[Path, ...] | None:
    """`files`' weights with those that hold block `block` (the shards the index names
    for it, the side file of a hub download); None when they are not all on this
    machine, or the folder holds layer 0 only."""
    if files.weight_format != "safetensors":
        return files.weights
    weights = list(files.weights)
    index = files.folder / "model.safetensors.index.json"
    if index.is_file():
        for shard in _shards_for_layer0(index, shape, name, block):
            path = files.folder / shard
            if not path.is_file():
                return None
            if path not in weights:
                weights.append(path)
        return tuple(weights)
    side = files.folder / hub.block_file(block)
    if side.is_file():
        return (*weights, side)
    if (files.folder / hub.MANIFEST).is_file() or (files.folder / hub.SOURCE_FILE).is_file():
        return None  # a layer-0 folder of detokgui's
    return tuple(weights)


def _layer0_only(folder: Path, name: str, block: int) -> str:
    repo = None
    try:
        repo = json.loads((folder / hub.SOURCE_FILE).read_text("utf-8")).get("repo")
    except (OSError, ValueError, AttributeError):
        pass
    where = (f" open the hub model {repo} on a machine with network (detokgui then fetches "
             f"block {block}'s bytes alone)" if repo else " open the whole checkpoint")
    return (f"{name} holds layer 0 only (a folder written by `detokgui download`): block "
            f"{block} is not in it. To see layer {block},{where}.")


def read_block_tensors(weights: tuple[Path, ...], weight_format: str, shape: ModelShape,
                       block: int, name: str) -> tuple[dict, dict]:
    """(canonical tensors of block `block`, `block_keys`; its stored tensors, unprefixed
    family names) read from `weights` (`block_weights`)."""
    family = get_family(shape.family)
    stored = read_stored(weights, weight_format,
                         lambda available: family.resolve_block(available, shape, block, name))
    return family.block_canonical(stored, shape, block, name), stored
