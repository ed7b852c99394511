"""AppState: the one shared selection. Panels read it and write it; they never talk to
each other directly. Every setter emits only when the value really changes."""

from __future__ import annotations

from PySide6.QtCore import QMetaMethod, QObject, Signal


class AppState(QObject):
    """Model, head, query/key token, query position, token set, token sigma convention,
    corpus."""

    modelChanged = Signal(object)  # Layer0 or None
    headChanged = Signal(int)
    queryTokenChanged = Signal(int)
    keyTokenChanged = Signal(int)
    queryPositionChanged = Signal(int)
    tokenSetChanged = Signal(list)
    sigmaChanged = Signal(object)  # affinity.SigmaChoice
    corpusChanged = Signal(tuple)  # the corpus paths (str), () when none
    corpusRequested = Signal(tuple)  # paths to open as a chosen corpus (request_corpus)
    modelRequested = Signal(str)  # a model to open as the main model (request_model)

    def __init__(self, parent=None):
        from detokgui.core.affinity import SigmaChoice

        super().__init__(parent)
        self._layer = None
        self._serial = 0
        self._head = 0
        self._query = -1
        self._key = -1
        self._position = 0
        self._token_set: list[int] = []
        self._sigma = SigmaChoice()
        self._corpus: tuple[str, ...] = ()

    # -------------------------------------------------------------- read

    @property
    def layer(self):
        return self._layer

    @property
    def model_serial(self) -> int:
        """Counts model changes: identifies the model a result was computed with, without
        holding it (an id() can be reused by the next model)."""
        return self._serial

    @property
    def head(self) -> int:
        return self._head

    @property
    def query_token(self) -> int:
        """Selected query token id, -1 when none."""
        return self._query

    @property
    def key_token(self) -> int:
        return self._key

    @property
    def query_position(self) -> int:
        return self._position

    @property
    def token_set(self) -> list[int]:
        return list(self._token_set)

    @property
    def sigma(self):
        return self._sigma

    @property
    def corpus(self) -> tuple[str, ...]:
        """The files and folders of the user's corpus (see core.documents), () when none."""
        return self._corpus

    # -------------------------------------------------------------- write

    def set_model(self, layer) -> None:
        if layer is self._layer:
            return
        self._layer = layer
        self._serial += 1
        if layer is not None:
            self._head = min(self._head, layer.n_heads - 1)
            self._position = min(self._position, layer.n_positions - 1)
            self._query = self._query if 0 <= self._query < layer.n_vocab else -1
            self._key = self._key if 0 <= self._key < layer.n_vocab else -1
            self._token_set = [t for t in self._token_set if t < layer.n_vocab]
        self.modelChanged.emit(layer)

    def set_head(self, head: int) -> None:
        head = int(head)
        if self._layer is not None:
            head = max(0, min(head, self._layer.n_heads - 1))
        if head != self._head:
            self._head = head
            self.headChanged.emit(head)

    def set_query_token(self, token: int) -> None:
        token = int(token)
        if token != self._query and self._valid_token(token):
            self._query = token
            self.queryTokenChanged.emit(token)

    def set_key_token(self, token: int) -> None:
        token = int(token)
        if token != self._key and self._valid_token(token):
            self._key = token
            self.keyTokenChanged.emit(token)

    def set_query_position(self, position: int) -> None:
        position = int(position)
        if self._layer is not None:
            position = max(0, min(position, self._layer.n_positions - 1))
        if position != self._position:
            self._position = position
            self.queryPositionChanged.emit(position)

    def set_token_set(self, tokens) -> None:
        tokens = [int(t) for t in tokens if self._valid_token(int(t))]
        if tokens != self._token_set:
            self._token_set = tokens
            self.tokenSetChanged.emit(list(tokens))

    def set_sigma(self, choice) -> None:
        if choice != self._sigma:
            self._sigma = choice
            self.sigmaChanged.emit(choice)

    def set_corpus(self, paths) -> None:
        paths = tuple(str(p) for p in paths)
        if paths != self._corpus:
            self._corpus = paths
            self.corpusChanged.emit(paths)

    def request_corpus(self, paths) -> None:
        """Open `paths` as the user's chosen corpus: the window's corpus control, connected
        to `corpusRequested`, checks them off the GUI thread, then sets and remembers them;
        with nothing connected (a panel on its own) they become the corpus at once."""
        paths = tuple(str(p) for p in paths)
        if self.isSignalConnected(QMetaMethod.fromSignal(self.corpusRequested)):
            self.corpusRequested.emit(paths)
        else:
            self.set_corpus(paths)

    def request_model(self, name: str) -> None:
        """Open `name` (a folder, hub name or demo name) as the main model: the window,
        connected to `modelRequested`, loads it in the background like Model > Open."""
        self.modelRequested.emit(str(name))

    def _valid_token(self, token: int) -> bool:
        if token < 0:
            return token == -1
        return self._layer is None or token < self._layer.n_vocab

    # -------------------------------------------------------------- display

    def token_text(self, token: int) -> str:
        from detokgui.core.tokens import display_token

        if token < 0:
            return "(none)"
        return display_token(self._layer.tokenizer if self._layer else None, token)
