"""Reading and writing arrays in files a user hands over: .npz, .npy and .csv, damaged or not.

Every failure is an `ArrayFileError` whose message names the file and what is wrong: missing,
a folder, truncated or corrupted, pickled objects, strings where numbers belong, NaN or
infinity. No pickle is ever loaded; an archive's declared size is checked before reading.
"""

from __future__ import annotations

import array
import csv
import io
import os
import zipfile
import zlib
from pathlib import Path, PurePath
from typing import Any, Callable, Collection

import numpy as np

from .errors import shown
from .files import TOO_LONG, name_too_long, reading_no_follow, write_atomically
from .limits import COUNT_LIMITS_HINT, MAX_ROW_BYTES

def plain(value: Any) -> Any:
    """``value`` with numpy's scalars and arrays, in it or below it in lists, tuples and dicts,
    as Python's numbers and lists, and paths as strings: what a spec, an override or a sweep's
    values hold when a user writes ``np.arange``, ``np.int64(3)`` or ``Path("d.npz")`` (strict
    fields take Python's types only)."""
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(item) for item in value)
    return value


#: Bytes an archive may unpack to (its members' declared sizes): guards against zip bombs.
MAX_ARCHIVE_BYTES = 1 << 31
#: Members an archive may hold, counted before its directory is read.
MAX_ARCHIVE_MEMBERS = 1_000_000
#: What `read_array` reads, by suffix.
ARRAY_SUFFIXES = (".npy", ".npz", ".csv")

_DAMAGE = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, KeyError, NotImplementedError)


class ArrayFileError(Exception):
    """A file of arrays that cannot be used; the message names the file."""


class TooManyRows(ArrayFileError):
    """An array of more rows than `read_array`'s ``max_rows``, refused as it is read."""

    def __init__(self, path: Path, max_rows: int):
        self.path, self.max_rows = path, max_rows
        super().__init__(f"{path}: more than {max_rows:,} rows")


def read_npz(path: Path, follow_links: bool = True,
             select: Callable[[dict[str, int]], Collection[str] | None] | None = None) -> dict[str, np.ndarray]:
    """Every array of an .npz archive. ``follow_links=False`` (a file the tool wrote itself, read
    back from its folder): a symbolic link is refused rather than followed, and so is anything
    but a regular file or a file larger than the archive limit, before anything is read.

    Nothing is unpacked before the archive's directory is checked: at most `MAX_ARCHIVE_MEMBERS`
    members, declaring at most `MAX_ARCHIVE_BYTES` in all. ``select`` is then given each array's
    name and declared bytes: it raises to refuse the file, or names the arrays to read (None: all)."""
    if follow_links:
        _check_file(path)
        try:
            source = open(path, "rb")
        except OSError as error:
            raise ArrayFileError(f"{path}: cannot read it ({_reason(error)})") from None
    else:
        source = reading_no_follow(path, ArrayFileError, "it")
    try:
        size = os.fstat(source.fileno()).st_size
        if size > MAX_ARCHIVE_BYTES:
            raise ArrayFileError(f"{path}: {size:,} bytes, more than the {MAX_ARCHIVE_BYTES:,} an archive "
                                 "may hold")
        end = zipfile._EndRecData(source)  # the directory's end record (zip64 too): its member count
        count = end[zipfile._ECD_ENTRIES_TOTAL] if end else 0
        if count > MAX_ARCHIVE_MEMBERS:
            raise ArrayFileError(f"{path}: an archive of {count:,} members, more than the {MAX_ARCHIVE_MEMBERS:,} "
                                 "an .npz of arrays may hold")
        with zipfile.ZipFile(source) as archive:
            members = archive.infolist()
        other = next((member.filename for member in members if not member.filename.endswith(".npy")), None)
        if other is not None:  # (np.load would hand its raw bytes on as the "array")
            raise ArrayFileError(f"{path}: holds {shown(other)}, not an array (.npy); an .npz of arrays, as "
                                 "numpy.savez writes, holds only arrays")
        declared = {member.filename[:-len(".npy")]: member.file_size for member in members}
        total = sum(declared.values())
        if total > MAX_ARCHIVE_BYTES:
            raise ArrayFileError(f"{path}: the archive unpacks to {total:,} bytes, more than "
                                 f"{MAX_ARCHIVE_BYTES:,}")
        names = select(declared) if select is not None else None
        source.seek(0)
        with np.load(source, allow_pickle=False) as archive:
            return {name: _an_array(path, name, _unpickled(path, f"'{name}'", lambda: archive[name]))
                    for name in archive.files if names is None or name in names}
    except zipfile.BadZipFile:
        raise ArrayFileError(f"{path}: not an .npz archive (truncated, corrupted or another "
                             "kind of file)") from None
    except _DAMAGE as error:
        raise ArrayFileError(f"{path}: a damaged .npz archive ({_reason(error)})") from None
    except MemoryError:
        raise ArrayFileError(f"{path}: declares an array larger than the memory (a damaged header?)") from None
    finally:
        source.close()


