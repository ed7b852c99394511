"""Hub models, layer 0 only: resolve `NAME@REVISION` to a commit, read the safetensors
header with an HTTP range request, fetch only the byte ranges of the layer-0 tensors and
keep them as a small local checkpoint folder in detokgui's cache, which the local reading
path (`core.model.sources.checkpoint`) then loads like any folder.

Built on huggingface_hub's own pieces: `HfApi.model_info` resolves the revision (branch,
tag or commit) to the commit sha and lists the files, `hf_hub_url` and
`get_hf_file_metadata` give each file's address, size and ETag, `get_session` is the HTTP
client (offline mode, proxies, user agent), `build_hf_headers` the token (HF_TOKEN or
`hf auth login`), `hf_raise_for_status` the error classes; `HF_ENDPOINT` is read at each
call. The transfers themselves (ranges, progress, resuming): `core.model.sources.hub_download`.

For a safetensors file of size S whose header is n bytes, with layer-0 tensors t at byte
ranges [8 + n + b_t, 8 + n + e_t), the transfer is

    8 + n + sum over coalesced ranges (e - b)           (gpt2-xl: 0.45 of 6.4 GB)

Cache layout, under `paths.cache_root() / "hub"`:

    owner--name/refs/<revision>                the commit a branch or tag resolved to last
    owner--name/<commit>-<etag>/               config.json, model.safetensors (layer 0 only),
                                               tokenizer files, hub.json (where it came from)

A folder appears whole or not at all (`atomic.atomic_folder`); a killed download leaves a
`.NAME.XXXX.part` folder that a later run ignores and, once stale, removes.

Block 1 (`core.model.layer1`) is fetched only when asked for (`fetch_block`): the byte
ranges of its tensors alone, into `block1.safetensors` beside the layer-0 weights of the
same folder (renamed into place when complete), so that loading layer 0 never costs more.

`save_layer0` (`detokgui download`) writes such a folder, with SOURCE_FILE saying which
repository, revision and commit it is, wherever a person wants it: carried to a machine
without network, it opens as a local checkpoint folder, and `recorded_commit` gives the
commit back (`Layer0.revision`).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from detokgui.core.base.atomic import atomic_folder, sweep_stale_parts, write_text
from detokgui.core.base.errors import Cancelled, InputError, ModelLoadError
from detokgui.core.base.paths import cache_root
from detokgui.core.model.sources.hub_download import (
    META_TIMEOUT,
    PROGRESS_SPAN,
    Client,
    coalesce,
    write_layer0,
)

Report = Callable[[float, str], None]

#: A revision that is already a full commit sha needs no resolving.
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
MANIFEST = "hub.json"


# --------------------------------------------------------------------------- names


def split_revision(name: str) -> tuple[str, str | None]:
    """("owner/name", "rev") for "owner/name@rev"; (name, None) without a revision;
    ("name", "") for "name@" (refused by the loader).

    Only the last "@" separates: a repository name never holds one."""
    name = str(name).strip()
    base, sep, rev = name.rpartition("@")
    if not sep or not base:
        return name, None
    return base.strip(), rev.strip()


def short(commit: str | None) -> str:
    """The first 10 hex digits of a commit, as people quote them."""
    return (commit or "")[:10]


#: An example for the hub dialog: a GPT-2 training checkpoint published as a branch.
HUB_EXAMPLE = "stanford-crfm/alias-gpt2-small-x21@checkpoint-300000"


def hub_request(text: str) -> tuple[str, str | None]:
    """(model name to load, problem or None) for what was typed as a hub model: NAME or
    NAME@REVISION (a branch, tag or commit; `split_revision`), spaces around the parts
    dropped."""
    text = " ".join(str(text).split())
    name, revision = split_revision(text)
    if not name or name.startswith("@") or revision == "":
        return text, (f"Write the model's name, and after an @ the revision if you want one "
                      f"other than main: e.g. gpt2 or {HUB_EXAMPLE}.")
    if " " in name or " " in (revision or ""):
        return text, "A hub model's name and revision have no spaces."
    return f"{name}@{revision}" if revision else name, None


def endpoint() -> str:
    """The hub's address: HF_ENDPOINT when set (read now, not at import)."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def offline_mode() -> bool:
    return (os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE")
            or "").strip().lower() in {"1", "true", "yes", "on"}


