"""Read a YAML or JSON spec file into plain data plus the line/column of every field.

YAML and JSON share one schema. The data comes from the format's own parser (so JSON keeps
exact JSON semantics); positions come from walking the YAML node tree, which also parses
JSON. Duplicate keys, which both parsers would silently collapse, are reported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from ..errors import Problem, SpecError, SpecPath, SpecSource

SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".json": "json"}


def read_spec_file(path: str | Path) -> tuple[Any, SpecSource]:
    """Parse a spec file; return its data and a `SpecSource` that locates every field."""
    path = Path(path)
    name = str(path)
    fmt = SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise SpecError(
            [Problem((), f"cannot tell the format of '{path.name}'",
                     expected="a file ending in .yaml, .yml or .json")],
            SpecSource(name))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError([Problem((), "no such file")], SpecSource(name)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise SpecError([Problem((), f"cannot read the file: {error}")], SpecSource(name)) from None
    return parse_spec_text(text, name, fmt)


def parse_spec_text(text: str, filename: str = "<spec>", fmt: str = "yaml") -> tuple[Any, SpecSource]:
    """Parse spec text in the given format ('yaml' or 'json')."""
    if fmt == "json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            source = SpecSource(filename, {(): (error.lineno, error.colno)})
            raise SpecError([Problem((), f"invalid JSON: {error.msg}")], source) from None
        positions, duplicates = _positions_or_empty(text)
    else:
        try:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
            data = yaml.safe_load(text)
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark or error.context_mark
            position = {(): (mark.line + 1, mark.column + 1)} if mark else {}
            message = " ".join(part for part in (error.context, error.problem) if part)
            raise SpecError([Problem((), f"invalid YAML: {message}")],
                            SpecSource(filename, position)) from None
        except yaml.YAMLError as error:
            raise SpecError([Problem((), f"invalid YAML: {error}")], SpecSource(filename)) from None
        positions, duplicates = {}, []
        if root is not None:
            _walk(root, (), positions, duplicates)
    if duplicates:
        # Point at the repeated occurrence rather than the first one.
        raise SpecError([Problem(path, f"key '{path[-1]}' appears more than once",
                                 expected="each key once per mapping") for path, _ in duplicates],
                        SpecSource(filename, {**positions, **dict(duplicates)}))
    return data, SpecSource(filename, positions)


def _positions_or_empty(text: str) -> tuple[dict[SpecPath, tuple[int, int]], list]:
    """Positions of a JSON document via the YAML composer; empty if YAML cannot read it."""
    positions: dict[SpecPath, tuple[int, int]] = {}
    duplicates: list[SpecPath] = []
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}, []
    if root is not None:
        _walk(root, (), positions, duplicates)
    return positions, duplicates


def _walk(node: yaml.Node, path: SpecPath, positions: dict, duplicates: list) -> None:
    """Record the 1-based (line, column) of each node; a mapping entry is located at its key.
    Repeated keys are collected in ``duplicates`` as (path, position of the repeat)."""
    positions.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
    if isinstance(node, yaml.MappingNode):
        seen: set = set()
        for key_node, value_node in node.value:
            key = key_node.value
            child = path + (key,)
            if key in seen:
                duplicates.append((child, (key_node.start_mark.line + 1, key_node.start_mark.column + 1)))
                continue
            seen.add(key)
            positions[child] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            _walk(value_node, child, positions, duplicates)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, path + (index,), positions, duplicates)
