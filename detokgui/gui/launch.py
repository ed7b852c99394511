"""Start the GUI: argument parsing, the display check, QApplication and the process's
settings (`gui.process.configure_process`, called here only), main window, screenshot
mode."""

from __future__ import annotations

import os
import sys

from detokgui.gui.arguments import build_parser  # the one definition; re-exported
from detokgui.gui.display import display_problem

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
    """The --view names as the panels define them: the side panel's, then the tabs' in
    order (`gui.arguments.VIEW_NAMES` lists them for a parser that loads no Qt)."""
    from detokgui.gui.panels import PANEL_CLASSES, SIDE_PANEL_CLASSES

    return [cls.view_name for cls in (*SIDE_PANEL_CLASSES, *PANEL_CLASSES)]


def app_icon():
    from importlib.resources import files

    from PySide6.QtGui import QIcon

    return QIcon(str(files("detokgui.resources") / "detokgui.svg"))


def check_corpus_arg(paths) -> str | None:
    """None when the --corpus paths can be read as a corpus (each file starts with a
    readable document), else the one-line reason."""
    from detokgui.core.base.errors import InputError
    from detokgui.core.base.progress import run
    from detokgui.core.corpus.check import check_corpus

    try:
        run(check_corpus([str(p) for p in paths]))
    except InputError as exc:
        return f"--corpus: {exc}"
    except OSError as exc:
        return f"--corpus: {exc.filename}: {exc.strerror or exc}"
    return None


def check_session_arg(args) -> str | None:
    """None when the SESSION_FILE argument (if any) is a valid session and comes without
    --model/--compare (which it would contradict), else the one-line reason."""
    if args.session is None:
        return None
    if args.model or args.compare:
        return ("a session file opens its own models: give either SESSION_FILE or "
                "--model/--compare")
    from detokgui.core.base.errors import InputError
    from detokgui.core.base.session import read_session

    try:
        read_session(args.session)
    except InputError as exc:
        return str(exc)
    return None


def start_problem(args) -> str | None:
    """Why the window cannot open with `args` (one line), else None; checked in turn: the
    session file, --corpus ('sample' becomes the shipped sample corpus's path, as the
    Corpus menu opens it), --text-file, the display (without one Qt would abort the
    process, a core dump, with its own message), --device cuda."""
    if args.corpus:
        from detokgui.core.corpus.documents import sample_paths

        args.corpus = sample_paths(args.corpus)
    problem = check_session_arg(args) or (args.corpus and check_corpus_arg(args.corpus))
    if problem:
        return problem
    if args.text_file and not os.access(args.text_file, os.R_OK):
        return f"--text-file: cannot read {args.text_file}"
    if args.screenshot and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    problem = display_problem()
    if problem is None and args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            return "--device cuda was asked for but no CUDA device is available"
    return problem


def launch(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    problem = start_problem(args)
    if problem is not None:
        print(f"detokgui: error: {problem}", file=sys.stderr)
        return 2

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from detokgui.gui.main_window import MainWindow
    from detokgui.gui.process import configure_process

    quiet_qt_messages()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("detokgui")
    app.setApplicationName("detokgui")
    app.setWindowIcon(app_icon())
    configure_process(app)  # before the window, whose jobs may start as it is built
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
    # In the event loop's first pass, after configure_process froze what is alive then:
    # not a model being loaded (its garbage would never be collected).
    QTimer.singleShot(0, win, lambda: open_models(win, args))
    code = app.exec()
    return shooter.exit_code if args.screenshot else code


def open_models(win, args) -> None:
    """A session file's models, selection and options (`gui.session`); else --model as A
    (a failure is the error banner, never another model; without it the default model,
    or the demo when that is not downloaded yet: `open_default_model`), and --compare as
    B when given."""
    if args.session:
        from detokgui.gui.session import open_session

        open_session(win, args.session)
        return
    if args.model is None:
        win.open_default_model()
    else:
        win.load_model(args.model)
    if args.compare:
        win.compare_with(args.compare)