def hub_root() -> Path:

    return cache_root() / "hub"


def repo_folder(repo: str) -> Path:
    return hub_root() / repo.replace("/", "--")


# --------------------------------------------------------------------------- the cache


@dataclass(frozen=True)
class HubCheckpoint:
    """A layer-0 checkpoint folder in detokgui's cache and where it came from."""

    folder: Path
    repo: str
    commit: str


def cached(repo: str, revision: str | None) -> HubCheckpoint | None:
    """The cached layer-0 folder for `repo` at `revision` (None: the default branch),
    without the network: a commit directly, a branch or tag through the ref it resolved
    to when it was last online. None when there is none."""
    commit = _ref(repo, revision)
    if commit is None:
        return None
    folder = _complete_folder(repo, commit)
    return HubCheckpoint(folder, repo, commit) if folder is not None else None


def cached_repos() -> list[str]:
    """The hub models with a layer-0 folder in detokgui's cache (`repo_folder`'s names)."""
    try:
        return sorted(p.name.replace("--", "/") for p in hub_root().iterdir() if p.is_dir())
    except OSError:
        return []


def did_you_mean(name: str) -> str:
    """" Did you mean 'gpt2'?" for a model name that could not be opened: the close names
    among those this machine knows (`core.model.sources.model_names`, with detokgui's cached hub
    models); "" when none is close."""
    from detokgui.core.model.sources import model_names  # lists the demo models: torch

    return model_names.did_you_mean(name, also=cached_repos())


def clear_cache(repo: str | None = None) -> None:
    """Remove the cached layer-0 folders of `repo`, or of every hub model."""
    shutil.rmtree(repo_folder(repo) if repo else hub_root(), ignore_errors=True)


def _ref(repo: str, revision: str | None) -> str | None:
    if revision and _COMMIT.match(revision):
        return revision
    try:
        text = (repo_folder(repo) / "refs" / _ref_name(revision)).read_text("utf-8").strip()
    except OSError:
        return None
    return text if _COMMIT.match(text) else None


def _ref_name(revision: str | None) -> str:
    return quote(revision or "main", safe="")


def _complete_folder(repo: str, commit: str, etag: str | None = None) -> Path | None:
    """The newest finished folder of `commit` (with `etag`, when given)."""
    base = repo_folder(repo)
    pattern = f"{commit}-{_etag_key(etag)}" if etag else f"{commit}-*"
    found = [p for p in base.glob(pattern) if (p / MANIFEST).is_file()]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def _etag_key(etag: str | None) -> str:
    return re.sub(r"[^0-9A-Za-z]", "", etag or "noetag")[:16] or "noetag"


def _write_ref(repo: str, revision: str | None, commit: str) -> None:

    if revision and _COMMIT.match(revision):
        return
    refs = repo_folder(repo) / "refs"
    try:
        refs.mkdir(parents=True, exist_ok=True)
        write_text(refs / _ref_name(revision), commit)
    except OSError:
        pass  # only offline runs need it; this one has its folder


# --------------------------------------------------------------------------- entry point


def fetch_layer0(repo: str, revision: str | None, report: Report | None = None,
                 label: str | None = None) -> HubCheckpoint:
    """The layer-0 checkpoint folder of hub model `repo` at `revision` (branch, tag or
    commit; None: the default branch), from detokgui's cache or downloaded into it.

    Online, the revision is resolved to its commit first (a branch moves); offline, or
    when the hub cannot be reached, the cache answers through the last resolution.
    `report(fraction, message)` is called at least every 0.2 s of transfer; an exception
    it raises (Cancelled) stops the download within a second and leaves no finished
    folder. ModelLoadError with a one-line message on every failure."""
    from huggingface_hub import errors as hf_errors

    label = label or (f"{repo}@{revision}" if revision else repo)
    report = report or (lambda f, m: None)
    hit = cached(repo, revision) if revision and _COMMIT.match(revision) else None
    if hit is not None:
        return hit
    if offline_mode():
        return _offline(repo, revision, label, "HF_HUB_OFFLINE is set")
    try:
        info = _model_info(repo, revision, label)
    except _Unreachable as exc:
        return _offline(repo, revision, label, str(exc))
    commit = info.sha
    if not commit or not _COMMIT.match(commit):
        raise ModelLoadError(f"The hub did not say which commit {label} is.")
    files = {s.rfilename for s in (info.siblings or [])}
    try:
        checkpoint = _fetch_commit(repo, commit, files, report, label)
    except hf_errors.HfHubHTTPError as exc:
        raise _http_error(exc, label, revision) from None
    _write_ref(repo, revision, commit)
    return checkpoint


