"""Without a display, or without the libraries of Qt's X11 platform, `detokgui` says so in
one line and exits with status 2, instead of Qt aborting the process (status 134, a core
dump) with a message naming libxcb-cursor0 whatever is missing (issue 41, point 8)."""

import subprocess
import sys

from detokgui.gui.display import XCB_LIBRARIES, display_problem, missing_libraries

ABSENT = {"libdetokgui-absent.so.7": "libdetokgui-absent7"}


def test_a_library_that_is_not_there_is_named():
    assert missing_libraries(ABSENT) == ["libdetokgui-absent.so.7"]
    assert missing_libraries({"libc.so.6": "libc6"}) == []


def test_missing_xcb_libraries_are_named_with_their_packages():
    libraries = {"libc.so.6": "libc6", **ABSENT}
    problem = display_problem({"DISPLAY": ":0"}, "linux", libraries)
    assert "libdetokgui-absent.so.7" in problem and "libc.so.6" not in problem
    assert "apt-get install libdetokgui-absent7" in problem
    assert "detokgui export" in problem and "xvfb-run" in problem
    assert "\n" not in problem
    # asked for by name, the same check
    assert display_problem({"QT_QPA_PLATFORM": "xcb"}, "linux", libraries) == problem


def test_no_display_and_the_ways_on():
    problem = display_problem({}, "linux")
    assert "neither DISPLAY nor WAYLAND_DISPLAY" in problem
    for way in ("detokgui export", "xvfb-run detokgui", "QT_QPA_PLATFORM=offscreen",
                "apt-get line"):
        assert way in problem
    assert "\n" not in problem


def test_nothing_to_check_where_qt_is_told_or_elsewhere():
    assert display_problem({"QT_QPA_PLATFORM": "offscreen"}, "linux", ABSENT) is None
    assert display_problem({"WAYLAND_DISPLAY": "wayland-0"}, "linux", ABSENT) is None
    assert display_problem({}, "darwin", ABSENT) is None
    assert display_problem({}, "win32", ABSENT) is None


def test_the_platform_plugins_own_libraries_are_listed():
    """Every system library the xcb plugin of the installed PySide6 needs is in
    XCB_LIBRARIES (read from the plugin's dynamic section where readelf is installed)."""
    import shutil
    from pathlib import Path

    import PySide6
    import pytest

    plugin = Path(PySide6.__file__).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    if not sys.platform.startswith("linux") or not plugin.exists() or not shutil.which("readelf"):
        pytest.skip("needs Linux, PySide6's xcb plugin and readelf")
    out = subprocess.run(["readelf", "-d", str(plugin)], capture_output=True, text=True,
                         check=True).stdout
    needed = {line.split("[")[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line}
    system = {n for n in needed if not n.startswith("libQt6")
              and n not in ("libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1")}
    assert system <= set(XCB_LIBRARIES)


def test_detokgui_without_a_display_exits_with_one_line():
    from conftest import SUBPROCESS_ENV

    env = {k: v for k, v in SUBPROCESS_ENV.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    out = subprocess.run([sys.executable, "-m", "detokgui", "--model", "demo"], env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("detokgui: error: the window needs a display")
    assert "xvfb-run detokgui" in lines[0] and "detokgui export" in lines[0]
