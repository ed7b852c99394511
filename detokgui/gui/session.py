"""Sessions in the window: *File > Save session…* writes what the window shows
(`session_of`: the models, the A/B pair, the selection, the corpus, the current view and
every panel's options) to a session file (`core.base.session`); *File > Open session…*
and `detokgui FILE` restore one (`SessionRestore`).

Restoring never stops at the first thing it cannot do: a model that does not open, a
corpus that moved, a view or an option this version does not know are each named in the
window's banner, and the rest is restored. A file that is not a valid session changes
nothing (a warning says why). Models load in the background as always; the selection is
applied once model A is shown, B's head once B is."""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QFileDialog, QMessageBox

from detokgui.core.base.errors import InputError
from detokgui.core.base.session import (
    MAX_TEXT_CHARS,
    SUFFIX,
    empty_session,
    model_entry,
    model_to_open,
    option_changes,
    read_session,
    selection_in_range,
    write_session,
)
from detokgui.core.corpus.documents import sample_paths, stored_path
from detokgui.core.model.conventions import SigmaChoice
from detokgui.gui.banner import NOTICE
from detokgui.gui.options import remember, remembered
from detokgui.gui.sharing import panel_options

FILTER = f"detokgui sessions (*{SUFFIX} *.json)"
LAST_FOLDER = "session/folder"


def session_of(window) -> dict:
    """The session (a `core.base.session` dict) of what `window` shows now."""
    s = window.state
    session = empty_session()
    session["models"] = {"a": model_entry(window.models.opened_a, s.layer),
                         "b": model_entry(window.models.opened_b, s.layer_b)}
    pair = s.head_pair if s.layer_b is not None else None
    session["selection"] = {
        "head": s.head, "head_b": pair[1] if pair else None,
        "query_token": s.query_token, "key_token": s.key_token,
        "query_position": s.query_position, "token_set": [int(t) for t in s.token_set],
        "text": window.panel("tokens").current_text[:MAX_TEXT_CHARS],
        "sigma": {"kind": s.sigma.convention, "i": int(s.sigma.positions[0]),
                  "j": int(s.sigma.positions[1])},
    }
    if s.corpus:
        session["corpus"] = {"paths": [stored_path(p) for p in s.corpus],
                             "text_column": getattr(s.corpus, "text_column", "text")}
    panel = window.current_panel()
    session["view"] = panel.view_name if panel is not None else None
    session["panels"] = {p.view_name: options for p in window.panels
                         if (options := panel_options(p))}
    return session


def save_session(window, path: str | Path) -> Path:
    """Write `window`'s session to `path`; later exports name it in their provenance."""
    written = write_session(path, session_of(window))
    window.state.session_path = str(Path(path).absolute())
    return written


# --------------------------------------------------------------------------- restoring