class _Unreachable(Exception):
    pass


def _offline(repo: str, revision: str | None, label: str, why: str) -> HubCheckpoint:
    hit = cached(repo, revision)
    if hit is not None:
        return hit
    raise ModelLoadError(
        f"{label} is not in detokgui's cache and the hub cannot be reached ({why})."
        f"{did_you_mean(label)} Connect once to download its layer 0 (it is then cached), "
        "or open a local checkpoint folder instead.")


def _model_info(repo: str, revision: str | None, label: str):
    import httpx2
    from huggingface_hub import HfApi
    from huggingface_hub import errors as hf_errors

    try:
        return HfApi(endpoint=endpoint()).model_info(repo, revision=revision,
                                                     timeout=META_TIMEOUT)
    except hf_errors.OfflineModeIsEnabled as exc:
        raise _Unreachable("offline mode") from exc
    except (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.ReadTimeout) as exc:
        raise _Unreachable(f"{type(exc).__name__}: {exc}") from exc
    except httpx2.TransportError as exc:
        raise _Unreachable(f"{type(exc).__name__}: {exc}") from exc
    except hf_errors.HfHubHTTPError as exc:
        raise _http_error(exc, label, revision) from None
    except ValueError as exc:  # HFValidationError: not a repository name
        raise ModelLoadError(
            f"{label!r} is neither an existing folder nor a valid hub model name ({exc})."
        ) from None


def _http_error(exc, label: str, revision: str | None) -> ModelLoadError:
    """The one line a person reads for a hub HTTP error."""
    from huggingface_hub import errors as hf_errors

    status = getattr(getattr(exc, "response", None), "status_code", None)
    login = "log in with `hf auth login` or set HF_TOKEN"
    if isinstance(exc, hf_errors.GatedRepoError):
        return ModelLoadError(f"{label} is gated on the hub: accept its terms on its page and "
                              f"{login}.")
    if isinstance(exc, hf_errors.RevisionNotFoundError):
        return ModelLoadError(f"{label}: the hub has no revision {revision!r} (branch, tag or "
                              "commit) of this model.")
    if isinstance(exc, hf_errors.RepositoryNotFoundError):
        if status == 401:
            return ModelLoadError(f"There is no model {label} on the hub, or it is private or "
                                  f"gated: {login}.")
        return ModelLoadError(f"There is no model named {label} on the Hugging Face hub."
                              f"{did_you_mean(label)}")
    if status in (401, 403):
        return ModelLoadError(f"The hub refused access to {label} ({status}): it is private "
                              f"or gated; {login} with a token that may read it.")
    if status == 429:
        return ModelLoadError(f"The hub is limiting requests (429 Too Many Requests) for "
                              f"{label}; wait a minute and try again ({login} for a higher "
                              "limit).")
    if isinstance(exc, hf_errors.RemoteEntryNotFoundError) or status == 404:
        return ModelLoadError(f"{label}: a file of the model is missing on the hub ({status}).")
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return ModelLoadError(f"The hub refused {label}: {first}")


# --------------------------------------------------------------------------- one commit


