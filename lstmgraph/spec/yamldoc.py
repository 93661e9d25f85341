"""A safe YAML reader for specs: bounded, with numbers as people write them.

PyYAML's SafeLoader with four changes. Events come from libyaml when it is installed (ten
times faster) and are composed here in Python, lazily, so the limits stop a hostile document
early: nesting deeper than `MAX_DEPTH` and more than `MAX_VALUES` values, each alias counted
as the values it stands for (aliases nested nine deep would otherwise expand a billion-fold),
and an alias inside the value it names. ``1e-3`` is a float (YAML 1.1 wants ``1.0e-3``). A
number or date that Python cannot hold is a located error, not a ValueError.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.composer import Composer, ComposerError
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent, CollectionStartEvent
from yaml.nodes import MappingNode, Node, SequenceNode
from yaml.resolver import Resolver

from ..errors import SpecPath
from ..limits import MAX_DEPTH, MAX_VALUES

try:  # libyaml's event parser; composition stays in Python (below) so the limits apply
    from yaml._yaml import CParser as _Events
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Events(Reader, Scanner, Parser):  # type: ignore[no-redef]
        def __init__(self, stream: str):
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)

Position = tuple[int, int]


class LimitError(ComposerError):
    """A document over one of the limits of limits.py."""


class _SpecLoader(Composer, _Events, SafeConstructor, Resolver):
    def __init__(self, text: str):
        _Events.__init__(self, text)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self.values = 0  # values composed so far, aliases expanded
        self.depth = 0
        self.open_anchors: set[str] = set()
        self.extent: dict[int, tuple[int, int]] = {}  # id(node) -> (values, levels), aliases expanded

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            if event.anchor in self.open_anchors:
                raise ComposerError(None, None, f"the alias *{event.anchor} is inside the value it "
                                    "refers to", event.start_mark)
            node = super().compose_node(parent, index)
            values, levels = self.extent[id(node)]
            self._count(values, self.depth + levels, event.start_mark)
            return node
        if isinstance(event, CollectionStartEvent):
            self._count(0, self.depth + 1, event.start_mark)
        self.depth += 1
        if event.anchor is not None:
            self.open_anchors.add(event.anchor)
        node = super().compose_node(parent, index)
        self.open_anchors.discard(event.anchor)
        self.depth -= 1
        children = _children(node)
        values = 1 + sum(self.extent[id(child)][0] for child in children)
        levels = 1 + max((self.extent[id(child)][1] for child in children), default=0) \
            if isinstance(node, (SequenceNode, MappingNode)) else 0
        self.extent[id(node)] = (values, levels)
        self._count(1, 0, event.start_mark)
        return node

    def _count(self, values: int, depth: int, mark: yaml.Mark) -> None:
        self.values += values
        if self.values > MAX_VALUES:
            raise LimitError(None, None, f"more than {MAX_VALUES:,} values (aliases counted as "
                             "the values they stand for)", mark)
        if depth > MAX_DEPTH:
            raise LimitError(None, None, _TOO_DEEP, mark)


_TOO_DEEP = f"lists and mappings nested more than {MAX_DEPTH} deep (aliases counted as the values they stand for)"


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return node.value
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _located(construct):
    """A constructor whose ValueError (a 5,000-digit integer, the date 2024-13-45) is located."""
    def checked(loader: SafeConstructor, node: Node) -> Any:
        try:
            return construct(loader, node)
        except (ValueError, OverflowError) as error:
            raise ConstructorError(None, None, f"cannot read {str(node.value)[:40]!r}: {error}",
                                   node.start_mark) from None
    return checked


_SpecLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))
for _tag in ("int", "timestamp"):
    _SpecLoader.add_constructor(f"tag:yaml.org,2002:{_tag}",
                                _located(SafeConstructor.yaml_constructors[f"tag:yaml.org,2002:{_tag}"]))


def parse_yaml(text: str) -> tuple[Any, dict[SpecPath, Position], list[tuple[SpecPath, Position]]]:
    """Data, the position of every path, and (path, position) of each repeated key.

    Raises `yaml.YAMLError` (`LimitError` over a limit)."""
    loader = _SpecLoader(text)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as error:
        # The libyaml that PyYAML 6.0.4 bundles (0.2.6) has a nesting limit of its own (1,000
        # levels), and its scanner reads ahead through a run of '[' to it before the composer
        # above sees the 33rd level: far past ours, so the same finding.
        if error.problem and "exceeded maximum nesting depth" in error.problem:
            raise LimitError(None, None, _TOO_DEEP, error.problem_mark) from None
        raise
    finally:
        loader.dispose()
    positions: dict[SpecPath, Position] = {}
    duplicates: list[tuple[SpecPath, Position]] = []
    if root is not None:
        _walk(root, positions, duplicates)
    return data, positions, duplicates


def _walk(root: Node, positions: dict, duplicates: list) -> None:
    """Record the 1-based (line, column) of each node, a mapping entry at its key (a loop, not
    recursion; aliases are followed, which the value limit bounds)."""
    pending: list[tuple[Node, SpecPath]] = [(root, ())]
    while pending:
        node, path = pending.pop()
        positions.setdefault(path, _position(node))
        if isinstance(node, MappingNode):
            seen: set = set()
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node.value, str) else None
                if key is None:
                    continue  # a list or mapping as a key: the constructor has refused it
                child = path + (key,)
                if key in seen:
                    duplicates.append((child, _position(key_node)))
                    continue
                seen.add(key)
                positions[child] = _position(key_node)
                pending.append((value_node, child))
        elif isinstance(node, SequenceNode):
            pending.extend((item, path + (index,)) for index, item in enumerate(node.value))


def _position(node: Node) -> Position:
    return node.start_mark.line + 1, node.start_mark.column + 1
