"""Find a GPT-2-family checkpoint (local folder or Hugging Face hub name) and read only
the tensors layer 0 needs.

Safetensors files are read with plain file reads into freshly allocated tensors, one
tensor at a time, so peak memory is the size of what layer 0 needs, not of the file
(gpt2-xl's file is 6 GB; its layer 0 is about 0.4 GB). `.bin` checkpoints are pickles
and have to be loaded whole.
"""

from __future__ import annotations

import json
import math
import os
import socket
import struct
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import torch

from detokgui.core.errors import ModelLoadError

#: Tensors layer 0 needs, without the optional `transformer.` prefix.
LAYER0_KEYS = (
    "wte.weight",
    "wpe.weight",
    "h.0.ln_1.weight",
    "h.0.ln_1.bias",
    "h.0.attn.c_attn.weight",
    "h.0.attn.c_attn.bias",
    "h.0.attn.c_proj.weight",
    "h.0.attn.c_proj.bias",
    "h.0.ln_2.weight",
    "h.0.ln_2.bias",
    "h.0.mlp.c_fc.weight",
    "h.0.mlp.c_fc.bias",
    "h.0.mlp.c_proj.weight",
    "h.0.mlp.c_proj.bias",
)

#: Read when present (the final LayerNorm, for views that go through the unembedding);
#: a checkpoint without them still loads.
OPTIONAL_KEYS = ("ln_f.weight", "ln_f.bias")

_PREFIXES = ("transformer.", "", "model.transformer.")

TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.json",
    "merges.txt",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
)

_ROTARY = {
    "llama", "mistral", "mixtral", "gpt_neox", "gptj", "qwen2", "qwen2_moe", "qwen3",
    "phi", "phi3", "gemma", "gemma2", "gemma3", "stablelm", "olmo", "olmo2", "starcoder2",
    "cohere", "persimmon", "codegen", "falcon", "deepseek_v2", "deepseek_v3", "granite",
    "internlm2", "smollm3",
}
_ALIBI = {"bloom", "mpt"}
_NO_QK_BIAS = {"gpt_neo"}


@dataclass(frozen=True)
class GPT2Shape:
    """What layer 0 needs from config.json."""

    vocab_size: int
    n_positions: int
    n_embd: int
    n_head: int
    n_inner: int
    layer_norm_epsilon: float
    scale_attn_weights: bool
    activation_function: str


@dataclass(frozen=True)
class CheckpointFiles:
    folder: Path
    config: Path
    weights: tuple[Path, ...]
    weight_format: str  # "safetensors" or "bin"


# --------------------------------------------------------------------------- config


def read_config(path: Path, name: str) -> GPT2Shape:
    """Parse config.json and refuse architectures the analysis does not apply to."""
    try:
        cfg = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelLoadError(f"{name}: config.json cannot be read ({exc}).") from exc
    if not isinstance(cfg, dict):
        raise ModelLoadError(f"{name}: config.json does not hold a configuration object.")
    check_architecture(cfg, name)
    try:
        pos_field = "n_ctx" if "n_positions" not in cfg and "n_ctx" in cfg else "n_positions"
        d = _config_value(cfg, "n_embd", int, name)
        h = _config_value(cfg, "n_head", int, name)
        inner = _config_value(cfg, "n_inner", int, name, None)
        shape = GPT2Shape(
            vocab_size=_config_value(cfg, "vocab_size", int, name),
            n_positions=_config_value(cfg, pos_field, int, name),
            n_embd=d,
            n_head=h,
            n_inner=inner or 4 * d,
            layer_norm_epsilon=_config_value(cfg, "layer_norm_epsilon", float, name, 1e-5),
            scale_attn_weights=_config_value(cfg, "scale_attn_weights", bool, name, True),
            activation_function=_config_value(cfg, "activation_function", str, name,
                                              "gelu_new"),
        )
        _config_value(cfg, "n_layer", int, name, None)  # the tokenizer's loader checks it too
    except KeyError as exc:
        raise ModelLoadError(
            f"{name}: config.json lacks the GPT-2 field {exc}; "
            "expected n_embd, n_head, n_positions and vocab_size."
        ) from exc
    for field in ("vocab_size", "n_positions", "n_embd", "n_head", "n_inner"):
        if getattr(shape, field) < 1:
            raise ModelLoadError(
                f"{name}: config.json has {field}={getattr(shape, field)}; it must be at least 1."
            )
    if not (math.isfinite(shape.layer_norm_epsilon) and shape.layer_norm_epsilon > 0):
        raise ModelLoadError(
            f"{name}: config.json has layer_norm_epsilon={shape.layer_norm_epsilon}; "
            "it must be a positive number."
        )
    if d % h:
        raise ModelLoadError(f"{name}: n_embd={d} is not divisible by n_head={h}.")
    return shape