def _fetch_commit(repo: str, commit: str, files: set[str], report: Report,
                  label: str) -> HubCheckpoint:
    from huggingface_hub import errors as hf_errors

    from detokgui.core.model.families import read_config  # torch, not before a download
    from detokgui.core.model.sources.checkpoint_files import TOKENIZER_FILES  # torch, ditto

    if "model.safetensors" in files or not files:
        weights = ["model.safetensors"]
    elif "model.safetensors.index.json" in files:
        weights = ["model.safetensors.index.json"]
    elif "pytorch_model.bin" in files:
        weights = ["pytorch_model.bin"]
    else:
        raise ModelLoadError(f"{label} on the hub has no PyTorch weights (model.safetensors, "
                             "model.safetensors.index.json or pytorch_model.bin).")
    client = Client(repo, commit, label, report, endpoint())
    meta = client.metadata(weights[0])
    existing = _complete_folder(repo, commit, meta.etag)
    if existing is not None:
        return HubCheckpoint(existing, repo, commit)
    target = repo_folder(repo) / f"{commit}-{_etag_key(meta.etag)}"
    sweep_stale_parts(target.parent)
    try:
        with atomic_folder(target) as tmp:
            client.stage = tmp
            config = client.small("config.json", tmp / "config.json")
            shape = read_config(config, label)  # other architectures are refused first
            if weights[0] == "model.safetensors":
                parts = [client.safetensors_layer0(weights[0], meta, shape)]
            elif weights[0].endswith(".index.json"):
                parts = client.sharded_layer0(weights[0], shape)
            else:
                parts = [client.bin_layer0(weights[0], meta, shape)]
            write_layer0(tmp / "model.safetensors", parts, label)
            report(PROGRESS_SPAN[1], f"Downloading {label} tokenizer")
            for name in TOKENIZER_FILES:
                if name in files:
                    client.small(name, tmp / name)
            manifest = {"repo": repo, "commit": commit, "etag": meta.etag,
                        "source": weights[0], "bytes_downloaded": client.received,
                        "layer0_tensors": sorted(k for p in parts for k in p.tensors)}
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    except hf_errors.HfHubHTTPError:
        raise  # an OSError too; fetch_layer0 words it
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise ModelLoadError(
                f"The disk is full: {label}'s layer 0 cannot be written to detokgui's cache "
                f"({exc.filename or target}). Free some space, or point DETOKGUI_CACHE_DIR "
                "at another disk.") from None
        raise ModelLoadError(f"{label} cannot be written to detokgui's cache: "
                             f"{exc.strerror or exc}: {exc.filename or target}") from None
    return HubCheckpoint(target, repo, commit)


# --------------------------------------------------------------------------- later blocks


def block_file(block: int) -> str:
    """The file of a layer-0 folder that holds block `block`'s tensors once fetched."""
    return f"block{block}.safetensors"


