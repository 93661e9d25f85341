"""The values of one ``--vary KEY=V1,V2,...`` argument (`parse_vary`), and when two are the same;
one ``KEY=VALUE`` of ``reproduce --task-option`` (`parse_option`), its value read alike.

Values come as a comma-separated list, each read as JSON (0.5, true, [1, 2], null, "text") or
else taken as text (``cue=length,delay``); a comma inside brackets, braces or quotes belongs to
its value (``input_gate_bias=[-1,-2,-3],[-2,-4,-6]``). ``A:B:N`` is N values evenly spaced from A
to B, both ends exact, and ``A:B:N:log`` N values evenly spaced on a log scale; where A and B
are written as whole numbers (``-2:2:5``, ``100:1e3:4``, ``1:1e3:4:log``), so are the values
that are whole.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

#: The most values one key takes, and the most settings a grid may have.
MAX_VALUES = 100
MAX_SETTINGS = 1000


class SweepError(ValueError):
    """A sweep that cannot be run as asked: the message names the key, file or option."""


def same_value(value: Any, other: Any) -> bool:
    """Sweep values equal as the net takes them (2 and 2.0 alike; a list of one and its number)."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(other, list) and len(other) == 1:
        other = other[0]
    return _equal(value, other)


def _equal(value: Any, other: Any) -> bool:
    """Equal as JSON, numbers by value at any depth ([1, 2] and [1.0, 2.0] alike)."""
    if isinstance(value, list) and isinstance(other, list):
        return len(value) == len(other) and all(map(_equal, value, other))
    if isinstance(value, dict) and isinstance(other, dict):
        return value.keys() == other.keys() and all(_equal(value[key], other[key]) for key in value)
    return json.dumps(value, sort_keys=True) == json.dumps(other, sort_keys=True) or (
        isinstance(value, (int, float)) and isinstance(other, (int, float)) and not isinstance(value, bool)
        and not isinstance(other, bool) and value == other)  # (exact: no float() of an integer too large for one)


def finite_number(value: Any) -> bool:
    """Whether ``value`` is a real number a float holds: not a bool, finite, and an integer no
    larger than a float's range (JSON reads 10**400 as an int, on which math.isfinite overflows)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return abs(value) <= sys.float_info.max if isinstance(value, int) else math.isfinite(value)


_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_RANGE = re.compile(rf"^({_NUMBER}):({_NUMBER}):(\d+)(:log)?$")


def split_values(text: str) -> list[str]:
    """``text`` split at the commas outside brackets, braces and double quotes."""
    items, depth, quoted, start = [], 0, False, 0
    for index, char in enumerate(text):
        if quoted:
            quoted = char != '"' or text[index - 1] == "\\"
        elif char == '"':
            quoted = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(text[start:index])
            start = index + 1
    return items + [text[start:]]


def _range(key: str, match: re.Match) -> list[Any]:
    low_text, high_text, count_text, log = match.groups()
    low, high, count = float(low_text), float(high_text), int(count_text)
    if not 1 <= count <= MAX_VALUES or not (math.isfinite(low) and math.isfinite(high)):
        raise SweepError(f"--vary {key}: a range A:B:N takes 1 to {MAX_VALUES} values and finite ends, "
                         f"not {match.group(0)}")
    if log and not (low > 0 and high > 0):
        raise SweepError(f"--vary {key}: a log range takes ends > 0, not {match.group(0)}")
    if count == 1:
        values = [low]
    elif log:
        values = [low] + [math.exp(math.log(low) + (math.log(high) - math.log(low)) * i / (count - 1))
                          for i in range(1, count - 1)] + [high]
    else:
        values = [low * (1 - i / (count - 1)) + high * (i / (count - 1)) for i in range(count)]  # (ends exact)
    whole = all(re.fullmatch(r"[-+]?\d+(?:[eE]\+?\d+)?", t) and float(t).is_integer()
                for t in (low_text, high_text))
    values = [float(f"{v:.12g}") for v in values]
    return [int(v) if whole and v == int(v) else v for v in values]


def parse_value(text: str) -> Any:
    """One value: JSON (0.5, true, [1, 2], null, "text"), else the text itself."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # (ValueError: not JSON, or an integer of more digits than Python reads)
        return text


def value_text(value: Any) -> str:
    """A value as `parse_value` reads it back: text as is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def split_pair(argument: str, flag: str, form: str, example: str) -> tuple[str, str]:
    """(KEY, the text after ``=``) of ``flag``'s argument ``KEY=...``; `SweepError` saying
    ``form`` and ``example`` where there is no ``=`` or no key."""
    key, equals, text = argument.partition("=")
    key = key.strip()
    if not equals or not key:
        raise SweepError(f"{flag} takes {form}, such as {example}; got {argument!r}")
    return key, text


def parse_option(argument: str, flag: str, example: str) -> tuple[str, Any]:
    """(KEY, VALUE) of one ``KEY=VALUE`` option (``reproduce --task-option``), the value read
    as `parse_value` reads it."""
    key, text = split_pair(argument, flag, "KEY=VALUE", example)
    return key, parse_value(text)


def parse_vary(argument: str) -> tuple[str, list[Any]]:
    """(KEY, its values) of ``KEY=V1,V2,...``; `SweepError` names what is wrong."""
    key, text = split_pair(argument, "--vary", "KEY=V1,V2,... (or KEY=A:B:N)", "learning_rate=0.1,0.5")
    values: list[Any] = []
    for item in split_values(text):
        item = item.strip()
        if not item:
            raise SweepError(f"--vary {key}: an empty value in {text!r}")
        match = _RANGE.match(item)
        values += _range(key, match) if match else [parse_value(item)]
    return key, checked_values(key, values)


def checked_values(key: str, values: list[Any]) -> list[Any]:
    """A key's values, `SweepError` for more than `MAX_VALUES` or a value twice (`same_value`):
    what `parse_vary` reads and `sweep.grid` is given alike."""
    if len(values) > MAX_VALUES:
        raise SweepError(f"--vary {key}: {len(values)} values, more than {MAX_VALUES}")
    for index, value in enumerate(values):
        if any(same_value(value, other) for other in values[:index]):
            raise SweepError(f"--vary {key}: the value {json.dumps(value)} twice")
    return values