_JSON_KINDS = ((bool, "true or false"), (int, "a whole number"), (float, "a decimal number"),
               (str, "a string"), (list, "a list"), (dict, "an object"), (type(None), "null"))
_MISSING = object()


def _config_value(cfg: dict, field: str, kind: type, name: str, default=_MISSING):
    """config.json's `field` when its JSON type is `kind` (int: a whole number, not 768.0,
    "768" or true; float: any number; null only where there is a default), else
    ModelLoadError naming the field; `default` when the field is absent (KeyError when
    there is none)."""
    if field not in cfg or (cfg[field] is None and default is not _MISSING):
        if default is _MISSING:
            raise KeyError(field)
        return default
    value = cfg[field]
    ok = (isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
          or kind is float and isinstance(value, int) and not isinstance(value, bool))
    if not ok:
        got = next(k for t, k in _JSON_KINDS if isinstance(value, t))
        want = "a number" if kind is float else dict(_JSON_KINDS)[kind]
        raise ModelLoadError(f"{name}: config.json has {field}={json.dumps(value)}; it must "
                             f"be {want}, not {got}.")
    return float(value) if kind is float else value


def check_architecture(cfg: dict, name: str) -> None:
    """Raise ModelLoadError unless `cfg` describes a GPT-2-architecture model."""
    model_type = str(cfg.get("model_type", "")).lower()
    if model_type == "gpt2":
        pos = cfg.get("position_embedding_type", "absolute")
        if pos not in (None, "absolute"):
            raise ModelLoadError(
                f"{name} uses position_embedding_type={pos!r}; detokgui needs learned "
                "absolute position embeddings (wpe)."
            )
        return
    if model_type in _ROTARY or cfg.get("rope_theta") or cfg.get("rotary_dim") or cfg.get(
        "rotary_pct"
    ):
        raise ModelLoadError(
            f"{name} is a {model_type or 'rotary'} model: it encodes position by rotating "
            "queries and keys (rotary embeddings), so there is no learned position embedding "
            "P and the position terms T_pp, T_pe, T_ep and T_p do not exist. detokgui "
            "analyses GPT-2-architecture models (gpt2, gpt2-medium/large/xl, distilgpt2 and "
            "their fine-tunes)."
        )
    if model_type in _ALIBI or cfg.get("alibi"):
        raise ModelLoadError(
            f"{name} is a {model_type or 'ALiBi'} model: it biases attention by distance "
            "(ALiBi) instead of adding a learned position embedding, so the position terms "
            "do not exist. detokgui analyses GPT-2-architecture models."
        )
    if model_type in _NO_QK_BIAS:
        raise ModelLoadError(
            f"{name} is a {model_type} model: its attention has no query/key biases, so the "
            "self-assertion terms T_e and T_p are not defined and its scores are not scaled "
            "the GPT-2 way. detokgui analyses GPT-2-architecture models."
        )
    raise ModelLoadError(
        f"{name} is not a GPT-2-architecture model (model_type={model_type or 'missing'!r}). "
        "detokgui analyses gpt2, gpt2-medium/large/xl, distilgpt2 and their fine-tunes."
    )


# --------------------------------------------------------------------------- locating


def peek_config(name_or_path: str) -> GPT2Shape | None:
    """The config.json of a local checkpoint folder, or of a hub model already in the
    local cache, read without touching weights or the network; None when there is none.
    Raises ModelLoadError when the config exists but is unusable (as loading would)."""
    name = str(name_or_path).strip()
    if name == "demo":
        from detokgui.core.demo import demo_model_folder

        name = str(demo_model_folder())
    path = Path(name).expanduser()
    if path.is_dir():
        cfg = path / "config.json"
        return read_config(cfg, name) if cfg.is_file() else None
    if not name or path.exists() or _looks_like_path(name):
        return None
    try:
        from huggingface_hub import try_to_load_from_cache

        hit = try_to_load_from_cache(name, "config.json")
    except (ImportError, ValueError, OSError):
        return None
    return read_config(Path(hit), name) if isinstance(hit, str) else None


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
        return _local_files(path, name)
    if _looks_like_path(name):
        raise ModelLoadError(f"There is no folder {name}.")
    return _hub_files(name, progress=progress)


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
        shards = _shards_for_layer0(index, name)
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