def read_array(path: Path, name: str = "inputs", max_rows: int | None = None) -> np.ndarray:
    """One array from an .npy file, an .npz archive (its only array, or the one called
    ``name``) or a .csv file (rows of numbers, optionally under a header row). ``max_rows``:
    `TooManyRows` for an array of more rows (its first axis), a CSV read no further than the row
    past it, an .npy's header checked before its data is read (an archive is bounded as it is)."""
    suffix = path.suffix.lower()
    if suffix == ".npz":
        return archive_array(path, read_npz(path), name, max_rows)
    if suffix == ".csv":
        return _read_csv(path, max_rows)
    if suffix != ".npy":
        raise ArrayFileError(f"{path}: cannot tell the format; expected a file ending in "
                             f"{', '.join(ARRAY_SUFFIXES)}")
    _check_file(path)
    try:
        with open(path, "rb") as stream:
            magic = stream.read(6)
        if magic.startswith(b"PK\x03\x04"):
            raise ArrayFileError(f"{path}: an .npz archive named .npy; rename it to .npz")
        if magic != b"\x93NUMPY":
            raise ArrayFileError(f"{path}: not an .npy file (it does not begin with the .npy header)")
        if max_rows is not None:
            _rows_within(path, _npy_shape(path), max_rows)
        array = _unpickled(path, "the array", lambda: np.load(path, allow_pickle=False))
    except _DAMAGE as error:
        raise ArrayFileError(f"{path}: not a readable .npy array ({_reason(error)})") from None
    except MemoryError:
        raise ArrayFileError(f"{path}: declares an array larger than the memory (a damaged header?)") from None
    return array


def archive_array(path: Path, arrays: dict[str, np.ndarray], name: str = "inputs",
                  max_rows: int | None = None) -> np.ndarray:
    """The array of an .npz archive's ``arrays`` that `read_array` takes: the one called
    ``name``, else the archive's only array."""
    if name in arrays:
        return _rows_within(path, arrays[name], max_rows)
    if len(arrays) != 1:
        raise ArrayFileError(f"{path}: holds {len(arrays)} arrays "
                             f"({', '.join(sorted(arrays)) or 'none'}), none named '{name}'; "
                             f"give one array, or name it '{name}'")
    return _rows_within(path, next(iter(arrays.values())), max_rows)


def sequence_starts(path: Path, starts: np.ndarray | None, steps: int) -> np.ndarray:
    """An archive's ``starts`` (the steps where its sequences begin; None: one sequence) as
    int64 indices, beginning at 0 and rising strictly within ``steps``; `ArrayFileError` else."""
    if starts is None:
        return np.zeros(1, dtype=np.int64)
    problem = starts_problem(starts, steps)
    if problem:
        raise ArrayFileError(f"{path}: {problem}")
    return starts.astype(np.int64).ravel()


def starts_problem(starts: np.ndarray, steps: int) -> str | None:
    """Why ``starts`` (step indices) do not split ``steps`` steps into sequences, or None."""
    if starts.dtype.kind not in "iu":
        return f"'starts' holds {starts.dtype} values, expected integers"
    if starts.ndim > 1:
        return f"'starts' has shape {starts.shape}, expected (sequences,): one step index a sequence"
    starts = starts.astype(np.int64).ravel()
    if len(starts) == 0 or starts[0] != 0 or np.any(np.diff(starts) <= 0) or starts[-1] >= steps:
        return f"'starts' must begin at 0 and increase strictly within the {steps} steps"
    return None


def _npy_shape(path: Path) -> tuple[int, ...]:
    """The shape an .npy file's header declares (its data unread); ValueError if damaged."""
    with open(path, "rb") as stream:
        version = np.lib.format.read_magic(stream)
        header = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}.get(version)
        if header is None:  # (version 3.0: the 2.0 header in UTF-8, read by np.load)
            return ()
        return header(stream)[0]


def _rows_within(path: Path, array: np.ndarray | tuple[int, ...], max_rows: int | None):
    """``array`` (or a shape), `TooManyRows` if its first axis is longer than ``max_rows``."""
    shape = array if isinstance(array, tuple) else array.shape
    if max_rows is not None and shape and shape[0] > max_rows:
        raise TooManyRows(path, max_rows)
    return array


def _an_array(path: Path, name: str, value) -> np.ndarray:
    """``value``, a member of the archive ``path``: numpy hands on the raw bytes of a member named
    .npy that lacks the .npy header (an empty or a foreign file), which is refused here."""
    if not isinstance(value, np.ndarray):
        raise ArrayFileError(f"{path}: '{name}.npy' is not an .npy array (it lacks numpy's header); an .npz of "
                             "arrays, as numpy.savez writes, holds only arrays")
    return value


