"""File writing shared by every stage that produces output; where the bundled specs and the
kernel cache are."""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
from pathlib import Path
from typing import BinaryIO


def _bundled_specs() -> Path:
    """The repository's top-level specs/ folder, which a wheel carries as package data in
    lstmgraph/specs (pyproject.toml): that folder where it exists, else the checkout's."""
    package = Path(__file__).resolve().parent
    installed = package / "specs"
    return installed if installed.is_dir() else package.parent / "specs"


#: The folder of the bundled specs, in a checkout (also an editable install) or an installed wheel.
BUNDLED_SPECS = _bundled_specs()


def cache_directory() -> Path:
    """The kernel cache: the generated modules and numba's machine code of them and of
    lstmgraph's own modules (`numba_cache`); ``$LSTMGRAPH_CACHE/kernels``, by default in
    ``~/.cache/lstmgraph``. Read at each call."""
    root = os.environ.get("LSTMGRAPH_CACHE") or Path.home() / ".cache" / "lstmgraph"
    return Path(root) / "kernels"


#: Where a command writes when not given a folder (``--out``), below the current folder.
RUNS = Path("runs")


def safe_folder_name(name: str) -> str:
    """``name`` (a spec's name, which a file's stem may give: anything) as one folder's name:
    letters, digits and ``_ . -`` only, not starting with a dot or dash, at most 64 of them."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".-")[:64] or "network"


def default_out(command: str, name: str) -> Path:
    """``runs/COMMAND/NAME``: where `reproduce` and `sweep` write a row's (or a spec's) results
    when not given ``--out``."""
    return RUNS / command / safe_folder_name(name)


#: A write that found no room (a full disk, a quota, a file-size limit).
NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
#: A write refused for the disk's state, not the folder's: no room, or read-only. The same
#: command succeeds once that changes (a run resumes).
DISK_REFUSED = NO_ROOM + (errno.EROFS,)


class OutputError(OSError):
    """A file or folder that cannot be written (read-only or full disk, a file where a folder
    should be, ...); the message names the path. The CLI reports it with exit code 2."""

    def __init__(self, path: Path | str, error: OSError | str):
        reason = error if isinstance(error, str) else error.strerror or str(error) or type(error).__name__
        super().__init__(None if isinstance(error, str) else error.errno, f"cannot write {path}: {reason}")
        self.path = Path(path)
        self.reason = reason

    def __str__(self) -> str:
        return self.strerror

    def __reduce__(self):
        """Pickled (from a worker process) as its path and reason."""
        return OutputError, (str(self.path), self.reason)


def write_atomically(path: Path, content: bytes) -> None:
    """Write ``path`` whole (`write_whole_in` its folder, made if missing), so a reader, a
    killed run or a power cut never leaves half a file. Raises `OutputError` naming ``path``."""
    make_folder(path.parent, path)
    try:
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise OutputError(path, blocked_folder(path.parent, error)) from None
    try:
        write_whole_in(folder, path.name, content, path)
    finally:
        os.close(folder)


def write_whole_in(folder: int, name: str, content: bytes, path: Path) -> None:
    """Write the file ``name`` of the open folder ``folder`` whole: a temporary file beside it
    (`is_temporary`), fsynced, renamed into place (a link standing there is replaced, never
    written through), the folder fsynced. `OutputError` names ``path``."""
    temporary = f".{name}.{secrets.token_hex(6)}.tmp"
    try:
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666,
                         dir_fd=folder)
    except OSError as error:
        raise OutputError(path, error) from None
    try:
        write_synced(handle, content)
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
        sync_descriptor(folder)
    except BaseException as error:
        try:
            os.unlink(temporary, dir_fd=folder)
        except OSError:
            pass
        if isinstance(error, OSError):
            raise OutputError(path, error) from None
        raise


def is_temporary(name: str) -> bool:
    """Whether ``name`` is a temporary file of an atomic write (``.NAME.XXXX.tmp``:
    `write_whole_in`), which a kill can leave behind."""
    return name.startswith(".") and name.endswith(".tmp")


def not_written_by(folder: Path, names: list[str], marks: tuple[str, ...], command: str) -> str | None:
    """Why a run of ``lstmgraph COMMAND`` must not write ``folder``, which holds ``names``: files
    but none of ``marks`` (its own, e.g. experiment.json), so no such run wrote it (anyone's
    files, another command's folder); None if it holds none or is marked. A lock and the
    temporary files a killed write leaves do not count."""
    foreign = [name for name in sorted(names) if name != ".lock" and not is_temporary(name)]
    if not foreign or any(mark.rstrip("/") in names for mark in marks):
        return None
    shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3:,} more" if len(foreign) > 3 else "")
    return (f"{folder}: holds {shown} but no {' or '.join(marks)}: not a folder lstmgraph {command} "
            "writes, and this run would mix its files with those; choose an empty or new folder with --out")


def remove_temporaries(descriptor: int) -> None:
    """Remove from the open folder ``descriptor`` the temporary files killed atomic writes left
    (a link is removed, not followed; a folder so named stays). Call it holding the folder's
    lock, when no write of ours is under way: each can be as large as a checkpoint."""
    for name in os.listdir(descriptor):
        if is_temporary(name):
            try:
                os.unlink(name, dir_fd=descriptor)
            except OSError:  # a folder so named, a read-only disk: the next write names the problem
                pass


def write_synced(handle: int, content: bytes) -> None:
    """Write ``content`` to the open file ``handle``, flush it to the disk (fsync) and close it."""
    with os.fdopen(handle, "wb") as stream:
        stream.write(content)
        stream.flush()
        os.fsync(stream.fileno())


def make_folder(folder: Path, for_path: Path | None = None) -> Path | None:
    """Create ``folder`` and its parents; `OutputError` naming ``for_path`` (default: the folder)
    if that cannot be done, saying so when a file stands where a folder should be. Returns the
    outermost folder it made (None if ``folder`` was there), for `remove_made_folders`."""
    made = next((path for path in reversed((folder, *folder.parents)) if not os.path.lexists(path)), None)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(for_path or folder, blocked_folder(folder, error)) from None
    return made


def remove_made_folders(folder: Path, made: Path | None) -> None:
    """Remove the empty folders in ``folder`` (this command's: it made ``folder``), then
    ``folder`` and its parents up to ``made`` (what `make_folder` made), those left empty: a
    command refused by the disk before it wrote a file leaves no folder behind. A link is not
    followed or removed."""
    if made is None or made not in (folder, *folder.parents):
        return
    for inside, folders, _ in os.walk(folder, topdown=False):
        for name in folders:
            try:
                os.rmdir(os.path.join(inside, name))
            except OSError:
                pass  # not empty, or a link: it stays
    for path in (folder, *folder.parents):
        try:
            path.rmdir()
        except OSError:
            return  # something is in it, or it is gone: it and its parents stay
        if path == made:
            return


def blocked_folder(folder: Path, error: OSError) -> OSError:
    """``error`` (making or opening ``folder``), or one naming the file that stands where
    ``folder`` or one of its parents should be, or saying that a name in it is too long."""
    if error.errno == errno.ENAMETOOLONG:
        return OSError(errno.ENAMETOOLONG, TOO_LONG)
    blocking = next((parent for parent in (folder, *folder.parents) if os.path.exists(parent)), None)
    if blocking is not None and not os.path.isdir(blocking):
        return OSError(errno.ENOTDIR, f"{blocking} is a file, not a folder")
    return error


#: What a path too long for the system is told (ENAMETOOLONG), after the path.
TOO_LONG = ("a name in the path is longer than the file system allows (most allow 255 bytes a name); "
            "choose a shorter one")


def name_too_long(path: Path) -> bool:
    """Whether ``path`` cannot be looked up because a name in it, or the whole, is longer than
    the system allows (ENAMETOOLONG, which Path.exists and Path.is_dir raise, not answer)."""
    try:
        os.stat(path)
    except OSError as error:
        return error.errno == errno.ENAMETOOLONG
    return False


def replaces(path: Path, other: Path) -> bool:
    """Whether writing ``path`` (`write_atomically`) would replace the file ``other`` names: the
    same folder entry once links are resolved (a link at ``path`` or a hard link is replaced, not
    written through, so the file ``other`` reads stays)."""
    return path.parent.resolve() / path.name == Path(other).resolve()


def sync_descriptor(folder: int) -> None:
    """fsync the open folder ``folder`` so that a rename in it survives a power cut (where the
    system allows it: some file systems cannot sync a folder, and nothing more can be done)."""
    try:
        os.fsync(folder)
    except OSError as error:
        if error.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise


# -- folders a process holds, and files never followed out of their folder -----------------------

_NO_FOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # O_NONBLOCK: a FIFO never blocks an open


class InputFileError(Exception):
    """A file the tool wrote and reads back (a run directory's, a results folder's) that cannot
    be used: missing, a link, not a regular file, too large, unreadable; the message names it."""


class NotAFile(OSError):
    """`open_no_follow`'s refusal: a link, a folder, a FIFO or device; ``strerror`` says which
    (without the path, which the caller puts in front)."""


LINK_REFUSED = ("is a symbolic link; files in this folder are never followed out of it "
                "(delete the link, or restore the file it replaced)")


def open_no_follow(path: Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` that refuses a symbolic link at ``path`` (``O_NOFOLLOW``) and anything but a
    regular file (a FIFO, a device, a folder): `NotAFile` saying which; other failures as the
    system's `OSError`. The caller turns either into its own error naming ``path``
    (`OutputError` for a write, `InputFileError` for a read)."""
    try:
        handle = os.open(path, flags | _NO_FOLLOW, mode)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise NotAFile(errno.ELOOP, LINK_REFUSED) from None
        if error.errno == errno.EISDIR:
            raise NotAFile(errno.EISDIR, "is a folder, not a file") from None
        raise
    kind = os.fstat(handle).st_mode
    if not stat.S_ISREG(kind):
        os.close(handle)
        raise _not_a_file(kind)
    os.set_blocking(handle, True)
    return handle


def own_file_exists(path: Path) -> bool:
    """Whether ``path`` exists, looked at without following a link and without opening it (a
    FIFO would block an ``open``): `NotAFile` saying why if it is a symbolic link or anything but
    a regular file, with `open_no_follow`'s words; the caller puts the path in front."""
    try:
        kind = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(kind):
        raise NotAFile(errno.ELOOP, LINK_REFUSED)
    if not stat.S_ISREG(kind):
        raise _not_a_file(kind)
    return True


def _not_a_file(kind: int) -> NotAFile:
    """The refusal of a file of mode ``kind`` that is not a regular file: a folder, a FIFO, a device."""
    return NotAFile(errno.EINVAL, "is a folder, not a file" if stat.S_ISDIR(kind) else
                    "is not a regular file (a FIFO, socket or device); replace it with the file that belongs there")


def append_no_follow(path: Path, newline: str | None = None):
    """``path`` opened to append text (created if missing), never through a link: `OutputError`
    naming ``path`` if it is a link or not a regular file."""
    try:
        handle = open_no_follow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    except OSError as error:
        raise OutputError(path, error) from None
    return os.fdopen(handle, "a", encoding="utf-8", newline=newline)


def reading_no_follow(path: Path, error: type[Exception] | None = None, what: str = "the file") -> BinaryIO:
    """``path``, a regular file, opened for reading without following a link; ``error``
    (default `InputFileError`) naming ``path`` otherwise."""
    error = error or InputFileError
    try:
        return os.fdopen(open_no_follow(path, os.O_RDONLY), "rb")
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except NotAFile as refused:
        raise error(f"{path}: {refused.strerror}") from None
    except OSError as failed:
        raise error(f"{path}: cannot read {what}: {failed.strerror or failed}") from None


def read_no_follow(path: Path, max_bytes: int, what: str = "the file") -> bytes:
    """The bytes of ``path``, a regular file (no link followed) of at most ``max_bytes`` bytes,
    the size checked before anything is read. `InputFileError` naming ``path`` otherwise."""
    with reading_no_follow(path, InputFileError, what) as stream:
        size = os.fstat(stream.fileno()).st_size
        if size > max_bytes:
            raise InputFileError(f"{path}: {size:,} bytes, more than the {max_bytes:,} {what} may hold "
                                 "(a damaged or foreign file?)")
        try:
            content = stream.read(max_bytes + 1)
        except OSError as error:
            raise InputFileError(f"{path}: cannot read {what}: {error.strerror or error}") from None
    if len(content) > max_bytes:  # grew while read
        raise InputFileError(f"{path}: more than the {max_bytes:,} bytes {what} may hold")
    return content