def _shards_for_layer0(index: Path, name: str) -> list[str]:
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise ModelLoadError(f"{name}: {index.name} cannot be read ({exc}).") from exc
    shards: list[str] = []
    for key in LAYER0_KEYS + OPTIONAL_KEYS:
        for prefix in _PREFIXES:
            shard = weight_map.get(prefix + key)
            if shard is not None:
                if shard not in shards:
                    shards.append(shard)
                break
    if not shards:
        raise ModelLoadError(f"{name}: {index.name} lists none of the GPT-2 layer-0 tensors.")
    return shards


def _offline_hint(name: str) -> str:
    return (
        f"The model {name!r} is not in the local Hugging Face cache and the hub cannot be "
        "reached. Connect once to download it (it is then cached), open a local checkpoint "
        "folder instead, or copy the model into the cache from a connected machine. "
        "(HF_HUB_OFFLINE=1 makes this check instant.)"
    )


def hub_reachable(timeout: float = 3.0) -> bool:
    """Quick TCP probe of the hub endpoint, so an offline machine fails in seconds, not
    after huggingface_hub's minute of retries."""
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    url = urlparse(endpoint)
    host = url.hostname or "huggingface.co"
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _offline_mode() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def _hub_files(name: str, *, progress=None) -> CheckpointFiles:
    from huggingface_hub import errors as hf_errors
    from huggingface_hub import hf_hub_download

    def fetch(filename: str, local_only: bool) -> Path | None:
        try:
            return Path(hf_hub_download(name, filename, local_files_only=local_only))
        except hf_errors.RepositoryNotFoundError as exc:
            raise ModelLoadError(
                f"There is no model named {name!r} on the Hugging Face hub (or it is private)."
            ) from exc
        except hf_errors.GatedRepoError as exc:
            raise ModelLoadError(
                f"{name} is gated on the hub: accept its terms and log in (hf auth login)."
            ) from exc
        except (hf_errors.EntryNotFoundError, hf_errors.LocalEntryNotFoundError, OSError):
            return None
        except hf_errors.HfHubHTTPError as exc:
            raise ModelLoadError(f"The hub refused {name!r}: {exc}") from exc
        except ValueError as exc:  # malformed repo id
            raise ModelLoadError(
                f"{name!r} is neither an existing folder nor a valid hub model name."
            ) from exc

    config = fetch("config.json", True)
    local_only = config is not None
    if config is None:
        if _offline_mode() or not hub_reachable():
            raise ModelLoadError(_offline_hint(name))
        if progress:
            progress(0.05, f"Downloading {name} config")
        config = fetch("config.json", False)
        if config is None:
            raise ModelLoadError(f"{name} on the hub has no config.json.")
    read_config(config, name)  # refuse other architectures before downloading weights

    folder = config.parent
    for fname in TOKENIZER_FILES:
        fetch(fname, local_only)

    def get(filename: str) -> Path | None:
        found = fetch(filename, True)
        if found is None and not local_only:
            if progress:
                progress(0.1, f"Downloading {name}/{filename}")
            found = fetch(filename, False)
        return found

    single = get("model.safetensors")
    if single is not None:
        return CheckpointFiles(folder, config, (single,), "safetensors")
    index = get("model.safetensors.index.json")
    if index is not None:
        shards = _shards_for_layer0(index, name)
        paths = [get(s) for s in shards]
        if any(p is None for p in paths):
            raise ModelLoadError(
                _offline_hint(name) if local_only else f"{name}: a weight shard is missing."
            )
        return CheckpointFiles(folder, config, tuple(paths), "safetensors")
    binfile = get("pytorch_model.bin")
    if binfile is not None:
        return CheckpointFiles(folder, config, (binfile,), "bin")
    if local_only:
        raise ModelLoadError(
            f"The cache holds {name}'s config but not its weights. " + _offline_hint(name)
        )
    raise ModelLoadError(f"{name} on the hub has no PyTorch weights (safetensors or .bin).")


# --------------------------------------------------------------------------- reading

_ST_DTYPES = {
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "F64": torch.float64,
}


