"""Files inside one named folder, read with limits and written without following a link out.

A results folder (`folder.ResultsFolder`) may be handed over by anyone, so every access below
it goes through a descriptor of the folder: each path component is opened with
``O_NOFOLLOW``, a symbolic link (the file itself, or a folder on the way such as ``trials`` or
``trials/SEED``) is refused, never followed, and a file that is not a regular one (a FIFO, a
device) is refused before it is read (issue 36). Whole files are written through a temporary
file and a rename in the same folder (`files.write_whole_in`). Reads are bounded in
bytes before anything is read, and JSON is read with limits on depth, integer digits and
non-finite numbers (`limits.py`'s depth).
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

from ..files import OutputError, blocked_folder, remove_temporaries, write_whole_in
from ..limits import MAX_DEPTH

#: Digits of an integer in a file read back (the largest count a trial keeps is 2**62: 19 digits).
MAX_DIGITS = 20
_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_NO_LINK = os.O_NOFOLLOW | os.O_CLOEXEC


class FolderFileError(Exception):
    """A file of the folder that cannot be read as it must be; the message names it."""


def _parts(relative: str) -> tuple[str, ...]:
    parts = PurePosixPath(relative).parts
    if not parts or any(part in ("", ".", "..") or "/" in part for part in parts):
        raise ValueError(f"not a path inside the folder: {relative!r}")
    return parts


def _refusal(path: Path, error: OSError) -> str:
    """Why ``path`` could not be opened, saying so plainly for a link or a file in a folder's place."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        mode = None
    if mode is not None and stat.S_ISLNK(mode):
        return "is a symbolic link; no link is followed in a results folder"
    if error.errno in (errno.ENOTDIR, errno.ELOOP) and mode is not None and not stat.S_ISDIR(mode):
        return "is not a folder"
    return error.strerror or str(error)


@contextmanager
def folder_descriptor(root: Path, folders: tuple[str, ...], create: bool) -> Iterator[int | None]:
    """A descriptor of ``root``/``folders`` reached without following a link below ``root``
    (``root`` itself is the folder the user named); created where missing if ``create``, else
    None when a folder is missing. `OutputError` names a link or a file in a folder's place."""
    try:
        descriptor = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        if not create:
            yield None
            return
        raise OutputError(root, "no such folder") from None
    except OSError as error:
        raise OutputError(root, blocked_folder(root, error)) from None
    path = root
    try:
        for name in folders:
            path = path / name
            if create:
                try:
                    os.mkdir(name, 0o777, dir_fd=descriptor)
                except FileExistsError:
                    pass
                except OSError as error:
                    raise OutputError(path, error) from None
            try:
                inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _NO_LINK, dir_fd=descriptor)
            except FileNotFoundError:
                if create:
                    raise OutputError(path, "removed while being written") from None
                yield None
                return
            except OSError as error:
                raise OutputError(path, _refusal(path, error)) from None
            os.close(descriptor)
            descriptor = inner
        yield descriptor
    finally:
        os.close(descriptor)


def write_file(root: Path, relative: str, content: bytes) -> None:
    """Write ``root``/``relative`` whole (`files.write_whole_in` its folder, reached without
    following a link). `OutputError` names the file."""
    *folders, name = _parts(relative)
    with folder_descriptor(root, tuple(folders), create=True) as descriptor:
        write_whole_in(descriptor, name, content, root.joinpath(relative))


def append_file(root: Path, relative: str, content: bytes) -> None:
    """Append ``content`` to ``root``/``relative`` (created if missing) and fsync it; a link or
    anything but a regular file there is refused (`OutputError`). All of it or none: a full
    disk that takes only its first bytes (a short write) is an `OutputError`, the file cut back
    to what it held, so no later append lands on half a line."""
    *folders, name = _parts(relative)
    path = root.joinpath(relative)
    with folder_descriptor(root, tuple(folders), create=True) as descriptor:
        try:
            handle = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | _NO_LINK, 0o666,
                             dir_fd=descriptor)
        except OSError as error:
            raise OutputError(path, _refusal(path, error)) from None
        try:
            found = os.fstat(handle)
            if not stat.S_ISREG(found.st_mode):
                raise OutputError(path, "is not a regular file")
            _append_whole(handle, content, found.st_size)
        except OSError as error:
            if isinstance(error, OutputError):
                raise
            raise OutputError(path, error) from None
        finally:
            os.close(handle)


def _append_whole(handle: int, content: bytes, size: int) -> None:
    """Write all of ``content`` to ``handle`` (opened to append, ``size`` bytes long) and fsync
    it; where that fails (ENOSPC after a short write), cut the file back to ``size`` and raise."""
    try:
        written = 0
        while written < len(content):
            count = os.write(handle, content[written:])
            if count == 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            written += count
        os.fsync(handle)
    except OSError:
        try:
            os.ftruncate(handle, size)
        except OSError:
            pass  # (a line left cut at the end is dropped on reading: `ResultsFolder.read_rows`)
        raise


