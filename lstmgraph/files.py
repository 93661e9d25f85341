"""File writing shared by every stage that produces output; where the bundled specs are."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path


def _bundled_specs() -> Path:
    """The repository's top-level specs/ folder, which a wheel carries as package data in
    lstmgraph/specs (pyproject.toml): that folder where it exists, else the checkout's."""
    package = Path(__file__).resolve().parent
    installed = package / "specs"
    return installed if installed.is_dir() else package.parent / "specs"


#: The folder of the bundled specs, in a checkout (also an editable install) or an installed wheel.
BUNDLED_SPECS = _bundled_specs()


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
    """Write through a temporary file in the same folder, fsync it, rename it into place and
    fsync the folder, so a reader, a killed run or a power cut never leaves half a file.
    Raises `OutputError` naming ``path``."""
    make_folder(path.parent, path)
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise OutputError(path, error) from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(content)
            stream.flush()
            os.fsync(stream.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes 0600; give the usual permissions
        os.replace(temporary, path)
        sync_folder(path.parent)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise OutputError(path, error) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def make_folder(folder: Path, for_path: Path | None = None) -> None:
    """Create ``folder`` and its parents; `OutputError` naming ``for_path`` (default: the folder)
    if that cannot be done, saying so when a file stands where a folder should be."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        blocking = next((parent for parent in (folder, *folder.parents) if parent.exists()), None)
        if blocking is not None and not blocking.is_dir():
            error = OSError(errno.ENOTDIR, f"{blocking} is a file, not a folder")
        raise OutputError(for_path or folder, error) from None


def sync_folder(folder: Path) -> None:
    """fsync a folder so that a rename in it survives a power cut (where the system allows it)."""
    handle = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(handle)
    except OSError as error:
        if error.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise  # some file systems cannot sync a folder; nothing more can be done there
    finally:
        os.close(handle)
