"""Exports are atomic: a full disk or a failing writer raises (CLI: exit 2 and one line;
GUI: a warning), the previous file at the path is intact and no temporary file remains."""

import errno
import os
import resource
import subprocess
import sys

import pytest
from conftest import SUBPROCESS_ENV, wait_idle

from detokgui.core.base import atomic

needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
#: What `detokgui export heatmap` writes (its PNG and SVG drawn by matplotlib).
HEATMAP_FORMATS = ["csv", "png", "svg"]


def _limit_file_size():
    # Writes past 2000 bytes fail with EFBIG, as on a disk that fills up mid-write.
    resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))


def run_cli_limited(*args):
    return subprocess.run([sys.executable, "-m", "detokgui", "export", *args],
                          check=False, capture_output=True, text=True, timeout=300, env=SUBPROCESS_ENV,
                          preexec_fn=_limit_file_size)


CLI_EXPORTS = [
    ("sigma", []),
    ("terms", ["--text", " North Korea and South Korea"]),
    ("heatmap", ["--tokens", " North Korea and South Korea", "--head", "1"]),
]


@pytest.mark.parametrize("fmt", HEATMAP_FORMATS)
def test_cli_write_failure_keeps_previous_file(tiny_ckpt, tmp_path, fmt):
    what, extra = ("heatmap", CLI_EXPORTS[2][1]) if fmt != "csv" else CLI_EXPORTS[1]
    out = tmp_path / f"out.{fmt}"
    out.write_bytes(b"previous export")
    r = run_cli_limited(what, "--model", str(tiny_ckpt), *extra, "--out", str(out))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "File too large" in lines[0] and str(out) in lines[0], r.stderr
    assert "Traceback" not in r.stderr and "wrote" not in r.stdout
    assert out.read_bytes() == b"previous export"
    assert os.listdir(tmp_path) == [out.name]


@needs_dev_full
@pytest.mark.parametrize("fmt", HEATMAP_FORMATS)
def test_cli_full_disk_exits_2(tiny_ckpt, tmp_path, fmt):
    out = tmp_path / f"full.{fmt}"
    out.symlink_to("/dev/full")
    what, extra = ("heatmap", CLI_EXPORTS[2][1]) if fmt != "csv" else CLI_EXPORTS[0]
    r = subprocess.run([sys.executable, "-m", "detokgui", "export", what, "--model",
                        str(tiny_ckpt), *extra, "--out", str(out)],
                       check=False, capture_output=True, text=True, timeout=300,
                       env=SUBPROCESS_ENV)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "No space left on device" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "wrote" not in r.stdout
    assert os.path.islink(out) and sorted(os.listdir(tmp_path)) == [out.name]


@pytest.fixture
def failing_sync(monkeypatch):
    """The disk reports an error when the written file is flushed to it."""

    def fail(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(atomic.os, "fsync", fail)


@pytest.mark.parametrize("fmt", ["png", "svg", "pdf", "csv"])
def test_plot_export_failure_keeps_previous_file(window, qtbot, tmp_path, failing_sync, fmt):
    window.show_view("topk")
    frame = window.panel("topk").plot_frames()[0]
    qtbot.waitUntil(frame.has_data, timeout=60000)
    wait_idle(qtbot, window)
    out = tmp_path / f"topk.{fmt}"
    out.write_bytes(b"previous export")
    with pytest.raises(OSError):
        frame.export(out)
    assert out.read_bytes() == b"previous export"
    assert os.listdir(tmp_path) == [out.name]


@needs_dev_full
@pytest.mark.parametrize("fmt", ["png", "svg", "pdf", "csv"])
def test_gui_export_to_full_disk_warns(window, qtbot, tmp_path, monkeypatch, modal_dialogs, fmt):
    from PySide6.QtWidgets import QFileDialog

    window.show_view("heatmap")
    frame = window.panel("heatmap").plot_frames()[0]
    qtbot.waitUntil(frame.has_data, timeout=60000)
    wait_idle(qtbot, window)
    target = tmp_path / f"full.{fmt}"
    target.symlink_to("/dev/full")
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a, **k: (str(target), "")))
    frame.export_dialog(fmt)  # SVG and PDF: drawn and written by a job
    qtbot.waitUntil(lambda: any(name == "QMessageBox.warning" for name, _ in modal_dialogs),
                    timeout=30000)
    warnings = [args for name, args in modal_dialogs if name == "QMessageBox.warning"]
    assert len(warnings) == 1, modal_dialogs
    assert "No space left on device" in warnings[0][2] and str(target) in warnings[0][2]
    modal_dialogs.clear()
    assert "Saved" not in window.statusBar().currentMessage()


def test_neuron_table_export_failure_keeps_previous_file(window, qtbot, tmp_path, failing_sync):
    window.show_view("neurons")
    panel = window.panel("neurons")
    wait_idle(qtbot, window)
    out = tmp_path / "neurons.csv"
    out.write_text("previous export")
    with pytest.raises(OSError):
        panel.export_table(out)
    assert out.read_text() == "previous export"
    assert os.listdir(tmp_path) == [out.name]


@pytest.mark.gui  # the window, in a subprocess
def test_screenshot_to_full_disk_fails_cleanly(tiny_ckpt, tmp_path, isolated_env):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    out = tmp_path / "shot.png"
    out.symlink_to("/dev/full")
    r = subprocess.run([sys.executable, "-m", "detokgui", "--model", str(tiny_ckpt),
                        "--view", "topk", "--screenshot", str(out)],
                       check=False, capture_output=True, text=True, timeout=300,
                       env=isolated_env)
    assert r.returncode == 1 and "No space left on device" in r.stderr
    assert "Traceback" not in r.stderr and "wrote" not in r.stdout
