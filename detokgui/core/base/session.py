"""Session files: the state of an exploration in a small, human-readable JSON file that
the window saves (*File > Save session…*) and opens (*File > Open session…*, `detokgui
FILE`), and the library reads (`dg.open_session`).

A session (format version `VERSION`) holds

    {"format": "detokgui-session", "version": 1, "detokgui": "<version>",
     "saved": "2026-11-28T12:00:00+00:00",
     "models": {"a": {"name": "gpt2", "revision": "<commit or null>"},
                "b": null or {"name": ..., "revision": ...}},
     "selection": {"head": 7, "head_b": null, "query_token": 4731, "key_token": -1,
                   "query_position": 500, "token_set": [464, 3797],
                   "text": " North Korea", "sigma": {"kind": "mean", "i": 0, "j": 0}},
     "corpus": null or {"paths": ["/data/owt"], "text_column": "text"},
     "view": "topk",
     "panels": {"topk": {"k": 10, "direction": "keys"}, ...}}

`head_b` is B's head when a pair of heads was chosen together (else null: B's head
follows the matching). `text` is the Tokens view's text, whose tokens are the token set
(at most `MAX_TEXT_CHARS` of it; null or absent: the token set's tokens, decoded, become
the text). A corpus path "sample" is the sample corpus shipped with detokgui, wherever
it is installed; a model folder is an absolute path. Token ids are the model's ids; a
model is reopened at the commit it was saved at when it came from the hub.

Reading checks the whole file before anything uses it (`read_session`): a file that is
not JSON, not a session, of a newer version, or whose entries have the wrong types is
refused with one line (InputError), and nothing is restored. What is valid but cannot be
restored here (a model that does not open, a corpus that moved, a view or an option this
version does not know) is the restorer's to name; the rest is restored.

Versions. `MIGRATIONS[v]` turns a version-v session into version v + 1 (a pure function
of the dict); `read_session` applies them in turn up to `VERSION`, so a file of any
earlier version opens. A new version adds its migration here and a stored file of the
old version under tests/data/ (tests/data/session-v1.json is version 1).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

from detokgui import __version__
from detokgui.core.base.atomic import write_text
from detokgui.core.base.errors import InputError

FORMAT = "detokgui-session"
VERSION = 1
SUFFIX = ".detokgui.json"

#: version -> the function that turns a session of that version into the next one's
MIGRATIONS: dict[int, Callable[[dict], dict]] = {}

MAX_TEXT_CHARS = 100_000  # a session stays small: the start of a pasted book
SELECTION_INTS = ("head", "query_token", "key_token", "query_position")
SIGMA_KINDS = ("mean", "at", "none")


def empty_session() -> dict:
    """A version-`VERSION` session with nothing in it (no model, default selection)."""
    return {"format": FORMAT, "version": VERSION, "detokgui": "", "saved": "",
            "models": {"a": None, "b": None},
            "selection": {"head": 0, "head_b": None, "query_token": -1, "key_token": -1,
                          "query_position": 0, "token_set": [], "text": None,
                          "sigma": {"kind": "mean", "i": 0, "j": 0}},
            "corpus": None, "view": None, "panels": {}}


def write_session(path: str | Path, session: dict) -> Path:
    """Write `session` (checked as `check_session` does) to `path` as indented JSON, with
    this version's format, version, detokgui version and the time; atomically."""
    out = {**session, "format": FORMAT, "version": VERSION, "detokgui": __version__,
           "saved": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    check_session(out, str(path))
    order = ("format", "version", "detokgui", "saved", "models", "selection", "corpus",
             "view", "panels")
    out = {k: out[k] for k in order} | {k: v for k, v in out.items() if k not in order}
    write_text(path, json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    return Path(path)


def read_session(path: str | Path) -> dict:
    """The session in the file at `path`, migrated to this version and checked whole;
    InputError with one line when it cannot be read or is not a valid session."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such session file.") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a session file (not UTF-8 text).") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc}).") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputError(f"{path}: not a session file (damaged JSON at line {exc.lineno}, "
                         f"column {exc.colno}: {exc.msg}).") from None
    return parse_session(data, str(path))


def parse_session(data, where: str = "session") -> dict:
    """A session dict read from JSON, migrated to `VERSION` and checked (`check_session`)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"{where}: not a detokgui session file (no \"format\": \"{FORMAT}\").")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise InputError(f"{where}: the session's \"version\" must be a whole number from 1, "
                         f"not {version!r}.")
    if version > VERSION:
        raise InputError(f"{where}: a session of version {version}, written by a newer "
                         f"detokgui ({data.get('detokgui') or 'unknown'}); this one reads "
                         f"versions 1 to {VERSION}.")
    while version < VERSION:
        data = MIGRATIONS[version](dict(data))
        version += 1
        data["version"] = version
    check_session(data, where)
    return data


def _fail(where: str, what: str) -> None:
    raise InputError(f"{where}: {what}; the session was not opened.")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_session(data: dict, where: str = "session") -> None:
    """InputError naming the first entry of the wrong type (the types of the module
    docstring); unknown extra keys are allowed (a later version's, or a note)."""
    for key in ("models", "selection", "panels"):
        if not isinstance(data.get(key), dict):
            _fail(where, f"\"{key}\" must be an object")
    for slot in ("a", "b"):
        m = data["models"].get(slot)
        if m is None:
            continue
        if not isinstance(m, dict) or not isinstance(m.get("name"), str) or not m["name"].strip():
            _fail(where, f"models.{slot} must be null or an object with a \"name\"")
        if m.get("revision") is not None and not isinstance(m["revision"], str):
            _fail(where, f"models.{slot}.revision must be a string or null")
    if data["models"].get("a") is None and data["models"].get("b") is not None:
        _fail(where, "models.b is given without models.a")
    sel = data["selection"]
    for key in SELECTION_INTS:
        if key in sel and not _is_int(sel[key]):
            _fail(where, f"selection.{key} must be a whole number, not {sel[key]!r}")
    if sel.get("head_b") is not None and not _is_int(sel["head_b"]):
        _fail(where, f"selection.head_b must be a whole number or null, not {sel['head_b']!r}")
    tokens = sel.get("token_set", [])
    if not isinstance(tokens, list) or not all(_is_int(t) for t in tokens):
        _fail(where, "selection.token_set must be a list of token ids")
    if sel.get("text") is not None and not isinstance(sel["text"], str):
        _fail(where, "selection.text must be a string or null")
    sigma = sel.get("sigma", {"kind": "mean"})
    if not isinstance(sigma, dict) or sigma.get("kind") not in SIGMA_KINDS or \
            not all(_is_int(sigma.get(k, 0)) for k in ("i", "j")):
        _fail(where, "selection.sigma must be {\"kind\": \"mean\"|\"at\"|\"none\", "
                     "\"i\": n, \"j\": n}")
    corpus = data.get("corpus")
    if corpus is not None:
        paths = corpus.get("paths") if isinstance(corpus, dict) else None
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            _fail(where, "corpus must be null or an object with \"paths\", a list of strings")
        if not isinstance(corpus.get("text_column", "text"), str):
            _fail(where, "corpus.text_column must be a string")
    if data.get("view") is not None and not isinstance(data["view"], str):
        _fail(where, "view must be a view's name or null")
    for name, options in data["panels"].items():
        if not isinstance(options, dict):
            _fail(where, f"panels.{name} must be an object of option values")
        for key, value in options.items():
            if not isinstance(value, (str, int, float, bool)) and value is not None:
                _fail(where, f"panels.{name}.{key} must be a string, number, true/false or "
                             "null")


def model_to_open(entry: dict) -> str:
    """The name to open a session's model by: a hub model at the commit it was saved at
    (NAME@COMMIT), anything else by its name."""
    name, revision = entry["name"], entry.get("revision")
    if revision:
        return f"{name.split('@', 1)[0]}@{revision}"
    return name


def model_entry(name: str | None, layer) -> dict | None:
    """A model as a session names it (None without `layer`): as it was opened, else by the
    layer's name (a folder as an absolute path, so that the file opens from any working
    folder), with the commit it resolved to."""
    if layer is None:
        return None
    name = name or str(layer.name)
    if Path(name).expanduser().is_dir():
        name = str(Path(name).expanduser().absolute())
    return {"name": name, "revision": getattr(layer, "revision", None)}


def option_fits(value, default) -> bool:
    """Whether a stored option value has the type of the option's default (an int for a
    float option; a bool only for a bool option; anything for a default of None)."""
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    if default is None:
        return True
    return isinstance(value, type(default))


def option_changes(options: dict, defaults, takes=None) -> tuple[dict, list[str]]:
    """The stored `options` of one view that its options dataclass instance `defaults`
    takes (a field it has, a value that `option_fits` the field's default, and that
    `takes(key, value)` accepts when given), and a note for each one refused."""
    known = {f.name for f in fields(defaults)}
    changes, refused = {}, []
    for key, value in options.items():
        if key not in known:
            refused.append(f"{key} (unknown)")
        elif not option_fits(value, getattr(defaults, key)) or (
                takes is not None and not takes(key, value)):
            refused.append(f"{key} = {value!r} (not a value it takes)")
        else:
            changes[key] = value
    return changes, refused


def selection_in_range(selection: dict, n_heads: int, n_vocab: int, n_positions: int
                       ) -> tuple[dict, list[str]]:
    """The selection's head, query token, key token and query position (in that order)
    that a model with these sizes has (a token of -1: none), and "query token 60000" for
    each that it has not."""
    limits = {"head": (0, n_heads), "query_token": (-1, n_vocab), "key_token": (-1, n_vocab),
              "query_position": (0, n_positions)}
    fits, bad = {}, []
    for key, (low, high) in limits.items():
        value = selection.get(key, low)
        if low <= value < high:
            fits[key] = value
        else:
            bad.append(f"{key.replace('_', ' ')} {value}")
    return fits, bad
