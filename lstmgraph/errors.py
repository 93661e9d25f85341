"""User-facing errors: a spec problem names the file, the field path, its line and column.

Every stage (loading, schema validation, graph checks, compilation) reports problems as
`Problem` objects with a path into the spec document, e.g. ``("connections", 3, "to")``;
`SpecError` turns them into messages such as::

    specs/net.yaml:14:9: connections[3].to: unknown unit 'mem.input_gat'
      expected: a unit group or a memory-block port
      did you mean 'mem.input_gate'?
"""

from __future__ import annotations

import difflib
import re
import reprlib
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

PathElement = str | int
SpecPath = tuple[PathElement, ...]


def format_path(path: Sequence[PathElement]) -> str:
    """``("connections", 3, "to")`` -> ``connections[3].to``."""
    text = ""
    for element in path:
        if isinstance(element, int):
            text += f"[{element}]"
        else:
            text += f".{element}" if text else str(element)
    return text or "(top level)"


#: Characters of a value that an error message echoes (`shown`).
SHOWN_CHARACTERS = 60


def shown(value: Any, limit: int = SHOWN_CHARACTERS) -> str:
    """A value as an error message echoes it, in one place: its repr cut to ``limit``
    characters ("..." marks the cut). Deep nesting and long containers are cut as they are
    written (`reprlib`), and an integer too long to write is named by its size."""
    if isinstance(value, int) and not isinstance(value, bool):
        # (str() of one of more than 4,300 digits raises: a long one is named by its size, uncut)
        text = str(value) if value.bit_length() <= 4 * limit else ""
        return text if text and len(text) <= limit else \
            f"an integer of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    try:
        text = _REPR.repr(value)
    except (RecursionError, ValueError):  # (ValueError: an integer of more digits than Python writes)
        text = f"a {type(value).__name__}"
    return cut(text, limit)


def cut(text: str, limit: int = SHOWN_CHARACTERS) -> str:
    """``text`` cut to ``limit`` characters, "..." marking the cut (`shown`, for text as is)."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 4, 200, 200
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 20


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to a misspelt word, or None when nothing is close."""
    matches = difflib.get_close_matches(str(word), sorted(set(candidates)), n=1, cutoff=0.6)
    return matches[0] if matches else None


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a spec, located by its path in the document."""

    path: SpecPath
    message: str
    expected: str | None = None
    suggestion: str | None = None


class SpecError(Exception):
    """A spec that cannot be used; carries every problem found, each with its location."""

    def __init__(self, problems: Sequence[Problem], source: "SpecSource | None" = None):
        self.problems = list(problems)
        self.source = source
        super().__init__(self.format())

    def __reduce__(self):
        """Pickled with its problems and source, so it reaches `reproduce` from a worker process
        as itself (a located spec error, exit 2)."""
        return type(self), (self.problems, self.source)

    def as_dicts(self) -> list[dict]:
        """The problems as plain data (for JSON output): path, line, column, message, ..."""
        rows = []
        for problem in self.problems:
            position = self.source.position(problem.path) if self.source else None
            rows.append({"file": self.source.filename if self.source else None,
                         "path": format_path(problem.path),
                         "line": position[0] if position else None,
                         "column": position[1] if position else None,
                         "message": problem.message, "expected": problem.expected,
                         "suggestion": problem.suggestion})
        return rows

    def counted(self) -> str:
        """"1 problem", "3 problems": the headline's count."""
        return f"{len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}"

    def headline(self, spec: object) -> str:
        """The report's first line about ``spec`` (its file or name): "is not a valid spec", or
        "cannot run with --data X" where every problem is about a field an option set: the field
        itself or a section holding it (`train --data` with the wrong widths), or a field inside the
        problem's section that its message names (`--epochs` beside a task: "epochs count passes
        ..."); not an option that only set another field of that section."""
        problems = self.counted()
        options = [self.source.set_by(problem.path) + self.source.named_in(problem) if problem.path else []
                   for problem in self.problems] if self.source is not None else []
        if options and all(options):
            given = ", ".join(dict.fromkeys(option for each in options for option in each))
            return f"{spec} cannot run with {given} ({problems})"
        return f"{spec} is not a valid spec ({problems})"

    def format(self) -> str:
        lines = []
        for problem in self.problems:
            where = self.source.describe(problem.path) if self.source else format_path(problem.path)
            lines.append(f"{where}: {problem.message}")
            if problem.expected:
                lines.append(f"  expected: {problem.expected}")
            if problem.suggestion:
                lines.append(f"  {problem.suggestion}")
        return "\n".join(lines)


class UntrainableSpec(SpecError):
    """A valid spec that cannot be trained as it is (`validate` passes it): no training section,
    or no length for the run (steps, epochs or a data file)."""

    def headline(self, spec: object) -> str:
        return f"{spec} is a valid spec, but cannot be trained ({self.counted()})"


#: What a spec argument should be, for a path that is none (missing, a folder).
SPEC_EXPECTED = "a spec file (.yaml, .yml, .json), or a bundled spec's name ('lstmgraph specs' lists them)"


class SpecFileError(SpecError):
    """A spec file that cannot be read at all: missing, a folder, too large, not text."""

    def __init__(self, filename: str, message: str, expected: str | None = None):
        super().__init__([Problem((), message, expected=expected)], SpecSource(filename))


class SpecSource:
    """Where a spec came from: its file name and the line/column of every field."""

    def __init__(self, filename: str, positions: dict[SpecPath, tuple[int, int]] | None = None,
                 given: dict[SpecPath, str] | None = None):
        self.filename = filename
        self.positions = positions or {}
        #: Fields set from outside the file (`Overrides`: ``train --epochs 3``), and by what.
        self.given = given or {}

    def with_given(self, given: dict[SpecPath, str]) -> "SpecSource":
        """The same file's source, with ``given`` fields set from outside it."""
        return SpecSource(self.filename, self.positions, {**self.given, **given})

    def position(self, path: SpecPath) -> tuple[int, int] | None:
        """Line and column (1-based) of a field, or of its nearest located ancestor."""
        path = tuple(path)
        while True:
            if path in self.positions:
                return self.positions[path]
            if not path:
                return None
            path = path[:-1]

    def set_by(self, path: SpecPath) -> list[str]:
        """The options that set the field at ``path`` itself, or a section holding it."""
        path = tuple(path)
        return list(dict.fromkeys(what for field, what in self.given.items() if path[:len(field)] == field))

    def named_in(self, problem: "Problem") -> list[str]:
        """The options that set a field inside the problem's section whose name its message says."""
        path = tuple(problem.path)
        return list(dict.fromkeys(what for field, what in self.given.items()
                                  if len(field) > len(path) and field[:len(path)] == path
                                  and re.search(rf"\b{re.escape(str(field[-1]))}\b", problem.message)))

    def given_by(self, path: SpecPath) -> list[str]:
        """What set the field at ``path`` (or a field inside it, or a section holding it) from
        outside the file: the options, in order, without repeats."""
        path = tuple(path)
        return list(dict.fromkeys(what for field, what in self.given.items()
                                  if field[:len(path)] == path or path[:len(field)] == field))

    def describe(self, path: SpecPath) -> str:
        """Where a problem is: file, line and column, and the field's path; a field set from
        outside the file (or a section holding one) says what set it, as the file's line did not."""
        path = tuple(path)
        position = self.position(path)
        location = f"{self.filename}:{position[0]}:{position[1]}" if position else self.filename
        if path:
            location = f"{location}: {format_path(path)}"
        given = self.given_by(path)
        return f"{location} (with {', '.join(given)} given)" if given else location
