"""Read a YAML or JSON spec file into plain data plus the line/column of every field.

YAML and JSON share one schema. Each format has its own bounded reader that keeps positions
(yamldoc.py, jsondoc.py), so JSON keeps exact JSON semantics whatever its indentation.
Duplicate keys, which both formats' usual parsers would silently collapse, are reported; so
are files that are missing, not regular files, over `MAX_SPEC_BYTES`, or not UTF-8.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml

from ..bundled import SPEC_FORMATS
from ..errors import SPEC_EXPECTED, Problem, SpecError, SpecFileError, SpecSource
from ..files import NotAFile, open_no_follow
from .jsondoc import JsonSyntaxError, parse_json
from ..limits import LIMITS_HINT, MAX_SPEC_BYTES
from .yamldoc import LimitError, parse_yaml



def read_spec_file(path: str | Path, follow_links: bool = True) -> tuple[Any, SpecSource]:
    """Parse a spec file; return its data and a `SpecSource` that locates every field.
    ``follow_links=False`` (a file found in a folder a command was given, such as reproduce's
    --specs DIR): a symbolic link there is refused, never followed out of the folder."""
    path = Path(path)
    name = str(path)
    fmt = SPEC_FORMATS.get(path.suffix.lower())
    if fmt is None and not path.is_dir():  # a folder: _read_bytes says so
        raise SpecFileError(name, f"cannot tell the format of '{path.name}'",
                            "a file ending in .yaml, .yml or .json")
    return parse_spec_bytes(_read_bytes(path, follow_links), name, fmt)


def _read_bytes(path: Path, follow_links: bool = True) -> bytes:
    """The file's content; a FIFO or device is refused before it is opened (it could block),
    and a symbolic link unless ``follow_links``."""
    name = str(path)
    try:
        if follow_links:
            mode = path.stat().st_mode
            if stat.S_ISDIR(mode):
                raise SpecFileError(name, "is a folder, not a spec file", SPEC_EXPECTED)
            if not stat.S_ISREG(mode):
                raise SpecFileError(name, "is not a regular file")
            stream = open(path, "rb")
        else:
            try:
                stream = os.fdopen(open_no_follow(path, os.O_RDONLY), "rb")
            except NotAFile as refused:
                if refused.strerror.startswith("is a folder"):
                    raise SpecFileError(name, "is a folder, not a spec file", SPEC_EXPECTED) from None
                raise SpecFileError(name, refused.strerror) from None
        with stream:
            content = stream.read(MAX_SPEC_BYTES + 1)
    except FileNotFoundError:
        raise SpecFileError(name, "no such file") from None
    except OSError as error:
        raise SpecFileError(name, f"cannot read the file: {error.strerror or error}") from None
    if len(content) > MAX_SPEC_BYTES:
        raise SpecFileError(name, f"the file is larger than {MAX_SPEC_BYTES:,} bytes",
                            f"a smaller spec ({LIMITS_HINT})")
    return content


def parse_spec_bytes(content: bytes, filename: str, fmt: str = "yaml") -> tuple[Any, SpecSource]:
    """Parse a spec file's ``content`` (UTF-8, a byte order mark allowed) in the given format:
    `parse_spec_text` after a `SpecFileError` naming ``filename`` for bytes that are not UTF-8."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise SpecFileError(filename, f"not UTF-8 text (byte {error.start} is {content[error.start]:#04x})",
                            "a text file in UTF-8") from None
    return parse_spec_text(text, filename, fmt)


def parse_spec_text(text: str, filename: str = "<spec>", fmt: str = "yaml") -> tuple[Any, SpecSource]:
    """Parse spec text in the given format ('yaml' or 'json')."""
    if fmt == "json":
        try:
            data, positions, duplicates = parse_json(text)
        except JsonSyntaxError as error:
            raise SpecError([Problem((), error.message, expected=error.expected)],
                            SpecSource(filename, {(): error.position})) from None
    else:
        try:
            data, positions, duplicates = parse_yaml(text)
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark or error.context_mark
            position = {(): (mark.line + 1, mark.column + 1)} if mark else {}
            message = " ".join(part for part in (error.context, error.problem) if part)
            if isinstance(error, LimitError):
                problem = Problem((), f"the spec is too large: {message}",
                                  expected=f"a smaller, flatter spec ({LIMITS_HINT})")
            else:
                problem = Problem((), f"invalid YAML: {message}")
            raise SpecError([problem], SpecSource(filename, position)) from None
        except yaml.YAMLError as error:
            raise SpecError([Problem((), f"invalid YAML: {error}")], SpecSource(filename)) from None
    if duplicates:
        # Point at the repeated occurrence rather than the first one.
        raise SpecError([Problem(path, f"key '{path[-1]}' appears more than once",
                                 expected="each key once per mapping") for path, _ in duplicates],
                        SpecSource(filename, {**positions, **dict(duplicates)}))
    return data, SpecSource(filename, positions)
