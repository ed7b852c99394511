"""Atomic writes: a failing writer leaves the previous file intact and no temp file."""

import os
import stat

import pytest

from detokgui.core.base import atomic


def test_success_replaces_and_keeps_permissions(tmp_path):
    p = tmp_path / "out.csv"
    p.write_text("old")
    os.chmod(p, 0o644)
    atomic.write_text(p, "new")
    assert p.read_text() == "new"
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o644
    assert os.listdir(tmp_path) == ["out.csv"]


def test_new_file_gets_default_permissions(tmp_path):
    p = tmp_path / "new.txt"
    atomic.write_text(p, "x")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o666 & ~umask


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_failure_keeps_previous_file_and_leaves_no_temp(tmp_path, exc):
    p = tmp_path / "out.csv"
    p.write_text("previous")
    with pytest.raises(exc), atomic.atomic_open(p, "w") as f:
        f.write("partial")
        raise exc("writer failed")
    assert p.read_text() == "previous"
    assert os.listdir(tmp_path) == ["out.csv"]


def test_writer_that_writes_nothing_is_an_error(tmp_path):
    p = tmp_path / "x.png"
    with pytest.raises(OSError), atomic.atomic_path(p) as tmp:
        tmp.unlink()
    assert os.listdir(tmp_path) == []


def test_full_device_raises_and_is_not_replaced():
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    with pytest.raises(OSError):
        atomic.write_bytes("/dev/full", b"x" * 100000)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_folder_appears_whole_or_not_at_all(tmp_path):
    target = tmp_path / "model"
    with pytest.raises(RuntimeError), atomic.atomic_folder(target) as tmp:
        (tmp / "weights").write_text("w")
        raise RuntimeError("interrupted before the tokenizer")
    assert os.listdir(tmp_path) == []
    with atomic.atomic_folder(target) as tmp:
        (tmp / "weights").write_text("w")
        (tmp / "tokenizer").write_text("t")
    assert sorted(os.listdir(target)) == ["tokenizer", "weights"]
    assert os.listdir(tmp_path) == ["model"]
