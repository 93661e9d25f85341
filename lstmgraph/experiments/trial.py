"""What every protocol shares: the data generators of a trial and the shape of its result row."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

Progress = Callable[[dict[str, Any]], None]


def data_rng(seed: int, purpose: int) -> np.random.Generator:
    """The generator of one data stream of a trial (purposes: 0 training, 1 test, 2 sets)."""
    return np.random.default_rng(np.random.SeedSequence([seed, 1997, purpose]))


def result_row(seed: int, solved: bool, count: int, steps: int, diverged: bool = False,
               **extra: Any) -> dict[str, Any]:
    """One trial's result: ``count`` sequences or training streams presented, ``to_success``
    the same when solved."""
    return {"seed": seed, "solved": solved, "to_success": count if solved else None, "presented": count,
            "steps": steps, "diverged": diverged, **extra}
