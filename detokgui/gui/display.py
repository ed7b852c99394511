"""Whether the window can open here, checked before Qt is started.

Without a display, or with one of the libraries of Qt's X11 platform (xcb) missing, Qt
aborts the process (exit status 134, a core dump) with a message that names
libxcb-cursor0 whatever is missing. `display_problem` finds these cases first and says
what is wrong and what to do instead, in one line. No Qt import: it runs before Qt loads.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping

#: The system libraries Qt's xcb platform plugin loads (its ELF dependencies outside Qt,
#: PySide6 6.x on Linux), each with the Debian/Ubuntu package that installs it.
XCB_LIBRARIES = {
    "libxcb.so.1": "libxcb1",
    "libX11.so.6": "libx11-6",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libGL.so.1": "libgl1",
    "libEGL.so.1": "libegl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libdbus-1.so.3": "libdbus-1-3",
}

HEADLESS_WAYS = ("`detokgui export …` needs no display; `xvfb-run detokgui` opens the "
                 "window on a virtual screen; `QT_QPA_PLATFORM=offscreen` with --screenshot "
                 "saves a picture of it")
APT_HINT = "the README's apt-get line installs every library Qt needs"


def missing_libraries(libraries: Mapping[str, str] = XCB_LIBRARIES) -> list[str]:
    """The names in `libraries` (shared-library file names, as the dynamic loader looks
    them up) that cannot be loaded here."""
    missing = []
    for name in libraries:
        try:
            ctypes.CDLL(name)
        except OSError:
            missing.append(name)
    return missing


def x_server_answers(display: str) -> bool:
    """Whether the X server `display` (":0", "localhost:10.0") accepts a connection, asked
    through libxcb's public API (xcb_connect) as Qt's xcb platform will."""
    xcb = ctypes.CDLL("libxcb.so.1")
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = (ctypes.c_char_p, ctypes.c_void_p)
    xcb.xcb_connection_has_error.argtypes = (ctypes.c_void_p,)
    xcb.xcb_disconnect.argtypes = (ctypes.c_void_p,)
    connection = xcb.xcb_connect(display.encode(), None)
    try:
        return connection is not None and xcb.xcb_connection_has_error(connection) == 0
    finally:
        if connection is not None:
            xcb.xcb_disconnect(connection)  # also frees a connection in error


def uses_xcb(environ: Mapping[str, str]) -> bool:
    """Whether Qt would open the window through X11 (xcb) in this environment: asked
    for by QT_QPA_PLATFORM, or the default on Linux with an X display and no Wayland."""
    asked = environ.get("QT_QPA_PLATFORM", "")
    if asked:
        return asked.split(":")[0] == "xcb"
    return bool(environ.get("DISPLAY")) and not environ.get("WAYLAND_DISPLAY")


def display_problem(environ: Mapping[str, str] | None = None, platform: str | None = None,
                    libraries: Mapping[str, str] = XCB_LIBRARIES) -> str | None:
    """None when Qt can open a window here as far as can be told before starting it, else
    the one-line reason and the ways on. Only Linux is checked: with neither DISPLAY nor
    WAYLAND_DISPLAY nor QT_QPA_PLATFORM set there is no display; on X11, each of
    `libraries` must load and the X server named by DISPLAY must answer."""
    environ = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    if not platform.startswith("linux"):
        return None
    if not any(environ.get(v) for v in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")):
        return (f"the window needs a display and there is none (neither DISPLAY nor "
                f"WAYLAND_DISPLAY is set): {HEADLESS_WAYS}; {APT_HINT}")
    if not uses_xcb(environ):
        return None
    missing = missing_libraries(libraries)
    if not missing:
        display = environ.get("DISPLAY", "")
        if display and not x_server_answers(display):
            return (f"the window needs a display and the X server of DISPLAY={display} does "
                    f"not answer: {HEADLESS_WAYS}")
        return None
    packages = " ".join(dict.fromkeys(libraries[m] for m in missing))
    return (f"Qt's X11 platform cannot load {', '.join(missing)}: `sudo apt-get install "
            f"{packages}` installs {'them' if len(missing) > 1 else 'it'} ({APT_HINT}); "
            f"without the window, {HEADLESS_WAYS}")