def remove_file(root: Path, relative: str) -> None:
    """Remove ``root``/``relative`` if it is there (a link is removed, not followed)."""
    *folders, name = _parts(relative)
    with folder_descriptor(root, tuple(folders), create=False) as descriptor:
        if descriptor is None:
            return
        try:
            os.unlink(name, dir_fd=descriptor)
        except FileNotFoundError:
            pass
        except OSError as error:
            raise OutputError(root.joinpath(relative), error) from None


def folder_names(root: Path, relative: str = "") -> list[str] | None:
    """The names in ``root``/``relative`` (a folder reached without following a link below
    ``root``), sorted; None if it is missing. `OutputError` names a link on the way."""
    with folder_descriptor(root, _parts(relative) if relative else (), create=False) as descriptor:
        if descriptor is None:
            return None
        try:
            return sorted(os.listdir(descriptor))
        except OSError as error:
            raise OutputError(root.joinpath(relative), error) from None


def remove_temporaries_in(root: Path, relative: str = "") -> None:
    """`files.remove_temporaries` in ``root``/``relative``, reached without following a link."""
    with folder_descriptor(root, _parts(relative) if relative else (), create=False) as descriptor:
        if descriptor is not None:
            remove_temporaries(descriptor)


def read_file(root: Path, relative: str, limit: int) -> bytes | None:
    """The bytes of ``root``/``relative``, None if it is missing. `FolderFileError` names a
    link, a file that is not a regular one, or one over ``limit`` bytes (checked before reading)."""
    *folders, name = _parts(relative)
    path = root.joinpath(relative)
    try:
        with folder_descriptor(root, tuple(folders), create=False) as descriptor:
            if descriptor is None:
                return None
            try:
                handle = os.open(name, os.O_RDONLY | os.O_NONBLOCK | _NO_LINK, dir_fd=descriptor)
            except FileNotFoundError:
                return None
            except OSError as error:
                raise FolderFileError(f"{path}: {_refusal(path, error)}") from None
            try:
                status = os.fstat(handle)
                if stat.S_ISDIR(status.st_mode):
                    raise FolderFileError(f"{path}: is a folder, not a file")
                if not stat.S_ISREG(status.st_mode):
                    raise FolderFileError(f"{path}: is not a regular file")
                if status.st_size > limit:
                    raise FolderFileError(f"{path}: holds {status.st_size:,} bytes, more than the "
                                          f"{limit:,} such a file may hold")
                chunks, left = [], limit + 1
                while left > 0:
                    chunk = os.read(handle, min(left, 1 << 20))
                    if not chunk:
                        break
                    chunks.append(chunk)
                    left -= len(chunk)
            except OSError as error:
                raise FolderFileError(f"{path}: cannot read it ({error.strerror or error})") from None
            finally:
                os.close(handle)
    except OutputError as error:  # a folder on the way that is a link, or a file
        raise FolderFileError(str(error).replace("cannot write ", "", 1)) from None
    content = b"".join(chunks)
    if len(content) > limit:
        raise FolderFileError(f"{path}: holds more than the {limit:,} bytes such a file may hold")
    return content


# -- JSON with limits -------------------------------------------------------------------------------
class _Refused(ValueError):
    pass


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _Refused(f"an integer of {len(text.lstrip('-')):,} digits (at most {MAX_DIGITS})")
    return int(text)


def _real(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _Refused(f"the number {text[:30]} is beyond the range of a float")
    return value


def _constant(text: str) -> Any:
    raise _Refused(f"{text} is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping = dict(pairs)
    if len(mapping) != len(pairs):
        seen = set()
        repeated = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise _Refused(f"the key {repeated!r} appears twice in one object")
    return mapping


def depth_of(text: str) -> int:
    """How deep lists and objects nest in JSON ``text`` (brackets inside strings not counted)."""
    depth = deepest = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


def parse_json(content: bytes | str, where: str) -> Any:
    """JSON read with limits: UTF-8, lists and objects nested at most `MAX_DEPTH` deep,
    integers of at most `MAX_DIGITS` digits, no NaN or infinity, no key twice in an object.
    `FolderFileError` names ``where`` (a file, or a file's line) and what was expected."""
    try:
        text = content.decode("utf-8") if isinstance(content, bytes) else content
    except UnicodeDecodeError as error:
        raise FolderFileError(f"{where}: not UTF-8 text (byte {error.start})") from None
    deepest = depth_of(text)
    if deepest > MAX_DEPTH:
        raise FolderFileError(f"{where}: lists and objects nested {deepest} deep; expected at most {MAX_DEPTH}")
    try:
        return json.loads(text, parse_int=_integer, parse_float=_real, parse_constant=_constant,
                          object_pairs_hook=_unique_keys)
    except _Refused as error:
        raise FolderFileError(f"{where}: {error}") from None
    except json.JSONDecodeError as error:
        place = f"line {error.lineno}, column {error.colno}: " if "\n" in text.strip() else f"column {error.colno}: "
        raise FolderFileError(f"{where}: not JSON ({place}{error.msg})") from None
    except (ValueError, RecursionError) as error:
        raise FolderFileError(f"{where}: not JSON ({error})") from None
