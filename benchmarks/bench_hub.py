"""Hub models: bytes and wall time to a loaded Layer0, layer 0 only vs the whole file.

    python benchmarks/bench_hub.py [--shapes small,xl] [--keep]

For GPT-2-small (d=768, 12 heads, 12 layers) and GPT-2-xl (d=1600, 25 heads, 48 layers)
shapes, V=50257, L=1024, fp32: a sparse checkpoint (`tests/hub_server.write_sparse_gpt2`:
real bytes for layer 0 only, so xl's 6.2 GB file takes 0.45 GB of disk) served by the
tests' local hub on 127.0.0.1, both sides from an empty cache, in this run:

- layer 0 only: `Layer0.from_pretrained("bench/NAME")` (`core.model.sources.hub`: header by range
  request, then the layer-0 byte ranges);
- whole file: what detokgui did before — `hf_hub_download` of each file of the repository
  (the whole model.safetensors among them) into a Hugging Face cache, then
  `Layer0.from_pretrained(folder)`.

Printed per shape: bytes sent by the server and wall time for each side, and their ratios.
Targets: layer 0 only sends at most 10% of the whole file's bytes for the xl shape, and is
faster for both. Exit status 1 if a target is missed. Loopback moves bytes at memory
speed, so the time ratio understates what a real connection gains (there time is bytes /
bandwidth, and the byte ratio is the one to read).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from run import busy_cores, cpu_name

SHAPES = {
    "small": {"n_embd": 768, "n_head": 12, "n_layer": 12},
    "xl": {"n_embd": 1600, "n_head": 25, "n_layer": 48},
}
BYTES_TARGET = 0.10


def one_shape(name: str, spec: dict, root: Path) -> tuple[float, float, int]:
    from hub_server import HubServer, allocated_bytes, write_sparse_gpt2
    from huggingface_hub import hf_hub_download

    from detokgui.core import Layer0

    folder = write_sparse_gpt2(root / f"{name}-src", **spec, seed=0)
    size = (folder / "model.safetensors").stat().st_size
    server = HubServer()
    repo = f"bench/{name}"
    server.repo(repo).add(folder, "main")
    os.environ["HF_ENDPOINT"] = server.endpoint
    try:
        os.environ["DETOKGUI_CACHE_DIR"] = str(root / f"{name}-detokgui-cache")
        server.reset_counts()
        t0 = time.perf_counter()
        layer = Layer0.from_pretrained(repo, device="cpu")
        t_layer0 = time.perf_counter() - t0
        b_layer0 = server.sent
        del layer

        server.reset_counts()
        t0 = time.perf_counter()
        for f in sorted(p.name for p in folder.iterdir()):
            got = hf_hub_download(repo, f, cache_dir=str(root / f"{name}-hf-cache"),
                                  endpoint=server.endpoint)
        layer = Layer0.from_pretrained(str(Path(got).parent), device="cpu")
        t_whole = time.perf_counter() - t0
        b_whole = server.sent
        del layer
    finally:
        server.close()
    print(f"{name}: model.safetensors {size / 1e9:.2f} GB "
          f"(on disk here: {allocated_bytes(folder / 'model.safetensors') / 1e9:.2f} GB)")
    print(f"  layer 0 only: {b_layer0 / 1e6:9.1f} MB sent, {t_layer0:6.2f} s to a loaded Layer0")
    print(f"  whole file:   {b_whole / 1e6:9.1f} MB sent, {t_whole:6.2f} s")
    print(f"  bytes: layer 0 only / whole = {b_layer0 / b_whole:.3f}; "
          f"time: whole / layer 0 only = {t_whole / t_layer0:.1f}x")
    shutil.rmtree(root / f"{name}-hf-cache", ignore_errors=True)
    return b_layer0 / b_whole, t_whole / t_layer0, size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="small,xl", help="comma-separated: small, xl")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    print(f"CPU: {cpu_name()}; busy cores at start: {busy_cores():.1f}")
    root = Path(tempfile.mkdtemp(prefix="detokgui-bench-hub-"))
    ok = True
    try:
        for name in args.shapes.split(","):
            byte_ratio, speedup, _ = one_shape(name, SHAPES[name], root)
            if name == "xl" and byte_ratio > BYTES_TARGET:
                print(f"  MISSED: xl sends {byte_ratio:.1%} of the whole file "
                      f"(target <= {BYTES_TARGET:.0%})")
                ok = False
            if speedup < 1.0:
                print(f"  MISSED: layer 0 only is slower than the whole file ({speedup:.2f}x)")
                ok = False
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