def _unpickled(path: Path, what: str, load):
    """``load()``, where numpy's refusal of an array of Python objects (which only pickle can
    read) becomes an `ArrayFileError` saying so, rather than calling the file damaged."""
    try:
        return load()
    except ValueError as error:
        if "allow_pickle" not in str(error):
            raise
        raise ArrayFileError(f"{path}: {what} holds Python objects, which only pickle could read, and "
                             "lstmgraph never loads a pickle; save arrays of numbers") from None


def numbers(path: Path, label: str, array: np.ndarray, nan: str | None = None) -> np.ndarray:
    """``array`` as float64; strings, objects or complex numbers, NaN and infinity are errors
    (NaN is allowed where it has a meaning, given as ``nan``, e.g. "no target")."""
    if array.dtype.kind not in "biuf":
        raise ArrayFileError(f"{path}: {_kind(array)} values in {label}, not real numbers")
    values = array.astype(np.float64)
    bad = np.isinf(values) if nan else ~np.isfinite(values)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        what = "infinite values" if nan else "NaN or infinite values"
        raise ArrayFileError(f"{path}: {what} in {label} (the first at index {where})")
    return values


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """The content of an .npz archive of ``arrays`` (written atomically by the caller, or sent
    to another process)."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def npz_arrays(content: bytes) -> dict[str, np.ndarray]:
    """The arrays of an .npz archive's content (no pickle)."""
    with np.load(io.BytesIO(content), allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def write_array(path: Path, array: np.ndarray) -> None:
    """Write ``array`` (at most 2-D) as .npy or .csv, by ``path``'s suffix, atomically."""
    suffix = path.suffix.lower()
    if suffix == ".npy":
        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=False)
        write_atomically(path, buffer.getvalue())
    elif suffix == ".csv":
        text = "".join(",".join(f"{value:.17g}" for value in np.atleast_1d(row)) + "\n" for row in array)
        write_atomically(path, text.encode())
    else:
        raise ArrayFileError(f"{path}: cannot tell the format; expected a file ending in .npy or .csv")


def _check_file(path: Path) -> None:
    """A missing file or a folder is named as such (and a FIFO is not opened: it would block)."""
    if name_too_long(path):
        raise ArrayFileError(f"{path}: {TOO_LONG}")
    if not path.exists():
        raise ArrayFileError(f"{path}: no such file")
    if path.is_dir():
        raise ArrayFileError(f"{path}: is a folder, not a file")
    if not path.is_file():
        raise ArrayFileError(f"{path}: is not a regular file")


def _read_csv(path: Path, max_rows: int | None = None) -> np.ndarray:
    """Rows of numbers, after an optional header row (a first row without a number in it);
    errors name the line of the file. Read a row at a time into floats (8 bytes a number, not
    the text's cells), and no further than the row past ``max_rows`` (`TooManyRows`)."""
    _check_file(path)
    values = array.array("d")
    rows, width, first, header_checked = 0, 0, 0, False
    try:
        with open(path, encoding="utf-8", newline="") as stream:
            reader = csv.reader(_bounded_lines(path, stream))
            for row in reader:
                if not row or not any(cell.strip() for cell in row):
                    continue
                line = reader.line_num
                if not header_checked:
                    header_checked = True
                    if not any(is_number(cell) for cell in row):
                        continue  # a header row
                for cell in row:
                    if not is_number(cell):
                        raise ArrayFileError(f"{path}: line {line}: {cell.strip()[:40]!r} is not a number")
                if not rows:
                    width, first = len(row), line
                elif len(row) != width:
                    raise ArrayFileError(f"{path}: line {line} has {len(row)} columns, line {first} has {width}")
                if max_rows is not None and rows == max_rows:
                    raise TooManyRows(path, max_rows)
                values.extend(float(cell) for cell in row)
                rows += 1
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise ArrayFileError(f"{path}: cannot read the CSV file ({_reason(error)})") from None
    return np.frombuffer(values, dtype=np.float64).reshape(rows, width)


def _bounded_lines(path: Path, stream):
    """The lines of ``stream``, each read no further than `MAX_ROW_BYTES` characters: a longer
    line is refused (`ArrayFileError` naming it) before the CSV reader splits it into cells."""
    number = 0
    while line := stream.readline(MAX_ROW_BYTES + 1):
        number += 1
        if len(line) > MAX_ROW_BYTES:
            raise ArrayFileError(f"{path}: line {number} is longer than {MAX_ROW_BYTES:,} characters, more than a row "
                                 f"of numbers may be ({COUNT_LIMITS_HINT})")
        yield line


def is_number(cell: str) -> bool:
    """Whether Python reads the text as a float."""
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _kind(array: np.ndarray) -> str:
    return {"U": "string", "S": "bytes", "O": "object", "c": "complex", "V": "structured",
            "M": "date", "m": "time"}.get(array.dtype.kind, str(array.dtype))


def _reason(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text if len(text) <= 200 else text[:197] + "..."