class SessionRestore(QObject):
    """Restores one session into a window (`start`); `finished` gives the things that
    were not restored (each a line), once model A (and B) are shown or failed."""

    finished = Signal(list)

    def __init__(self, window, session: dict, path: str | Path):
        super().__init__(window)
        self.window, self.session, self.path = window, session, str(Path(path).absolute())
        self.problems: list[str] = []
        self.done = False
        self.a_name: str | None = None  # model A as asked for, while it loads

    # ------------------------------------------------------------------ steps

    def start(self) -> None:
        w = self.window
        w.state.session_path = self.path
        self._options()
        view = self.session.get("view")
        if view and not w.show_view(view):
            self.problems.append(f"the view “{view}” (this version has no such view)")
        self._corpus()
        a = self.session["models"].get("a")
        if a is None:
            self._finish()
            return
        name = model_to_open(a)
        if w.state.layer is not None and self._same(w.models.opened_a, w.state.layer, a):
            self._a_shown()
            return
        self.a_name = name
        w.state.modelChanged.connect(self._a_loaded)
        w.models.load_model(name, on_error=self._a_failed)

    @staticmethod
    def _same(opened: str | None, layer, entry: dict) -> bool:
        return opened == entry["name"] and getattr(layer, "revision", None) == entry.get("revision")

    def _options(self) -> None:
        for view, options in self.session["panels"].items():
            panel = self.window.panel(view)
            bound = getattr(panel, "options", None)
            if panel is None or bound is None:
                self.problems.append(f"the options of the view “{view}” (this version has "
                                     "no such view)")
                continue
            def offered(key, value, widgets=bound.widgets) -> bool:
                """False for a combo box's choice that it no longer offers."""
                widget = widgets.get(key)
                return not (isinstance(widget, QComboBox) and widget.findData(value) < 0)

            changes, refused = option_changes(options, bound.cls(), offered)
            if refused:
                self.problems.append(f"{panel.title}: option {', '.join(refused)}")
            try:
                bound.set(**changes)
            except (TypeError, ValueError) as exc:
                self.problems.append(f"{panel.title}: its options ({exc})")

    def _corpus(self) -> None:
        corpus = self.session.get("corpus")
        control = self.window.corpus
        if corpus is None:
            if self.window.state.corpus:
                control.clear()
            return
        paths = sample_paths(corpus["paths"])
        missing = [p for p in paths if not Path(p).exists()]
        if missing:
            self.problems.append(f"the corpus: {', '.join(missing)} moved or was deleted")
            return
        control.text_column = corpus.get("text_column") or "text"
        control.open(paths)

    def _a_failed(self, exc, _message: str = "") -> None:
        self._disconnect_a()
        self.window.models.loading_name = None
        self.window.models.loadingChanged.emit()
        name = model_to_open(self.session["models"]["a"])
        self._finish(f"model A, {name}: {exc}; the selection (its token ids) and model B "
                     "were not restored either")

    def _disconnect_a(self) -> None:
        _disconnect((self.window.state.modelChanged, self._a_loaded))

    def _a_loaded(self, layer) -> None:
        if layer is None:
            return
        self._disconnect_a()
        if self.window.models.opened_a != self.a_name:  # cancelled, another model opened
            self._finish(f"model A, {self.a_name}: another model was opened before it; the "
                         "selection and model B were not restored")
            return
        self._a_shown()

    def _a_shown(self) -> None:
        self._selection()
        w = self.window
        b = self.session["models"].get("b")
        if b is None:
            if w.state.layer_b is not None:
                w.close_comparison()
            self._finish()
            return
        w.state.compareChanged.connect(self._b_loaded)
        w.models.loadingChanged.connect(self._b_maybe_failed)
        if w.state.layer_b is not None and self._same(w.models.opened_b, w.state.layer_b, b):
            self._b_loaded(w.state.layer_b)
            return
        w.compare_with(model_to_open(b))

    def _selection(self) -> None:
        s, sel = self.window.state, self.session["selection"]
        layer = s.layer
        fits, bad = selection_in_range(sel, layer.n_heads, layer.n_vocab, layer.n_positions)
        for key, value in fits.items():
            getattr(s, f"set_{key}")(value)  # set_head, set_query_token, ...
        text = sel.get("text")
        if text is None:  # the token set alone: its tokens as the text they spell
            tokens = sel.get("token_set", [])
            kept = [t for t in tokens if 0 <= t < layer.n_vocab]
            if len(kept) != len(tokens):
                bad.append(f"{len(tokens) - len(kept)} ids of the token set")
            if kept and layer.tokenizer is not None:
                text = layer.tokenizer.decode(kept)
            else:
                s.set_token_set(kept)
        if text is not None:
            self.window.panel("tokens").set_text(text)  # its tokens become the token set
        sigma = sel.get("sigma") or {"kind": "mean"}
        s.set_sigma(SigmaChoice(sigma["kind"], (sigma.get("i", 0), sigma.get("j", 0))))
        if bad:
            self.problems.append(f"the selection's {', '.join(bad)} (outside {layer.name}'s "
                                 "range)")

    def _b_loaded(self, layer_b) -> None:
        """B is shown once its tokens are paired with A's (a pair of heads chosen
        together is kept from then on); B closed meanwhile: it cannot be compared."""
        if self.done:
            return
        if layer_b is None:
            if self.window.models.loading_b_name is None:
                self._disconnect_b()
                name = model_to_open(self.session["models"]["b"])
                self._finish(f"model B, {name}: it cannot be compared with model A")
            return
        if self.window.state.pair is None:
            return
        self._disconnect_b()
        self._b_shown()

    def _b_shown(self) -> None:
        head_b = self.session["selection"].get("head_b")
        s = self.window.state
        if head_b is not None:
            if 0 <= head_b < s.layer_b.n_heads:
                s.set_head_pair(s.head, head_b)
            else:
                self.problems.append(f"B's head {head_b} (outside {s.layer_b.name}'s heads)")
        self._finish()

    def _b_maybe_failed(self) -> None:
        m = self.window.models
        if self.done or m.loading_b_name is not None or not m.compare_error:
            return
        self._disconnect_b()
        name = model_to_open(self.session["models"]["b"])
        self._finish(f"model B, {name}: {m.compare_error}")

    def _disconnect_b(self) -> None:
        _disconnect((self.window.state.compareChanged, self._b_loaded),
                    (self.window.models.loadingChanged, self._b_maybe_failed))

    def _finish(self, problem: str | None = None) -> None:
        """Say what was not restored (with `problem`, the step's that ended the restore)
        once that step has shown its own messages (a failed model B's banner comes after
        the signal that ended it)."""
        if problem is not None:
            self.problems.append(problem)
        if self.done:
            return
        self.done = True
        QTimer.singleShot(0, self, self._report)

    def _report(self) -> None:
        w, name = self.window, Path(self.path).name
        if self.problems:
            items = "".join(f"<li>{html.escape(p)}</li>" for p in self.problems)
            w.banner.show_text(f"<b>Session {html.escape(name)} restored, except:</b>"
                               f"<ul style='margin: 0'>{items}</ul>", kind=NOTICE)
        else:
            w.show_message(f"Session {name} restored", 8000)
        self.finished.emit(list(self.problems))


