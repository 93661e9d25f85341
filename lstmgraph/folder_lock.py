"""A folder one process at a time writes: an advisory ``flock`` on ``FOLDER/.lock``, which names
its holder (`FolderLock`), and the refusal a second process gets (`FolderInUse`). A training run
directory (`training.rundir`), a results folder and a sweep folder (`experiments.folder`) hold one."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from .files import OutputError, open_no_follow


class FolderInUse(Exception):
    """A folder another process holds (`FolderLock`); ``holder`` is what its lock file says."""

    def __init__(self, folder: Path | str, holder: str, suggestion: str):
        self.folder, self.holder = Path(folder), holder
        super().__init__(f"{folder} is in use by {holder}; {suggestion}")


def _printable(text: str, limit: int = 200) -> str:
    """What a file says, safe to print: no control characters, at most ``limit`` characters."""
    text = "".join(char if char.isprintable() else " " for char in text).strip()
    return text[:limit]


class FolderLock:
    """An advisory ``flock`` on ``FOLDER/.lock``, dropped by the system when its holder dies
    (``kill -9`` included), so the lock of a dead process is simply taken over.

    The lock file is opened without following a link (a ``.lock`` that is a symbolic link is
    refused: it is never written through) and must be a regular file. The holder writes
    ``holder`` (e.g. "lstmgraph train, process 12 on host") into it; a second process is refused
    with `FolderInUse` naming that. A lock file this process created is removed when it is
    released, so a refused command leaves the folder as it found it; one that was there is left.
    """

    NAME = ".lock"

    def __init__(self, folder: Path | str, holder: str, suggestion: str = "wait for it to end"):
        self.folder = Path(folder)
        self.path = self.folder / self.NAME
        self.holder = holder
        self.suggestion = suggestion
        self._handle: int | None = None
        self._created = False

    @property
    def held(self) -> bool:
        return self._handle is not None

    def holder_of(self) -> str | None:
        """Who holds the folder now (what its lock file says), or None if no one does; takes
        and drops the lock to find out, creating nothing."""
        try:
            handle = open_no_follow(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise OutputError(self.path, error) from None
        try:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return _printable(os.pread(handle, 200, 0).decode(errors="replace")) or "another process"
            return None
        finally:
            os.close(handle)

    def acquire(self) -> None:
        """Hold the folder; `FolderInUse` if another process does, `OutputError` if the lock file
        cannot be used (a link, not a regular file, an unwritable folder)."""
        if self._handle is not None:
            return
        for _ in range(20):  # the lock file replaced under us (a holder removing its own): again
            created = False
            try:
                handle = open_no_follow(self.path, os.O_RDWR)
            except FileNotFoundError:
                try:
                    handle = open_no_follow(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL)
                    created = True
                except FileExistsError:
                    continue
                except OSError as error:
                    raise OutputError(self.path, error) from None
            except OSError as error:
                raise OutputError(self.path, error) from None
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _printable(os.pread(handle, 200, 0).decode(errors="replace")) or "another process"
                os.close(handle)
                raise FolderInUse(self.folder, holder, self.suggestion) from None
            except OSError as error:
                os.close(handle)
                raise OutputError(self.path, error) from None
            opened = os.fstat(handle)
            try:
                now = os.lstat(self.path)
            except FileNotFoundError:
                now = None
            if now is None or (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
                os.close(handle)  # a file its holder removed on release: not the lock any more
                continue
            try:
                os.ftruncate(handle, 0)
                os.pwrite(handle, f"{self.holder}\n".encode(), 0)
            except OSError as error:  # a full disk: the folder is left as it was found
                self._handle, self._created = handle, created
                self.release()
                raise OutputError(self.path, error) from None
            self._handle, self._created = handle, created
            return
        raise FolderInUse(self.folder, "another process (its lock file keeps changing)", self.suggestion)

    def release(self) -> None:
        """Drop the lock (removing the lock file if this process created it)."""
        handle, self._handle = self._handle, None
        if handle is None:
            return
        try:
            if self._created:
                try:
                    os.unlink(self.path)  # still held: whoever opened it sees it gone and retries
                except OSError:
                    pass
        finally:
            os.close(handle)

    def __enter__(self) -> "FolderLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None:
            self.release()