def fetch_block(got: HubCheckpoint, block: int, report: Report | None = None,
                label: str | None = None) -> Path:
    """The file holding block `block`'s stored tensors of the cached hub model `got`: in
    its folder already, or downloaded now, only those tensors' byte ranges (the same
    transfers, progress, Cancel and one-line errors as `fetch_layer0`; the file appears
    whole or not at all)."""
    from huggingface_hub import errors as hf_errors

    from detokgui.core.model.families import read_config  # torch, not before a download

    label = label or got.repo
    report = report or (lambda f, m: None)
    target = got.folder / block_file(block)
    if target.is_file():
        return target
    if offline_mode():
        raise ModelLoadError(f"Block {block} of {label} is not in detokgui's cache and "
                             "HF_HUB_OFFLINE is set; connect once to fetch it (only its bytes "
                             "are downloaded).")
    try:
        manifest = json.loads((got.folder / MANIFEST).read_text("utf-8"))
        source = str(manifest["source"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelLoadError(f"{label}: detokgui's cache folder {got.folder} is damaged "
                             f"({exc}); clear it and load the model again.") from None
    shape = read_config(got.folder / "config.json", label)
    client = Client(got.repo, got.commit, label, report, endpoint(), what=f"block {block}")
    import tempfile

    sweep_stale_parts(got.folder, f"block{block}")
    stage = Path(tempfile.mkdtemp(prefix=f".block{block}.", suffix=".part", dir=got.folder))
    try:
        client.stage = stage
        if source.endswith(".index.json"):
            parts = client.sharded_layer0(source, shape, block)
        elif source.endswith(".bin"):
            parts = [client.bin_layer0(source, client.metadata(source), shape, block)]
        else:
            parts = [client.safetensors_layer0(source, client.metadata(source), shape,
                                               block=block)]
        done = stage / "block.safetensors"
        write_layer0(done, parts, label, written_by=f"detokgui (block {block} only)")
        os.replace(done, target)
    except hf_errors.HfHubHTTPError as exc:
        raise _http_error(exc, label, None) from None
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise ModelLoadError(f"The disk is full: block {block} of {label} cannot be "
                                 f"written to detokgui's cache ({exc.filename or target}).") \
                from None
        raise ModelLoadError(f"Block {block} of {label} cannot be fetched: "
                             f"{exc.strerror or exc}") from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return target


# --------------------------------------------------------------------------- a folder to carry


#: The file in a folder written by `save_layer0` that says where its files came from.
SOURCE_FILE = "detokgui-source.json"


@dataclass(frozen=True)
class SavedLayer0:
    """A layer-0 checkpoint folder written by `save_layer0`: where, what it holds and
    where it came from."""

    folder: Path
    repo: str
    revision: str | None  # as asked for (None: the default branch)
    commit: str
    size: int  # bytes of all its files
    files: tuple[str, ...]


def check_destination(dest: str | Path, replace: bool = False) -> Path:
    """`dest` as a folder `save_layer0` may write: new (in an existing folder), empty, or,
    with `replace`, an earlier `save_layer0` folder (one holding SOURCE_FILE). Any other
    non-empty folder, and a file, are refused (InputError): replacing a folder deletes
    it, and only what this function wrote may be deleted so."""
    dest = Path(dest).expanduser()
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise InputError(f"{dest} exists and is not a folder; give a new or empty folder.")
    if dest.is_dir():
        try:
            empty = not any(dest.iterdir())
        except OSError as exc:
            raise InputError(f"{dest} cannot be read: {exc.strerror or exc}.") from None
        if not empty and not (replace and (dest / SOURCE_FILE).is_file()):
            if (dest / SOURCE_FILE).is_file():
                raise InputError(f"{dest} already holds a downloaded layer 0; give a new or "
                                 "empty folder, or --force to replace it.")
            raise InputError(f"{dest} is not empty; give a new or empty folder (only an "
                             "earlier `detokgui download` folder may be replaced, with "
                             "--force).")
        return dest
    parent = dest.parent
    if not parent.is_dir():
        raise InputError(f"the folder {parent} does not exist; create it first, or give "
                         "another place for the download.")
    return dest


def recorded_commit(folder: str | Path) -> str | None:
    """The hub commit a `save_layer0` folder records in its SOURCE_FILE (40 hex digits),
    so that the folder, opened later, names the commit its weights are of; None for any
    other folder, or when the file cannot be read."""
    try:
        commit = json.loads((Path(folder) / SOURCE_FILE).read_text("utf-8")).get("commit")
    except (OSError, ValueError, AttributeError):
        return None
    return commit if isinstance(commit, str) and _COMMIT.match(commit) else None


def save_layer0(name: str, dest: str | Path, report: Report | None = None,
                replace: bool = False) -> SavedLayer0:
    """Write hub model `name` (NAME or NAME@REVISION)'s layer-0 checkpoint folder — the
    one `fetch_layer0` keeps in detokgui's cache: config.json, the tokenizer files and a
    model.safetensors holding only the tensors layer 0 needs — into folder `dest`, with
    SOURCE_FILE saying where it came from (repository, revision asked for, the commit it
    resolved to). The folder is a checkpoint folder like any other: copied to a machine
    without network, it opens with `--model FOLDER` or `dg.load(FOLDER)`.

    The download is `fetch_layer0`'s (range requests, progress through `report`, Cancel
    or Ctrl+C within a second, the cache reused). The files are written into a temporary
    folder beside `dest` that becomes `dest` only when complete, so an interruption or a
    failure leaves no `dest` (and an existing one as it was). `dest` must be new or empty;
    with `replace`, an earlier `save_layer0` folder is replaced (`check_destination`).
    ModelLoadError or InputError with a one-line message on every failure."""
    from detokgui.core.model.sources.demo import DEMO_NAMES  # torch, not before a download

    label = str(name).strip()
    repo, revision = split_revision(label)
    if label in DEMO_NAMES:
        raise InputError(f"{label!r} is shipped with detokgui (`--model {label}`); there is "
                         "nothing to download.")
    # what `checkpoint.locate` takes for a path is not a hub name (a folder of the same
    # name as a hub model, such as an earlier download, does not matter here)
    if not repo or revision == "" or label.startswith((".", "~", "/")) or label.count(
            "/") > 1 or "\\" in label:
        raise InputError(f"{label!r} is not a hub model name: give NAME or NAME@REVISION "
                         "(a branch, tag or commit), e.g. gpt2 or EleutherAI/gpt-neo-125m@main.")
    dest = check_destination(dest, replace)
    got = fetch_layer0(repo, revision, report, label=label)
    try:
        return _write_folder(got, revision, dest, replace, label)
    except OSError as exc:
        where = exc.filename or dest
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise ModelLoadError(f"The disk is full: {label}'s layer 0 cannot be written to "
                                 f"{where}. Free some space, or give a folder on another "
                                 "disk.") from None
        raise ModelLoadError(f"{label}'s layer 0 cannot be written to {dest}: "
                             f"{exc.strerror or exc}: {where}") from None


def _write_folder(got: HubCheckpoint, revision: str | None, dest: Path, replace: bool,
                  label: str) -> SavedLayer0:
    import datetime
    import shlex
    import tempfile


    sweep_stale_parts(dest.parent, dest.name)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent))
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it 0700
        files = sorted(p.name for p in got.folder.iterdir()
                       if p.is_file() and p.name != MANIFEST and not p.name.startswith("."))
        for f in files:
            _copy_file(got.folder / f, tmp / f)
        try:
            cached_manifest = json.loads((got.folder / MANIFEST).read_text("utf-8"))
        except (OSError, ValueError):
            cached_manifest = {}
        source = {
            "what": "layer 0 of a Hugging Face hub model, written by `detokgui download`: "
                    "config.json, the tokenizer files, and model.safetensors with only the "
                    "tensors detokgui reads (embeddings, block 0, the final LayerNorm)",
            "repo": got.repo,
            "revision": revision,
            "commit": got.commit,
            "hub": endpoint(),
            "written": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"),
            "detokgui": _installed_version(),
            "weights_from": cached_manifest.get("source"),
            "etag": cached_manifest.get("etag"),
            "layer0_tensors": cached_manifest.get("layer0_tensors"),
            "open_with": f"detokgui --model {shlex.quote(str(dest))}",
        }
        (tmp / SOURCE_FILE).write_text(json.dumps(source, indent=1) + "\n", encoding="utf-8")
        files = sorted([*files, SOURCE_FILE])
        size = sum((tmp / f).stat().st_size for f in files)
        for f in files:
            with open(tmp / f, "rb") as fh:
                os.fsync(fh.fileno())
        _move_into_place(tmp, dest, replace, label)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return SavedLayer0(dest, got.repo, revision, got.commit, size, tuple(files))