def _disconnect(*connections) -> None:
    """Disconnect each (signal, slot), whether or not it is still connected."""
    for signal, slot in connections:
        try:
            signal.disconnect(slot)
        except (RuntimeError, TypeError):
            pass


def open_session(window, path: str | Path) -> SessionRestore | None:
    """Restore the session file at `path` into `window`; a file that cannot be read or is
    not a valid session changes nothing and is said in a warning (None is returned)."""
    try:
        session = read_session(path)
    except InputError as exc:
        QMessageBox.warning(window, "Open session", f"{exc} Nothing was changed.")
        return None
    restore = SessionRestore(window, session, path)
    restore.start()
    return restore


# --------------------------------------------------------------------------- dialogs


def ask_save(window) -> None:
    """File > Save session…: ask for a file and write the session there."""
    start = window.state.session_path or str(
        Path(remembered(LAST_FOLDER, str(Path.home()))) / f"session{SUFFIX}")
    path, _ = QFileDialog.getSaveFileName(window, "Save session", start, FILTER)
    if not path:
        return
    if not path.endswith(".json"):
        path += SUFFIX
    remember(LAST_FOLDER, str(Path(path).parent))
    try:
        save_session(window, path)
    except (OSError, InputError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        QMessageBox.warning(window, "Save session",
                            f"Could not write {path}: {reason}. Nothing was changed there.")
        return
    window.show_message(f"Saved the session to {path}", 8000)


def ask_open(window) -> None:
    """File > Open session…: ask for a session file and restore it."""
    path, _ = QFileDialog.getOpenFileName(window, "Open session",
                                          remembered(LAST_FOLDER, str(Path.home())), FILTER)
    if path:
        remember(LAST_FOLDER, str(Path(path).parent))
        open_session(window, path)
