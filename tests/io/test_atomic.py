"""Atomic output files: the process's umask applies, and is never changed to read it."""

import os
import stat

import pytest

from unimap.io.atomic import atomic_path


def test_the_umask_applies_and_is_not_touched(tmp_path, monkeypatch):
    # Issue 58: atomic_path read the umask with os.umask(0), which for a moment gave every
    # other thread's new files the mode 0o666.
    previous = os.umask(0o027)
    try:
        def refuse(mask):
            raise AssertionError("os.umask was called")

        monkeypatch.setattr(os, "umask", refuse)
        with atomic_path(tmp_path / "out.bin") as tmp:
            tmp.write_bytes(b"data")
        monkeypatch.undo()
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "out.bin").stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]


def test_a_failed_write_leaves_nothing(tmp_path):
    (tmp_path / "out.bin").write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_path(tmp_path / "out.bin") as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("failed")
    assert (tmp_path / "out.bin").read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]
