"""Turn plain spec data into a `NetworkSpec`, translating pydantic's errors into located problems."""

from __future__ import annotations

import re
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from ..arrays import is_number
from ..errors import Problem, SpecError, SpecPath, SpecSource, did_you_mean, shown
from ..operations import ALIASES
from .consistency import training_problems
from ..limits import LIMITS_HINT, MAX_GROUP_SIZE, MAX_NAME_LENGTH
from .models import SPEC_VERSION, NetworkSpec

_NAME_RULE = "a name of letters, digits and underscores, not starting with a digit"
_NETWORK_NAME_RULE = (f"at most {MAX_NAME_LENGTH} letters, digits, '_', '.' and '-', not starting "
                      "with '.' or '-' (the name becomes part of file names)")
_KINDS = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", type(None): "null",
          list: "a list", dict: "a mapping"}
_NUMBER_TYPES = ("int_type", "float_type", "int_from_float", "bool_type")


def validate_spec_data(data: Any, source: SpecSource, data_files: bool = True) -> NetworkSpec:
    """Validate spec data against the schema, then its training section against its groups
    (`training_problems`, ``data_files`` passed on); raise `SpecError` listing every problem."""
    if data is None:
        raise SpecError([Problem((), "the spec is empty",
                                 expected="a mapping with version, groups and connections")], source)
    if not isinstance(data, dict):
        raise SpecError([Problem((), f"the spec is {_KINDS.get(type(data), type(data).__name__)}",
                                 expected="a mapping with version, groups and connections")], source)
    try:
        spec = NetworkSpec.model_validate(data)
    except ValidationError as error:
        problems = [_problem(detail, data) for detail in error.errors(include_url=False)]
        raise SpecError(list(dict.fromkeys(problems)), source) from None  # (once each)
    problems = training_problems(spec, source.filename, data_files)
    if problems:
        raise SpecError(problems, source)
    return spec


def _problem(detail: dict, data: Any) -> Problem:
    path = _data_path(detail["loc"], data)
    kind = detail["type"]
    context = detail.get("ctx") or {}
    given = detail.get("input")
    if kind == "extra_forbidden":
        key = path[-1]
        allowed = _allowed_keys(path[:-1], data)
        return Problem(path, f"unknown key '{key}'",
                       expected=f"one of {', '.join(allowed)}" if allowed else None,
                       suggestion=_suggest(key, allowed))
    if kind == "missing":
        return Problem(path, f"missing required key '{path[-1]}'",
                       suggestion=f"begin the spec with version: {SPEC_VERSION}" if path == ("version",) else None)
    if kind == "literal_error":
        options = re.findall(r"'([^']*)'", str(context.get("expected", "")))
        aliases = [alias for alias, name in ALIASES.items() if name in options]
        suggestion = ("softmax is for output groups only" if given == "softmax" and path[-1] == "activation"
                      else _suggest(given, options + aliases))
        return Problem(path, f"{given!r} is not allowed", expected=f"one of {', '.join(options)}",
                       suggestion=suggestion)
    if kind == "model_type":  # (pydantic's words name our classes: "instance of TaskSpec")
        return _not_a_mapping(path, given, _allowed_keys(path, data))
    if kind == "union_tag_invalid":
        options = re.findall(r"'([^']*)'", str(context.get("expected_tags", "")))
        return Problem(path + ("kind",), f"unknown kind {context.get('tag')!r}",
                       expected=f"one of {', '.join(options)}",
                       suggestion=_suggest(context.get("tag"), options))
    if kind == "union_tag_not_found":
        return Problem(path, "missing required key 'kind'",
                       expected="kind: input, hidden, gate, output or memory_block")
    if kind in ("string_pattern_mismatch", "string_too_long") and path == ("name",):
        return Problem(path, f"invalid name {_shown(given)}", expected=_NETWORK_NAME_RULE)
    if kind == "string_pattern_mismatch":
        rule = (_NAME_RULE if path[-1] == "name" and path[0] == "groups"
                else "no spaces, slashes or '>' (a connection's pair is named FROM->TO)")
        return Problem(path, f"invalid name {_shown(given)}", expected=rule)
    if kind == "too_short":
        return Problem(path, "is empty", expected=f"at least {context.get('min_length', 1)} item(s)")
    if kind == "value_error":
        message = str(context.get("error", detail["msg"]))
        option = re.match(r"option (\w+): ", message)  # (a task option over the integers' limit: at the option)
        if option and path[-1:] == ("task",) and isinstance(given, dict) and option.group(1) in given:
            path += (option.group(1),)
        return Problem(path, message)
    expected = re.sub(r"^Input should (be )?", "", detail["msg"])
    if kind == "less_than_equal" and context.get("le") == MAX_GROUP_SIZE:
        expected += f" ({LIMITS_HINT})"
    if isinstance(given, (dict, list)):
        return Problem(path, f"invalid value: {_KINDS[type(given)]}", expected=expected)
    message = f"invalid value {_shown(given)}"
    if kind in _NUMBER_TYPES and type(given) in _KINDS:
        message += f" ({_KINDS[type(given)]})"
    unquoted = isinstance(given, str) and kind in _NUMBER_TYPES and is_number(given)
    suggestion = f"write it without quotes: {given.strip()}" if unquoted else None
    named = _names_a_group(path)
    if isinstance(given, bool) and (named or kind == "string_type"):  # (YAML 1.1's booleans: on, no, ...)
        message += " (a boolean)"
        what = f"a name so spelt, as in '{'on' if given else 'off'}'" if named else "the text"
        suggestion = (f"YAML reads an unquoted {'on, yes or true' if given else 'off, no or false'} as a boolean: "
                      f"quote {what}")
    return Problem(path, message, expected=expected, suggestion=suggestion)


