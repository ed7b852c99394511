import contextlib
import gzip
import json
import os

# Must happen before any QApplication exists; harmless for the core tests.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import gui_marker
import pytest
import torch

from detokgui.core.model.sources.demo import sample_corpus, write_random_checkpoint


def real_weights_cached(repo: str = "gpt2") -> bool:
    """Whether the hub model `repo`'s weights are in the local Hugging Face cache."""
    try:
        from huggingface_hub import try_to_load_from_cache

        for fname in ("model.safetensors", "pytorch_model.bin"):
            hit = try_to_load_from_cache(repo, fname)
            if isinstance(hit, str):
                return True
    except (ImportError, OSError, ValueError):  # no hub library, or an unusable cache
        return False
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """A run that leaves out the gui tests (`-m "not gui"`) never imports Qt: pytest-qt,
    which imports it when it starts, is not loaded (`gui_marker`)."""
    if gui_marker.gui_excluded(config.getoption("markexpr")):
        config.pluginmanager.set_blocked(gui_marker.PYTEST_QT)
        gui_marker.block_qt()


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path, parent):
    """Under `-m "not gui"`, a test module that cannot be imported without Qt is not read
    at all (its tests are all gui)."""
    collectors = yield
    if (gui_marker.gui_excluded(parent.config.getoption("markexpr"))
            and any(isinstance(c, pytest.Module) for c in collectors)
            and gui_marker.needs_qt_to_import(file_path)):
        return [c for c in collectors if not isinstance(c, pytest.Module)]
    return collectors


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        if gui_marker.is_gui(item):
            item.add_marker(pytest.mark.gui)
    cached: dict[str, bool] = {}
    for item in items:
        mark = item.get_closest_marker("gpt2")  # the marker, not a parameter named gpt2
        if mark is None:
            continue
        repo = mark.kwargs.get("repo", "gpt2")
        if repo not in cached:
            cached[repo] = real_weights_cached(repo)
        if not cached[repo]:
            item.add_marker(pytest.mark.skip(
                reason=f"the real {repo} weights are not in the local Hugging Face cache"))


@pytest.fixture(scope="session")
def tiny_ckpt(tmp_path_factory):
    """Random GPT-2, d=64, 4 heads, 128 positions, real GPT-2 tokenizer."""
    return write_random_checkpoint(tmp_path_factory.mktemp("tiny"), seed=1)


@pytest.fixture(scope="session")
def tiny_layer(tiny_ckpt):
    from detokgui.core import Layer0

    return Layer0.from_pretrained(str(tiny_ckpt), device="cpu")


@pytest.fixture(scope="session")
def small_ckpt(tmp_path_factory):
    """Random GPT-2 with GPT-2-small dims (d=768, 12 heads, 1024 positions), one block."""
    return write_random_checkpoint(
        tmp_path_factory.mktemp("small"), n_embd=768, n_head=12, n_positions=1024, seed=2
    )


@pytest.fixture(scope="session")
def hf_eager():
    """Load a checkpoint folder as the transformers model with eager attention."""
    from transformers import GPT2LMHeadModel, GPT2Model

    def load(folder, prefixed=True):
        cls = GPT2LMHeadModel if prefixed else GPT2Model
        return cls.from_pretrained(str(folder), attn_implementation="eager").eval()

    return load


def model_attention(model, ids):
    """The model's own layer-0 attention probabilities, [H, n, n]."""
    with torch.no_grad():
        out = model(torch.tensor([list(ids)]), output_attentions=True)
    return out.attentions[0][0]


