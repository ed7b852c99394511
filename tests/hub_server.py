"""A small Hugging Face hub on 127.0.0.1 for the tests and benchmarks of `core.model.sources.hub`.

It serves what huggingface_hub 2.4 asks of the real hub:

- `GET /api/models/{repo}[/revision/{rev}]`: {"id", "sha", "siblings"} (`HfApi.model_info`),
  404 with `X-Error-Code: RepoNotFound` / `RevisionNotFound` as the hub sends them;
- `HEAD|GET /{repo}/resolve/{rev}/{file}`: small files directly (200, `ETag`,
  `X-Repo-Commit`, `Content-Length`); weight files (`.safetensors`, `.bin`) as the hub
  serves LFS files: a 302 to a second server (the "CDN", another origin, as the hub's
  storage is) with `X-Linked-Etag`, `X-Linked-Size`, `X-Repo-Commit`
  (`get_hf_file_metadata` reads these off the redirect);
- the CDN: `GET|HEAD /cdn/{etag}` with single `Range: bytes=a-b` requests (206,
  `Content-Range`), or the whole file (200).

Knobs on `HubServer` (set them between requests): `ignore_range` (answer ranges with the
whole file), `delay` (seconds between 16 kB pieces of a body), `drop_after`/`drops`
(close the connection after that many body bytes, that many times; -1 always),
`status` ({path substring: (code, headers)} answered instead). `sent` counts the body
bytes both servers sent; `requests` lists (method, path, Range).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

PIECE = 1 << 14
WEIGHT_SUFFIXES = (".safetensors", ".bin")


def commit_sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


class Repo:
    """One repository: commits (sha -> folder of files) and refs (branch/tag -> sha)."""

    def __init__(self):
        self.commits: dict[str, Path] = {}
        self.refs: dict[str, str] = {}

    def add(self, folder: Path, *refs: str, sha: str | None = None) -> str:
        sha = sha or commit_sha(f"{folder}:{len(self.commits)}")
        self.commits[sha] = Path(folder)
        for ref in refs:
            self.refs[ref] = sha
        return sha

    def resolve(self, rev: str) -> str | None:
        if rev in self.commits:
            return rev
        return self.refs.get(rev)


class HubServer:
    """The hub and its CDN, each a ThreadingHTTPServer on 127.0.0.1 (port 0)."""

    def __init__(self):
        self.repos: dict[str, Repo] = {}
        self.ignore_range = False
        self.delay = 0.0
        self.drop_after: int | None = None
        self.drops = 0
        self.status: dict[str, tuple[int, dict]] = {}
        self.sent = 0
        self.requests: list[tuple[str, str, str | None]] = []
        self.lock = threading.Lock()
        self._etags: dict[str, Path] = {}
        self.hub = _Server(self, cdn=False)
        self.cdn = _Server(self, cdn=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.hub.server_port}"

    def repo(self, name: str) -> Repo:
        return self.repos.setdefault(name, Repo())

    def reset_counts(self) -> None:
        with self.lock:
            self.sent = 0
            self.requests.clear()

    def close(self) -> None:
        for s in (self.hub, self.cdn):
            s.shutdown()
            s.server_close()

    def etag(self, path: Path) -> str:
        """An identifier of the file's contents (the real hub's is its sha256; hashing a
        6 GB sparse file would take a minute, so: of its name, size and mtime)."""
        st = path.stat()
        tag = hashlib.sha256(f"{path}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()
        self._etags[tag] = path
        return tag


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: HubServer, cdn: bool):
        self.owner, self.cdn = owner, cdn
        super().__init__(("127.0.0.1", 0), _Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args):  # quiet
        pass

    # ------------------------------------------------------------ plumbing

    def do_HEAD(self):
        self._route(head=True)

    def do_GET(self):
        self._route(head=False)

    def _route(self, head: bool) -> None:
        hub = self.server.owner
        path = unquote(urlsplit(self.path).path)
        with hub.lock:
            hub.requests.append((self.command, self.path, self.headers.get("Range")))
        for key, (code, headers) in hub.status.items():
            if key in self.path:
                return self._reply(code, b'{"error": "refused"}', headers, head)
        if self.server.cdn:
            return self._cdn(path, head)
        if path.startswith("/api/models/"):
            return self._api(path[len("/api/models/"):], head)
        if "/resolve/" in path:
            return self._resolve(self.path, head)
        self._reply(404, b"not found", {}, head)

    def _reply(self, code: int, body: bytes, headers: dict, head: bool) -> None:
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, str(v))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)
            self._count(len(body))

    def _count(self, n: int) -> None:
        hub = self.server.owner
        with hub.lock:
            hub.sent += n

    # ------------------------------------------------------------ the hub

    def _api(self, rest: str, head: bool) -> None:
        hub = self.server.owner
        repo_id, _, rev = rest.partition("/revision/")
        repo = hub.repos.get(repo_id.strip("/"))
        if repo is None:
            return self._reply(404, b'{"error":"Repository not found"}',
                               {"X-Error-Code": "RepoNotFound"}, head)
        sha = repo.resolve(rev or "main")
        if sha is None:
            return self._reply(404, b'{"error":"Invalid rev id"}',
                               {"X-Error-Code": "RevisionNotFound"}, head)
        files = sorted(p.name for p in repo.commits[sha].iterdir() if p.is_file())
        body = json.dumps({"id": repo_id, "modelId": repo_id, "sha": sha, "private": False,
                           "siblings": [{"rfilename": f} for f in files]}).encode()
        self._reply(200, body, {"Content-Type": "application/json"}, head)

    def _resolve(self, raw_path: str, head: bool) -> None:
        hub = self.server.owner
        path = urlsplit(raw_path).path
        repo_part, _, rest = path.partition("/resolve/")
        repo = hub.repos.get(unquote(repo_part.strip("/")))
        if repo is None:
            return self._reply(404, b"", {"X-Error-Code": "RepoNotFound"}, head)
        rev_q, _, filename = rest.partition("/")
        sha = repo.resolve(unquote(rev_q))
        if sha is None:
            return self._reply(404, b"", {"X-Error-Code": "RevisionNotFound"}, head)
        file = repo.commits[sha] / unquote(filename)
        if not file.is_file():
            return self._reply(404, b"", {"X-Error-Code": "EntryNotFound"}, head)
        etag = hub.etag(file)
        if file.name.endswith(WEIGHT_SUFFIXES):
            cdn = f"http://127.0.0.1:{hub.cdn.server_port}/cdn/{etag}"
            return self._reply(302, b"", {"Location": cdn, "X-Repo-Commit": sha,
                                          "X-Linked-Etag": f'"{etag}"',
                                          "X-Linked-Size": file.stat().st_size,
                                          "ETag": '"redirect"'}, head)
        self._send_file(file, etag, head, {"X-Repo-Commit": sha})

    # ------------------------------------------------------------ the CDN

    def _cdn(self, path: str, head: bool) -> None:
        hub = self.server.owner
        file = hub._etags.get(path.rsplit("/", 1)[-1])
        if file is None:
            return self._reply(404, b"no such object", {}, head)
        self._send_file(file, path.rsplit("/", 1)[-1], head, {})

    def _send_file(self, file: Path, etag: str, head: bool, extra: dict) -> None:
        hub = self.server.owner
        size = file.stat().st_size
        begin, end = 0, size
        code = 200
        rng = self.headers.get("Range")
        if rng and not hub.ignore_range:
            spec = rng.strip().removeprefix("bytes=")
            a, _, b = spec.partition("-")
            begin = int(a)
            end = min(int(b) + 1, size) if b else size
            if begin >= size:
                return self._reply(416, b"", {"Content-Range": f"bytes */{size}"}, head)
            code = 206
        self.send_response(code)
        self.send_header("ETag", f'"{etag}"')
        self.send_header("Accept-Ranges", "none" if hub.ignore_range else "bytes")
        self.send_header("Content-Length", str(end - begin))
        if code == 206:
            self.send_header("Content-Range", f"bytes {begin}-{end - 1}/{size}")
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        if head:
            return
        drop = hub.drop_after if hub.drops else None
        sent = 0
        with open(file, "rb") as f:
            f.seek(begin)
            while sent < end - begin:
                n = min(PIECE, end - begin - sent)
                if drop is not None:
                    if sent >= drop and self._drops_left():
                        self._drop()
                        return
                    if sent < drop:
                        n = min(n, drop - sent)
                buf = f.read(n)
                try:
                    self.wfile.write(buf)
                except OSError:  # the client went away (Cancel)
                    self.close_connection = True
                    return
                sent += len(buf)
                self._count(len(buf))
                if hub.delay:
                    time.sleep(hub.delay)

    def _drops_left(self) -> bool:
        hub = self.server.owner
        with hub.lock:
            if not hub.drops:
                return False
            if hub.drops > 0:
                hub.drops -= 1
            return True

    def _drop(self) -> None:
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


# --------------------------------------------------------------------------- checkpoints


def write_sparse_gpt2(folder, *, n_embd: int, n_head: int, n_layer: int, n_positions: int = 1024,
                      vocab_size: int = 50257, seed: int = 0, tokenizer: bool = True) -> Path:
    """A GPT-2 checkpoint folder of any size whose model.safetensors holds real bytes only
    for the layer-0 tensors (wte, wpe, h.0.*, ln_f): the other layers are a hole in a
    sparse file, so a gpt2-xl-shaped 6 GB file costs 0.45 GB of disk. The header lists
    every tensor of every layer, in the order safetensors writes them (by name)."""
    import torch

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    d, inner = n_embd, 4 * n_embd
    shapes = {"wte.weight": [vocab_size, d], "wpe.weight": [n_positions, d],
              "ln_f.weight": [d], "ln_f.bias": [d]}
    for i in range(n_layer):
        shapes.update({
            f"h.{i}.ln_1.weight": [d], f"h.{i}.ln_1.bias": [d],
            f"h.{i}.attn.c_attn.weight": [d, 3 * d], f"h.{i}.attn.c_attn.bias": [3 * d],
            f"h.{i}.attn.c_proj.weight": [d, d], f"h.{i}.attn.c_proj.bias": [d],
            f"h.{i}.ln_2.weight": [d], f"h.{i}.ln_2.bias": [d],
            f"h.{i}.mlp.c_fc.weight": [d, inner], f"h.{i}.mlp.c_fc.bias": [inner],
            f"h.{i}.mlp.c_proj.weight": [inner, d], f"h.{i}.mlp.c_proj.bias": [d],
        })
    header, offset = {}, 0
    for name in sorted(shapes):
        n = 4
        for s in shapes[name]:
            n *= s
        header[name] = {"dtype": "F32", "shape": shapes[name], "data_offsets": [offset, offset + n]}
        offset += n
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    start = 8 + len(raw)
    g = torch.Generator().manual_seed(seed)
    path = folder / "model.safetensors"
    with open(path, "wb") as f:
        f.write(len(raw).to_bytes(8, "little"))
        f.write(raw)
        for name in sorted(shapes):
            if not (name.startswith(("wte", "wpe", "ln_f", "h.0."))):
                continue
            shape = shapes[name]
            if name.endswith(("ln_1.weight", "ln_2.weight")) or name == "ln_f.weight":
                t = 1.0 + 0.3 * torch.randn(shape, generator=g)
            elif name.endswith("c_attn.weight"):
                t = torch.randn(shape, generator=g) * (1.5 / d**0.5)
            elif name.endswith("bias"):
                t = 0.2 * torch.randn(shape, generator=g)
            elif name == "wpe.weight":
                t = 0.05 * torch.randn(shape, generator=g)
            else:
                t = 0.02 * torch.randn(shape, generator=g)
            f.seek(start + header[name]["data_offsets"][0])
            f.write(t.contiguous().numpy().tobytes())
        f.truncate(start + offset)
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": d,
              "n_head": n_head, "n_layer": n_layer, "n_positions": n_positions,
              "n_ctx": n_positions, "vocab_size": vocab_size, "layer_norm_epsilon": 1e-5,
              "activation_function": "gelu_new"}
    (folder / "config.json").write_text(json.dumps(config, indent=1))
    if tokenizer:
        from detokgui.core.model.tokens import gpt2_tokenizer

        gpt2_tokenizer().save_pretrained(folder)
    return folder


def allocated_bytes(path) -> int:
    """The disk a (sparse) file really uses."""
    return os.stat(path).st_blocks * 512
