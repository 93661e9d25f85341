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


def test_a_name_too_long_for_the_file_system_is_named_not_a_traceback(tmp_path):
    """Path.exists raised ENAMETOOLONG while the folder's error was being explained: train --out,
    render -o or LSTMGRAPH_CACHE with a 300-byte name ended in a traceback (exit 1)."""
    long = tmp_path / ("b" * 300)
    for target in (long / "f.npz", long / "sub" / "f.npz", tmp_path / "sub" / ("b" * 300) / "f.npz"):
        with pytest.raises(OutputError) as caught:
            write_atomically(target, b"")
        assert str(caught.value).startswith(f"cannot write {target}: a name in the path is longer than")
        assert "choose a shorter one" in str(caught.value)


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


def test_temporary_files_killed_writes_left_are_removed_and_nothing_else(tmp_path):
    """A kill during an atomic write leaves `.NAME.XXXX.tmp`, as large as a checkpoint; nothing
    removed it, so they piled up on a disk that may be full already (the kill soak found two at once)."""
    import os

    from lstmgraph.files import remove_temporaries

    (tmp_path / ".checkpoint.npz.k3j2.tmp").write_bytes(b"x" * 1000)
    (tmp_path / "checkpoint.npz").write_bytes(b"kept")
    (tmp_path / ".hidden").write_bytes(b"kept")
    (tmp_path / ".folder.tmp").mkdir()  # a folder so named stays
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.write_bytes(b"kept")
    (tmp_path / ".link.tmp").symlink_to(outside)  # the link goes, not its target
    descriptor = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        remove_temporaries(descriptor)
    finally:
        os.close(descriptor)
    assert sorted(path.name for path in tmp_path.iterdir()) == [".folder.tmp", ".hidden", "checkpoint.npz"]
    assert outside.read_bytes() == b"kept"


def test_a_default_folder_stays_one_folder_below_runs_whatever_the_name():
    from lstmgraph.files import RUNS, default_out, safe_folder_name

    for name in ("gers2000-cerg-forget", "..", "../../etc", " $(x);'", "a/b", "-rf", "." * 300, "é" * 100):
        out = default_out("sweep", name)
        assert out.parent == RUNS / "sweep" and out.name not in ("", ".", "..") and len(out.name) <= 64, name
        assert "/" not in out.name and not out.name.startswith((".", "-")), name
    assert safe_folder_name("gers2000-cerg-forget") == "gers2000-cerg-forget"


def test_remove_made_folders_removes_only_empty_folders_this_command_made(tmp_path):
    from lstmgraph.files import make_folder, remove_made_folders

    out = tmp_path / "new" / "out"
    made = make_folder(out)
    assert made == tmp_path / "new"
    (out / "settings" / "0").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (out / "link").symlink_to(tmp_path / "elsewhere")  # a link to a folder: neither followed nor removed
    remove_made_folders(out, tmp_path / "unrelated")  # not what made it: nothing happens
    assert (out / "settings" / "0").is_dir()
    remove_made_folders(out, made)
    assert (out / "link").is_symlink() and (tmp_path / "elsewhere").is_dir() and not (out / "settings").exists()
    (out / "link").unlink()
    (out / "kept.txt").write_text("a file written")
    remove_made_folders(out, made)
    assert (out / "kept.txt").exists()
    (out / "kept.txt").unlink()
    remove_made_folders(out, made)
    assert not (tmp_path / "new").exists() and tmp_path.is_dir()
    assert make_folder(tmp_path) is None  # there already: nothing made