def isolated_environment(root) -> dict:
    """os.environ for a `detokgui` subprocess whose settings and caches live under `root`
    (HOME, XDG_CONFIG_HOME, XDG_CACHE_HOME, XDG_DATA_HOME, DETOKGUI_CACHE_DIR), so that no
    test touches the user's real configuration (Model > Recent) or cache."""
    from pathlib import Path

    root = Path(root)
    env = dict(os.environ)
    for var, sub in (("HOME", "home"), ("XDG_CONFIG_HOME", "config"),
                     ("XDG_CACHE_HOME", "cache"), ("XDG_DATA_HOME", "data"),
                     ("DETOKGUI_CACHE_DIR", "cache/detokgui")):
        (root / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(root / sub)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    env["HF_HUB_OFFLINE"] = "1"
    return env


#: The environment every `detokgui` subprocess of the tests runs with (set for the session).
SUBPROCESS_ENV: dict = {}


@pytest.fixture(scope="session", autouse=True)
def isolated_env(tmp_path_factory):
    """Environment for subprocesses (`isolated_environment`), also kept in SUBPROCESS_ENV
    for helpers that are plain functions."""
    SUBPROCESS_ENV.clear()
    SUBPROCESS_ENV.update(isolated_environment(tmp_path_factory.mktemp("subprocess-home")))
    return SUBPROCESS_ENV


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    """detokgui's cache goes to a temp folder, never to the user's real cache."""
    os.environ["DETOKGUI_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(autouse=True)
def _gui_isolation(request):
    """For gui tests only (the others never import Qt): settings in a temp folder, garbage
    collected on the GUI thread, modal dialogs recorded instead of shown
    (`modal_dialogs`)."""
    if request.node.get_closest_marker("gui") is not None:
        request.getfixturevalue("_isolated_qsettings")
        request.getfixturevalue("_gui_thread_garbage_collection")
        request.getfixturevalue("modal_dialogs")


@pytest.fixture(scope="session")
def _gui_thread_garbage_collection(qapp):
    """Garbage is collected on the GUI thread only, as in the app (`gui.process`): a
    collection in a job's worker thread that frees Qt objects deadlocks or crashes."""
    from detokgui.gui.process import collect_garbage_on_gui_thread

    collect_garbage_on_gui_thread(qapp)


@pytest.fixture(scope="session")
def _isolated_qsettings(tmp_path_factory):
    """Settings go to a temp folder, never to the user's real configuration."""
    from PySide6.QtCore import QCoreApplication, QSettings

    QSettings.setDefaultFormat(QSettings.IniFormat)
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope,
                      str(tmp_path_factory.mktemp("settings")))
    QCoreApplication.setOrganizationName("detokgui-tests")
    QCoreApplication.setApplicationName("detokgui-tests")


@pytest.fixture
def window(qtbot, tiny_ckpt):
    """The real main window with the tiny random checkpoint loaded through the GUI."""
    win = open_window(qtbot, tiny_ckpt)
    yield win
    close_jobs(win)


@pytest.fixture
def vocab_window(qtbot, small_vocab_ckpt):
    """The real main window with the 400-token random model (`small_vocab_ckpt`) loaded."""
    win = open_window(qtbot, small_vocab_ckpt)
    yield win
    close_jobs(win)


def open_window(qtbot, folder, timeout=60000):
    """A new main window (fresh settings, 1400 x 900, shown) that has loaded `folder`
    and finished its first computations."""
    from PySide6.QtCore import QSettings

    from detokgui.gui.main_window import MainWindow
    from detokgui.gui.options import flush_settings

    flush_settings()  # nothing of an earlier test is written later
    QSettings().clear()
    win = MainWindow(model=str(folder), device="cpu")
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    qtbot.waitUntil(lambda: win.state.layer is not None, timeout=timeout)
    wait_idle(qtbot, win, timeout=timeout)
    return win


def close_jobs(win):
    win.jobs.cancel()
    win.jobs.wait(10000)


def wait_idle(qtbot, win, timeout=30000):
    """Until no job runs (results drawn). A page just shown starts computing after its
    first paint: the event loop runs a little before the runner is asked."""
    qtbot.wait(20)
    qtbot.waitUntil(lambda: not win.jobs.busy, timeout=timeout)
    qtbot.wait(20)


def resize_window(qtbot, win, width, height):
    """Resize the window; until it has that width and is idle."""
    win.resize(width, height)
    qtbot.waitUntil(lambda: win.width() == width)
    wait_idle(qtbot, win)


def top_left(widget, panel):
    """Where `widget`'s top-left corner is in `panel`."""
    return widget.mapTo(panel, widget.rect().topLeft())


# --------------------------------------------------------------------------- modal dialogs

_MODAL = {
    "QMessageBox": ("warning", "information", "critical", "question", "about", "exec"),
    "QFileDialog": ("getSaveFileName", "getOpenFileName", "getOpenFileNames",
                    "getExistingDirectory"),
    "QInputDialog": ("getText", "getItem", "getInt", "getDouble", "exec"),
    "QDialog": ("exec",),
}


class ModalDialogs(list):
    """Every modal dialog the code under test tried to open, as (class.method, args).

    No dialog really opens: nothing would close it and the test would block. A dialog
    that a test did not ask for (by patching the call itself, or by reading and clearing
    this list through the `modal_dialogs` fixture) fails the test at teardown."""


@pytest.fixture
def modal_dialogs(monkeypatch):
    from PySide6 import QtWidgets

    seen = ModalDialogs()

    def refuse(name):
        def call(*args, **kwargs):
            seen.append((name, args))
            if name.endswith(".exec"):
                return 0
            if name.startswith("QMessageBox."):
                return QtWidgets.QMessageBox.StandardButton.Cancel
            if name == "QFileDialog.getOpenFileNames":
                return [], ""
            if name in ("QFileDialog.getSaveFileName", "QFileDialog.getOpenFileName"):
                return "", ""
            if name == "QFileDialog.getExistingDirectory":
                return ""
            return None, False  # QInputDialog.get*: cancelled

        return staticmethod(call) if not name.endswith(".exec") else call

    for cls_name, methods in _MODAL.items():
        cls = getattr(QtWidgets, cls_name)
        for m in methods:
            monkeypatch.setattr(cls, m, refuse(f"{cls_name}.{m}"))
    yield seen
    assert not seen, f"the code under test opened modal dialogs: {[n for n, _ in seen]}"


# --------------------------------------------------------------------------- corpus models

#: The sample corpus the package ships (`detokgui.resources`), found as the app finds it.
SAMPLE_CORPUS = sample_corpus()


@pytest.fixture(scope="session")
def small_vocab_ckpt(tmp_path_factory):
    """Random GPT-2 (d=32, 4 heads, 64 positions) with a real byte-level BPE tokenizer of
    400 tokens trained on the start of each sample-corpus document: whole-vocabulary
    passes take milliseconds, and corpus text tokenizes into real tokens."""
    import gzip
    import json

    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2TokenizerFast

    with gzip.open(SAMPLE_CORPUS, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"][:5000] for line in f]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=400, min_frequency=2,
                            special_tokens=["<|endoftext|>"], show_progress=False)
    eot = "<|endoftext|>"
    tok = GPT2TokenizerFast(tokenizer_object=bpe._tokenizer, eos_token=eot, bos_token=eot,
                            unk_token=eot)
    folder = write_random_checkpoint(tmp_path_factory.mktemp("v400"), n_embd=32, n_head=4,
                                     n_positions=64, vocab_size=len(tok), seed=7,
                                     tokenizer=False)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def small_vocab_layer(small_vocab_ckpt):
    from detokgui.core import Layer0

    return Layer0.from_pretrained(str(small_vocab_ckpt), device="cpu", dtype=torch.float64)


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory):
    """The first 1500 characters of 30 sample-corpus documents."""
    with gzip.open(SAMPLE_CORPUS, "rt", encoding="utf-8") as f:
        docs = [json.loads(line)["text"][:1500] for line in f][:30]
    path = tmp_path_factory.mktemp("corpus") / "small.jsonl"
    path.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    return path


@pytest.fixture
def empty_hf_cache(monkeypatch, tmp_path):
    """An empty Hugging Face cache: gpt2 is not in it."""
    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(cache))
    return cache


def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then let go)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def ctrl_c_raises():
    """Within: SIGINT raises KeyboardInterrupt, even in a process started as a shell's
    background job (which ignores SIGINT), and a subprocess started here begins with
    SIGINT's default disposition (an ignored signal stays ignored across exec, a handled
    one does not)."""
    import signal

    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