def _installed_version() -> str | None:
    """detokgui's version as installed (read without importing the package, which the
    core must not)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("detokgui")
    except PackageNotFoundError:
        return None


def _move_into_place(tmp: Path, dest: Path, replace: bool, label: str) -> None:
    """Rename the finished `tmp` to `dest`: over an empty `dest`, or (with `replace`) over
    an earlier download, which is moved aside first and deleted once `tmp` is in place."""
    check_destination(dest, replace)  # again: something may have appeared meanwhile
    if not dest.exists():
        os.rename(tmp, dest)
        return
    if not any(dest.iterdir()):
        dest.rmdir()
        os.rename(tmp, dest)
        return
    old = _aside(dest)
    os.rename(dest, old)
    try:
        os.rename(tmp, dest)
    except OSError:
        os.rename(old, dest)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _aside(dest: Path) -> Path:
    """A `.NAME.XXXX.part` name beside `dest` (swept as a killed writer's when stale)."""
    import secrets

    return dest.parent / f".{dest.name}.{secrets.token_hex(4)}.part"


def _copy_file(src: Path, dst: Path) -> None:
    """Copy in pieces, so that Ctrl+C lands between them."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout, 1 << 22)


__all__ = [
    "SOURCE_FILE",
    "Cancelled",
    "HubCheckpoint",
    "SavedLayer0",
    "block_file",
    "cached",
    "check_destination",
    "clear_cache",
    "coalesce",
    "endpoint",
    "fetch_block",
    "fetch_layer0",
    "offline_mode",
    "recorded_commit",
    "save_layer0",
    "short",
    "split_revision",
]