def _read_safetensors_header(f, path: Path, size: int) -> tuple[dict, int]:
    raw = f.read(8)
    if len(raw) != 8:
        raise ModelLoadError(f"{path.name} is corrupt: shorter than a safetensors header.")
    (n,) = struct.unpack("<Q", raw)
    if n <= 1 or 8 + n > size:
        raise ModelLoadError(
            f"{path.name} is corrupt or truncated: its header claims {n} bytes in a "
            f"{size}-byte file."
        )
    try:
        header = json.loads(f.read(n).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelLoadError(f"{path.name} is corrupt: its header is not valid JSON.") from exc
    if not isinstance(header, dict):
        raise ModelLoadError(f"{path.name} is corrupt: its header is not a table of tensors.")
    return header, 8 + n


def read_safetensors(path: Path, wanted: dict[str, str]) -> dict[str, torch.Tensor]:
    """Read the tensors named by the values of `wanted` (stored name) into new tensors,
    keyed by `wanted`'s keys. Only those bytes are read."""
    out: dict[str, torch.Tensor] = {}
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            header, data_start = _read_safetensors_header(f, path, size)
            for key, stored in wanted.items():
                info = header.get(stored)
                if info is None:
                    continue
                try:
                    dtype = _ST_DTYPES[info["dtype"]]
                    shape = [int(s) for s in info["shape"]]
                    begin, end = (int(o) for o in info["data_offsets"])
                except (KeyError, TypeError, ValueError) as exc:
                    raise ModelLoadError(
                        f"{path.name} is corrupt or uses an unsupported dtype for {stored}."
                    ) from exc
                nbytes = math.prod(shape) * torch.tensor([], dtype=dtype).element_size()
                if end - begin != nbytes or data_start + end > size or begin < 0:
                    raise ModelLoadError(
                        f"{path.name} is corrupt or truncated at tensor {stored}."
                    )
                t = torch.empty(shape, dtype=dtype)
                f.seek(data_start + begin)
                buf = memoryview(t.view(-1).view(torch.uint8).numpy())
                if f.readinto(buf) != nbytes:
                    raise ModelLoadError(f"{path.name} is truncated at tensor {stored}.")
                out[key] = t
    except OSError as exc:
        raise ModelLoadError(f"{path} cannot be read: {exc}") from exc
    return out


def _resolve_names(available, name: str) -> dict[str, str]:
    """Map each LAYER0_KEYS and OPTIONAL_KEYS entry to its stored name under either key
    layout."""
    available = set(available)
    for prefix in _PREFIXES:
        if prefix + "wte.weight" in available:
            return {k: prefix + k for k in LAYER0_KEYS + OPTIONAL_KEYS}
    raise ModelLoadError(
        f"{name}: the weights hold no token embedding (wte.weight); not a GPT-2 checkpoint."
    )


def read_layer0_tensors(files: CheckpointFiles, name: str) -> dict[str, torch.Tensor]:
    """Return {key: tensor} for every LAYER0_KEYS entry and the OPTIONAL_KEYS present,
    keys without prefix."""
    if files.weight_format == "safetensors":
        tensors: dict[str, torch.Tensor] = {}
        names: dict[str, str] | None = None
        for path in files.weights:
            if names is None:
                try:
                    size = path.stat().st_size
                    with open(path, "rb") as f:
                        header, _ = _read_safetensors_header(f, path, size)
                except OSError as exc:
                    raise ModelLoadError(f"{path} cannot be read: {exc}") from exc
                try:
                    names = _resolve_names(header, name)
                except ModelLoadError:
                    if len(files.weights) == 1:
                        raise
                    continue
            tensors.update(read_safetensors(path, names))
    else:
        state = _load_bin(files.weights[0], name)
        names = _resolve_names(state, name)
        tensors = {k: state[v] for k, v in names.items() if v in state}
        del state
    missing = [k for k in LAYER0_KEYS if k not in tensors]
    if missing:
        what = ", ".join(missing)
        if any("c_attn.bias" in m for m in missing):
            raise ModelLoadError(
                f"{name}: layer 0 has no query/key/value bias (c_attn.bias); the analysis "
                "needs the GPT-2 attention with biases."
            )
        raise ModelLoadError(f"{name}: the checkpoint lacks layer-0 tensors: {what}.")
    return tensors


def _load_bin(path: Path, name: str) -> dict[str, torch.Tensor]:
    try:
        try:
            obj = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError:
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # pickle/zip errors come in many types
        raise ModelLoadError(
            f"{path.name} is corrupt or not a PyTorch checkpoint ({type(exc).__name__})."
        ) from exc
    if isinstance(obj, dict) and "state_dict" in obj and isinstance(obj["state_dict"], dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict):
        raise ModelLoadError(f"{path.name} does not hold a state dict.")
    return obj
