"""`folder_lock`: one process at a time writes a folder; a lock that cannot be written leaves
nothing behind."""

from __future__ import annotations

import errno
import os

import pytest

from lstmgraph.files import OutputError
from lstmgraph.folder_lock import FolderLock


def test_a_lock_file_that_finds_no_room_is_named_as_every_write_and_not_left(tmp_path, monkeypatch):
    """A full disk as the holder is written into the lock file: the message of every write that
    finds no room, and the lock file this process created is removed (the folder as it was)."""
    def full(handle, data, offset):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)
    with pytest.raises(OutputError) as caught:
        FolderLock(tmp_path, "lstmgraph train, process 1").acquire()
    assert str(caught.value) == f"cannot write {tmp_path}/.lock: No space left on device"
    assert os.listdir(tmp_path) == []
