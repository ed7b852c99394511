"""AppState: the one shared selection. Panels read it and write it; they never talk to
each other directly. Every setter emits only when the value really changes."""

from __future__ import annotations

from PySide6.QtCore import QMetaMethod, QObject, Signal

from detokgui.core.corpus.spec import as_corpus
from detokgui.core.model.tokens import display_token


class AppState(QObject):
    """Model, head, query/key token, query position, token set, token sigma convention,
    corpus; and an optional second model B to compare with (`layer_b`), the `pair` of the
    two (core.compare.pair.Pair: tokens of A in B) and the head matching once computed.

    A's selection maps to B: `query_token_b` / `key_token_b` through the pair (None while
    B lacks the token), `head_b` through the matching (or a pair of heads chosen together,
    `set_head_pair`). B is held here only: closing or replacing it drops every reference
    this object has to it, its pair and its matching."""

    modelChanged = Signal(object)  # Layer0 or None
    headChanged = Signal(int)
    queryTokenChanged = Signal(int)
    keyTokenChanged = Signal(int)
    queryPositionChanged = Signal(int)
    tokenSetChanged = Signal(list)
    sigmaChanged = Signal(object)  # affinity.SigmaChoice
    corpusChanged = Signal(tuple)  # the corpus paths (str), () when none
    corpusRequested = Signal(tuple)  # paths to open as a chosen corpus (request_corpus)
    compareChanged = Signal(object)  # B (Layer0) or None; also when the pair changes
    matchingChanged = Signal(object)  # core.compare.pair.HeadMatching or None
    headBChanged = Signal(int)  # B's head matched to A's selected one, -1 when none
    compareRequested = Signal()  # a panel asks for Model > Compare with… (request_compare)
    modelRequested = Signal(str)  # a model to open as the main model (request_model)

    def __init__(self, parent=None):
        from detokgui.core.model.conventions import SigmaChoice

        super().__init__(parent)
        self._layer = None
        self._serial = 0
        self._head = 0
        self._query = -1
        self._key = -1
        self._position = 0
        self._token_set: list[int] = []
        self._sigma = SigmaChoice()
        self._corpus: tuple[str, ...] = as_corpus(())
        self._layer_b = None
        self._pair = None
        self._matching = None
        self._compare_serial = 0
        self._head_pair: tuple[int, int] | None = None  # (head A, head B) chosen together
        #: The session file the window was opened from or last saved to (`gui.session`);
        #: every export's provenance record names it. None before either.
        self.session_path: str | None = None

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
        """The files and folders of the user's corpus (see core.corpus.documents), () when none."""
        return self._corpus

    @property
    def layer_b(self):
        """The model compared with (B), None when none."""
        return self._layer_b

    @property
    def pair(self):
        """core.compare.pair.Pair(A, B) once made for the current A and B, else None."""
        return self._pair

    @property
    def matching(self):
        """core.compare.pair.HeadMatching of the current pair once computed, else None."""
        return self._matching

    @property
    def compare_serial(self) -> int:
        """Counts changes of B and of its pair (as model_serial counts A's); a result made
        with one pair is not shown with another."""
        return self._compare_serial

    @property
    def head_b(self) -> int | None:
        """B's head shown next to A's selected head: the one chosen with it
        (`set_head_pair`), else its match in the head matching; None before the matching."""
        if self.head_pair is not None:
            return self.head_pair[1]
        return None if self._matching is None else self._matching.match_of_a(self._head)

    @property
    def query_token_b(self) -> int | None:
        """The query token's id in B (None: B lacks it, or there is no pair)."""
        return self._token_in_b(self._query)

    @property
    def key_token_b(self) -> int | None:
        return self._token_in_b(self._key)

    def _token_in_b(self, token: int) -> int | None:
        if self._pair is None or token < 0:
            return None
        return self._pair.token_in_b(token)

    # -------------------------------------------------------------- write

    def set_model(self, layer) -> None:
        if layer is self._layer:
            return
        head_b = self.head_b
        self._layer = layer
        self._serial += 1
        if self._pair is not None or self._matching is not None:
            # made for the previous A: dropped (the pair holds that model)
            self._pair = self._matching = None
            self._compare_serial += 1
            self._head_pair = None
        if layer is not None:
            self._fit_selection(layer)
        self.modelChanged.emit(layer)
        if self._layer_b is not None:
            self.compareChanged.emit(self._layer_b)
        self._emit_head_b(head_b)

    def set_head(self, head: int) -> None:
        head = int(head)
        if self._layer is not None:
            head = max(0, min(head, self._layer.n_heads - 1))
        if head != self._head:
            head_b = self.head_b
            self._head = head
            self._head_pair = None
            self.headChanged.emit(head)
            self._emit_head_b(head_b)

    @property
    def head_pair(self) -> tuple[int, int] | None:
        """(A's head, B's head) when the two were chosen together (`set_head_pair`) and A's
        head is still selected; None when B's head follows the matching."""
        if self._head_pair is not None and self._head_pair[0] == self._head:
            return self._head_pair
        return None

    def set_head_pair(self, head_a: int, head_b: int) -> None:
        """Select A's head `head_a` with B's head `head_b` beside it (a cell of the head
        matching), whether or not the matching pairs them; selecting another head of A
        goes back to the matching."""
        before = self.head_b
        self.set_head(head_a)
        if self._layer_b is not None and self._head == int(head_a):
            b = max(0, min(int(head_b), self._layer_b.n_heads - 1))
            self._head_pair = (self._head, b)
        self._emit_head_b(before)

    def _fit_selection(self, layer) -> None:
        """Keep the head, query position and tokens within `layer`'s."""
        self._head = min(self._head, layer.n_heads - 1)
        self._position = min(self._position, layer.n_positions - 1)
        self._query = self._query if 0 <= self._query < layer.n_vocab else -1
        self._key = self._key if 0 <= self._key < layer.n_vocab else -1
        self._token_set = [t for t in self._token_set if t < layer.n_vocab]

    def _emit_head_b(self, before: int | None) -> None:
        now = self.head_b
        if now != before:
            self.headBChanged.emit(-1 if now is None else now)

    def set_compare(self, layer_b, pair=None) -> None:
        """B and the pair (A, B) made for it (None: not made yet); the matching is dropped.
        `set_compare(None)` closes the comparison."""
        if layer_b is None:
            pair = None
        if layer_b is self._layer_b and pair is self._pair:
            return
        head_b = self.head_b
        self._layer_b, self._pair, self._matching = layer_b, pair, None
        self._head_pair = None
        self._compare_serial += 1
        self.compareChanged.emit(layer_b)
        self.matchingChanged.emit(None)
        self._emit_head_b(head_b)

    def set_matching(self, matching) -> None:
        if matching is self._matching:
            return
        head_b = self.head_b
        self._matching = matching
        self.matchingChanged.emit(matching)
        self._emit_head_b(head_b)

    def swap_models(self) -> None:
        """B becomes A and A becomes B, with the pair and the matching turned round (none
        recomputed); the selected tokens and head follow to the other model where they
        can (a token the new A lacks stays as it was, if valid there)."""
        if self._layer_b is None or self._layer is None:
            return
        query_b, key_b, head_b = self.query_token_b, self.key_token_b, self.head_b
        before = (self._query, self._key, self._head)
        a, b = self._layer, self._layer_b
        self._layer, self._layer_b = b, a
        from detokgui.core.compare.views import swapped_pair

        self._pair = None if self._pair is None else swapped_pair(self._pair)
        self._matching = None if self._matching is None else self._matching.swapped()
        self._head_pair = None
        self._serial += 1
        self._compare_serial += 1
        self._query = query_b if query_b is not None else self._query
        self._key = key_b if key_b is not None else self._key
        self._head = head_b if head_b is not None else self._head
        self._fit_selection(b)
        self.modelChanged.emit(b)
        self.compareChanged.emit(a)
        self.matchingChanged.emit(self._matching)
        after = (self._query, self._key, self._head)
        for signal, old, new in zip((self.queryTokenChanged, self.keyTokenChanged,
                                     self.headChanged), before, after):
            if new != old:
                signal.emit(new)
        self._emit_head_b(head_b)

    def request_compare(self) -> None:
        """Ask the window to open Model > Compare with… (panels have no window)."""
        self.compareRequested.emit()

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
        """The corpus (paths, or a `core.corpus.spec.Corpus` with how it is read and
        counted); a corpus equal to the last (the same paths and text column) is kept
        without a signal: its counting options say only how counts are made."""
        paths = as_corpus(paths)
        changed = paths != self._corpus
        self._corpus = paths
        if changed:
            self.corpusChanged.emit(paths)

    def request_corpus(self, paths) -> None:
        """Open `paths` as the user's chosen corpus: the window's corpus control, connected
        to `corpusRequested`, checks them off the GUI thread, then sets and remembers them;
        with nothing connected (a panel on its own) they become the corpus at once."""
        paths = as_corpus(paths)
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
        if token < 0:
            return "(none)"
        return display_token(self._layer.tokenizer if self._layer else None, token)

    def token_text_b(self, token: int | None) -> str:
        """A token of B as B's tokenizer shows it."""
        if token is None or token < 0:
            return "(none)"
        return display_token(self._layer_b.tokenizer if self._layer_b else None, token)
