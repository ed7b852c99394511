"""Start the GUI: argument parsing, QApplication, main window, screenshot mode."""

from __future__ import annotations

import argparse
import os
import sys

from detokgui.help_texts import CORPUS_PATHS

#: Harmless warnings of the offscreen platform, dropped from stderr.
_NOISE = ("propagateSizeHints",)


def quiet_qt_messages() -> None:
    """Drop the offscreen platform's harmless warnings; pass everything else on."""
    from PySide6.QtCore import qInstallMessageHandler

    def handler(mode, context, message):
        if not any(n in message for n in _NOISE):
            print(message, file=sys.stderr)

    qInstallMessageHandler(handler)


def view_names() -> list[str]:
    """The --view names: the side panel's, then the tabs' in order."""
    from detokgui.gui.panels import PANEL_CLASSES, SIDE_PANEL_CLASSES

    return [cls.view_name for cls in (*SIDE_PANEL_CLASSES, *PANEL_CLASSES)]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="detokgui",
        description="Explore the first attention layer of GPT-2, GPT-Neo and OPT models from "
        "the weights alone. `detokgui export --help` lists the headless exports.",
    )
    p.add_argument("--model", default=None,
                   help="hub name (NAME or NAME@REVISION: a branch, tag or commit), local "
                   "checkpoint folder, 'demo' (a small trained model shipped with detokgui) or "
                   "'random-demo' (random weights); default gpt2, or the demo model with a "
                   "note when gpt2 is not downloaded yet")
    p.add_argument("--compare", metavar="MODEL",
                   help="also open MODEL (hub name, NAME@REVISION, folder, 'demo' or "
                   "'random-demo') as model B to compare with, as Model > Compare with… does")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None,
                   help="default: CUDA when available, else CPU")
    p.add_argument("--corpus", nargs="+", metavar="PATH",
                   help="open this corpus at start, as the Corpus menu does: " + CORPUS_PATHS)
    p.add_argument("--text-file", metavar="PATH",
                   help="open this text file in the Tokens view at start, as File > Open text "
                   "file does (any size)")
    p.add_argument("--screenshot", metavar="PATH",
                   help="load the model, draw, save a PNG of the window to PATH and exit")
    p.add_argument("--view", metavar="NAME", choices=view_names(),
                   help="the view to show first (with --screenshot: the one drawn): "
                        + ", ".join(view_names()))
    p.add_argument("--timeout", type=float, default=300.0,
                   help="with --screenshot: give up after this many seconds (default 300)")
    return p


def app_icon():
    from importlib.resources import files

    from PySide6.QtGui import QIcon

    return QIcon(str(files("detokgui.resources") / "detokgui.svg"))


def corpus_arg(paths) -> list[str]:
    """The --corpus paths, with 'sample' (when no such file exists) as the shipped sample
    corpus's path, as the Corpus menu's *Use sample corpus* opens it."""
    from pathlib import Path

    from detokgui.core.demo import sample_corpus
    from detokgui.core.documents import SAMPLE_NAME

    return [str(sample_corpus()) if p == SAMPLE_NAME and not Path(p).exists() else str(p)
            for p in paths]


def check_corpus_arg(paths) -> str | None:
    """None when the --corpus paths can be read as a corpus (each file starts with a
    readable document), else the one-line reason."""
    from detokgui.core.errors import InputError
    from detokgui.core.progress import run
    from detokgui.gui.corpus import check_corpus

    try:
        run(check_corpus([str(p) for p in paths]))
    except InputError as exc:
        return f"--corpus: {exc}"
    except OSError as exc:
        return f"--corpus: {exc.filename}: {exc.strerror or exc}"
    return None


def launch(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.corpus:
        args.corpus = corpus_arg(args.corpus)
        problem = check_corpus_arg(args.corpus)
        if problem is not None:
            print(f"detokgui: error: {problem}", file=sys.stderr)
            return 2
    if args.text_file and not os.access(args.text_file, os.R_OK):
        print(f"detokgui: error: --text-file: cannot read {args.text_file}", file=sys.stderr)
        return 2
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if args.screenshot and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print("detokgui: error: --device cuda was asked for but no CUDA device is available",
                  file=sys.stderr)
            return 2

    from PySide6.QtWidgets import QApplication

    from detokgui.gui.main_window import MainWindow

    quiet_qt_messages()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("detokgui")
    app.setApplicationName("detokgui")
    app.setWindowIcon(app_icon())
    win = MainWindow(model=None, device=args.device)
    if args.view and not win.show_view(args.view):
        names = ", ".join(win.view_names())
        print(f"detokgui: error: unknown view {args.view!r}; choose from {names}",
              file=sys.stderr)
        return 2
    if args.corpus:
        win.corpus.open(args.corpus)
    if args.text_file:
        win.panel("tokens").load_text_file(args.text_file)
    win.show()
    if args.screenshot:
        from detokgui.gui.screenshot import ScreenshotWhenIdle

        shooter = ScreenshotWhenIdle(win, args.screenshot, args.timeout)
        open_models(win, args)
        app.exec()
        return shooter.exit_code
    open_models(win, args)
    return app.exec()


def open_models(win, args) -> None:
    """--model as A (a failure is the error banner, never another model; without it the
    default model, or the demo when that is not downloaded yet: `open_default_model`),
    and --compare as B when given."""
    if args.model is None:
        win.open_default_model()
    else:
        win.load_model(args.model)
    if args.compare:
        win.compare_with(args.compare)