def _names_a_group(path: SpecPath) -> bool:
    """Whether the field at ``path`` holds a name: a group's, the network's, or one in a
    connection's ``from``, ``to`` or ``gated_by`` (alone or in a list)."""
    keys = [element for element in path if isinstance(element, str)]
    return bool(keys) and keys[-1] in ("name", "from", "to", "gated_by")


def _not_a_mapping(path: SpecPath, given: Any, keys: list[str]) -> Problem:
    """A value where a mapping belongs: its keys, and the mapping a lone value most likely meant
    (a task's name: ``{name: adding}``; a connection's init: ``{constant: 0.5}``)."""
    number = isinstance(given, (int, float)) and not isinstance(given, bool)
    what = f" {_shown(given)}" if number or isinstance(given, str) else f": {_KINDS.get(type(given), 'a value')}"
    suggestion = None
    if isinstance(given, str) and "name" in keys and "from" not in keys:  # (a task, an optimizer; not a connection)
        suggestion = f"write {{name: {given}}}" + (", with the task's options beside the name" if keys == ["name"] else "")
    elif number and "constant" in keys:
        suggestion = f"write {{constant: {given}}} for equal weights, or {{uniform: {given}}} for a range"
    expected = ("a mapping of the task's name and its options" if keys == ["name"]
                else f"a mapping with the keys {', '.join(keys)}")
    return Problem(path, f"invalid value{what}", expected=expected, suggestion=suggestion)


def _shown(value: Any) -> str:
    """A value as the message quotes it, cut short (`errors.shown`)."""
    return shown(value, 60)


def _suggest(word: Any, options: list[str]) -> str | None:
    match = did_you_mean(str(word), options) if word is not None else None
    return f"did you mean '{match}'?" if match else None


def _data_path(loc: tuple, data: Any) -> SpecPath:
    """Drop the union tags pydantic inserts (e.g. ``memory_block`` in groups[1].memory_block.size)."""
    path: list = []
    node = data
    for element in loc:
        if isinstance(node, dict) and element not in node and element == node.get("kind"):
            continue
        path.append(element)
        try:
            node = node[element]
        except (KeyError, IndexError, TypeError):
            node = None
    return tuple(path)


def _allowed_keys(path: SpecPath, data: Any) -> list[str]:
    """The keys the schema allows in the mapping at ``path``."""
    annotation: Any = NetworkSpec
    node = data
    for element in path:
        node = node[element] if isinstance(node, (dict, list)) else None
        if isinstance(element, int):
            annotation = _list_item(annotation)
        else:
            model = _model_for(annotation, node)
            field = _field(model, element) if model else None
            if field is None:
                return []
            annotation = field.annotation
    model = _model_for(annotation, node)
    if model is None:
        return []
    return [info.alias or name for name, info in model.model_fields.items()]


def _field(model: type[BaseModel], key: str):
    for name, info in model.model_fields.items():
        if key in (name, info.alias):
            return info
    return None


def _strip(annotation: Any) -> list:
    """The alternatives of an annotation, with Optional, Annotated and unions unwrapped."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _strip(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [alt for arg in typing.get_args(annotation) for alt in _strip(arg)]
    return [annotation]


def _list_item(annotation: Any) -> Any:
    for alternative in _strip(annotation):
        if typing.get_origin(alternative) is list:
            return typing.get_args(alternative)[0]
    return None


def _model_for(annotation: Any, node: Any) -> type[BaseModel] | None:
    models = [alt for alt in _strip(annotation) if isinstance(alt, type) and issubclass(alt, BaseModel)]
    if len(models) > 1 and isinstance(node, dict):
        for model in models:
            kind = model.model_fields.get("kind")
            if kind is not None and node.get("kind") in typing.get_args(kind.annotation):
                return model
        return None
    return models[0] if models else None
