"""How a results folder's stored settings differ from those a command would run with: the
settings named by their dotted paths, each with both values, for `ResultsFolder.check_settings`'s
refusal (so the user sees what to change, not only that something differs)."""

from __future__ import annotations

import json
from typing import Any

#: A value shown in full up to this many characters; a longer one around its first difference.
SHOWN_CHARS = 60
#: Settings only a command's option sets: (the option, the words for its absence).
SET_BY = {"budget_steps": ("--max-steps", "no cap")}


def setting_differences(stored: Any, wanted: Any, limit: int = 3) -> list[str]:
    """Up to ``limit`` settings (dotted paths) on which a folder's ``stored`` settings and a
    command's ``wanted`` ones differ, with both values, and the option that sets one (`SET_BY`),
    e.g. "budget_steps (--max-steps): 3,000 in the folder, no cap in this command"."""
    found: list[str] = []

    def walk(path: str, ours: Any, theirs: Any) -> None:
        if len(found) >= limit or ours == theirs:
            return
        if isinstance(ours, dict) and isinstance(theirs, dict):
            for key in list(ours) + [key for key in theirs if key not in ours]:
                walk(f"{path}.{key}" if path else str(key), ours.get(key, _ABSENT), theirs.get(key, _ABSENT))
            return
        option, absent = SET_BY.get(path.split(".")[0], (None, None))
        shown_ours, shown_theirs = _shown_pair(*(_Words(absent) if value is None and absent else value
                                                 for value in (ours, theirs)))
        named = f"{path} ({option})" if option else path
        found.append(f"{named}: {shown_ours} in the folder, {shown_theirs} in this command")

    walk("", stored, wanted)
    return found or ["the settings as a whole"]


_ABSENT = object()


class _Words(str):
    """Words shown as they are (an option's absence), not as a JSON string."""


def _text(value: Any) -> str:
    if value is _ABSENT:
        return "not set"
    if isinstance(value, _Words):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return json.dumps(value)


def _shown_pair(ours: Any, theirs: Any) -> tuple[str, str]:
    """Both values as text; long ones cut to the stretch where they first differ, so two
    descriptions alike for 100 characters do not look the same."""
    one, other = _text(ours), _text(theirs)
    if max(len(one), len(other)) <= SHOWN_CHARS:
        return one, other
    start = next((i for i, (a, b) in enumerate(zip(one, other)) if a != b), min(len(one), len(other)))
    start = max(0, start - 20)
    return tuple(("..." if start else "") + text[start:start + SHOWN_CHARS - 6]
                 + ("..." if len(text) > start + SHOWN_CHARS - 6 else "") for text in (one, other))
