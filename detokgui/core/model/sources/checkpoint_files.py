"""The files of a checkpoint folder, read without knowing where they came from (a local
folder, the Hugging Face cache or detokgui's hub cache): which tokenizer files a
checkpoint may carry, safetensors headers and tensors read with plain file reads, and
`.bin` state dicts."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import torch

from detokgui.core.base.errors import ModelLoadError

TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.json",
    "merges.txt",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "spiece.model",
    "tokenizer.model",
)

_ST_DTYPES = {
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "F64": torch.float64,
}


def read_safetensors_header(f, path: Path, size: int) -> tuple[dict, int]:
    """(header table, offset of the data) of the open safetensors file `f` of `size`
    bytes: an 8-byte little-endian length n, then n bytes of JSON."""
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
            header, data_start = read_safetensors_header(f, path, size)
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


def load_bin(path: Path, name: str) -> dict[str, torch.Tensor]:
    """The state dict of a `.bin` checkpoint (a pickle, loaded whole, weights only)."""
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
