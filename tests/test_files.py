"""write_atomically: whole files or nothing, synced to disk, and write errors that name the path."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from lstmgraph.files import NotAFile, OutputError, own_file_exists, write_atomically


def test_the_file_and_its_folder_are_synced(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync

    def record(handle):
        synced.append(stat.S_ISDIR(os.fstat(handle).st_mode))
        real_fsync(handle)

    monkeypatch.setattr(os, "fsync", record)
    write_atomically(tmp_path / "a" / "f.txt", b"data")
    assert (tmp_path / "a" / "f.txt").read_bytes() == b"data"
    assert synced == [False, True]  # the file's contents before the rename, the folder after


def test_a_full_disk_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "f.txt"
    write_atomically(target, b"old")

    def full(handle):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OutputError) as caught:
        write_atomically(target, b"new")
    assert str(caught.value) == f"cannot write {target}: No space left on device"
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["f.txt"]


def test_a_file_where_a_folder_should_be_is_named(tmp_path):
    (tmp_path / "plain").write_text("x")
    with pytest.raises(OutputError) as caught:
        write_atomically(tmp_path / "plain" / "sub" / "f.npz", b"")
    assert str(caught.value) == (f"cannot write {tmp_path}/plain/sub/f.npz: "
                                 f"{tmp_path}/plain is a file, not a folder")
    assert isinstance(caught.value, OSError)  # callers that handle OSError still do


def test_own_file_exists_refuses_a_link_a_fifo_and_a_folder_without_opening_them(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    os.mkfifo(tmp_path / "fifo")  # opened, it would block the test
    (tmp_path / "folder").mkdir()
    assert own_file_exists(tmp_path / "file") and not own_file_exists(tmp_path / "missing")
    for name, words in (("link", "is a symbolic link"), ("fifo", "is not a regular file (a FIFO"),
                        ("folder", "is a folder, not a file")):
        with pytest.raises(NotAFile) as refused:
            own_file_exists(tmp_path / name)
        assert refused.value.strerror.startswith(words)
