"""A JSON reader that keeps where every value was written.

Python's `json` loses positions and lets a repeated key win silently, and both it and PyYAML
recurse once per nesting level. This reader is a loop over an explicit stack: it returns the
same data as `json.loads` (strings through json's own scanner), the (line, column) of every
value, each mapping entry located at its key, and the repeated keys; it stops with a located
`JsonSyntaxError` at the first syntax error and at the nesting and size limits.
"""

from __future__ import annotations

import bisect
import json.decoder
import re
from typing import Any, NoReturn

from ..errors import SpecPath
from ..limits import LIMITS_HINT, MAX_DEPTH, MAX_VALUES

_SPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_SMALLER = f"a smaller, flatter spec ({LIMITS_HINT})"
_LITERALS = (("true", True), ("false", False), ("null", None))

Position = tuple[int, int]


class JsonSyntaxError(Exception):
    """Text that is not JSON, or JSON over a limit; ``position`` is 1-based (line, column)."""

    def __init__(self, message: str, position: Position, expected: str | None = None):
        super().__init__(message)
        self.message = message
        self.position = position
        self.expected = expected


class _Open:
    """A list or mapping being read."""

    __slots__ = ("value", "path", "key")

    def __init__(self, value: list | dict, path: SpecPath):
        self.value = value
        self.path = path
        self.key: str | None = None


def parse_json(text: str) -> tuple[Any, dict[SpecPath, Position], list[tuple[SpecPath, Position]]]:
    """Data, the position of every path, and (path, position) of each repeated key."""
    return _Reader(text).read()


class _Reader:
    def __init__(self, text: str):
        self.text = text
        self.line_starts = [0] + [match.end() for match in re.finditer("\n", text)]
        self.positions: dict[SpecPath, Position] = {}
        self.duplicates: list[tuple[SpecPath, Position]] = []

    def where(self, index: int) -> Position:
        line = bisect.bisect_right(self.line_starts, index)
        return line, index - self.line_starts[line - 1] + 1

    def fail(self, message: str, index: int, expected: str | None = None) -> NoReturn:
        if expected != _SMALLER:  # a syntax error rather than a limit
            message = f"invalid JSON: {message}"
        raise JsonSyntaxError(message, self.where(index), expected)

    def skip(self, index: int) -> int:
        return _SPACE.match(self.text, index).end()

    def read(self):
        text, stack = self.text, []
        index, path, count = self.skip(0), (), 0
        while True:
            # A value starts at `index`; it is located at `path`.
            self.positions.setdefault(path, self.where(index))
            count += 1
            if count > MAX_VALUES:
                self.fail(f"the spec is too large: more than {MAX_VALUES:,} values", index, _SMALLER)
            char = text[index:index + 1]
            if char in ("[", "{"):
                if len(stack) >= MAX_DEPTH:
                    self.fail(f"the spec is too large: lists and mappings nested more than {MAX_DEPTH} deep",
                              index, _SMALLER)
                stack.append(_Open([] if char == "[" else {}, path))
                index = self.skip(index + 1)
                if text.startswith("]" if char == "[" else "}", index):
                    value, index = stack.pop().value, index + 1
                else:
                    index, path = self.next_path(stack[-1], index)
                    continue
            else:
                value, index = self.scalar(index)
            # The value is complete: store it, then read separators and closing brackets.
            while True:
                index = self.skip(index)
                if not stack:
                    if index != len(text):
                        self.fail("extra data after the document", index)
                    return value, self.positions, self.duplicates
                top = stack[-1]
                if isinstance(top.value, list):
                    top.value.append(value)
                else:
                    top.value[top.key] = value
                close = "]" if isinstance(top.value, list) else "}"
                char = text[index:index + 1]
                if char == ",":
                    index, path = self.next_path(top, self.skip(index + 1))
                    break
                if char != close:
                    self.fail(f"expected ',' or '{close}'", index)
                value, index = stack.pop().value, index + 1

    def next_path(self, top: _Open, index: int) -> tuple[int, SpecPath]:
        """Move to the next item of ``top``: for a mapping, read its key and the colon."""
        if isinstance(top.value, list):
            return index, top.path + (len(top.value),)
        if not self.text.startswith('"', index):
            self.fail("expected a key in double quotes", index)
        key, end = self.string(index)
        path = top.path + (key,)
        if key in top.value:
            self.duplicates.append((path, self.where(index)))
        else:
            self.positions[path] = self.where(index)
        top.key = key
        end = self.skip(end)
        if not self.text.startswith(":", end):
            self.fail("expected ':' after the key", end)
        return self.skip(end + 1), path

    def string(self, index: int) -> tuple[str, int]:
        try:
            return json.decoder.scanstring(self.text, index + 1)
        except json.JSONDecodeError as error:
            self.fail(error.msg, error.pos)

    def scalar(self, index: int) -> tuple[Any, int]:
        text = self.text
        if text.startswith('"', index):
            return self.string(index)
        match = _NUMBER.match(text, index)
        if match:
            integer, fraction, exponent = match.groups()
            try:
                value = float(match.group()) if fraction or exponent else int(integer)
            except ValueError:
                self.fail(f"a number of {len(integer)} digits", index, "at most 4300 digits")
            return value, match.end()
        for word, value in _LITERALS:
            if text.startswith(word, index):
                return value, index + len(word)
        if index >= len(text):
            self.fail("the document ends where a value should be", index)
        self.fail(f"expected a value, found {text[index]!r}", index,
                  "a string in double quotes, a number, true, false, null, [...] or {...}")
