"""Functions a test runs in worker processes (spawned workers import them by name)."""

from __future__ import annotations

import os

from lstmgraph.errors import Problem, SpecError, SpecSource


class Unpicklable(Exception):
    """An error whose constructor takes two arguments: it pickles, but cannot be unpickled (the
    kind that once broke the whole pool)."""

    def __init__(self, message: str, code: int):
        super().__init__(f"{message} (code {code})")
        self.code = code


def spec_error(width: int) -> None:
    raise SpecError([Problem(("groups", 0, "size"), f"the net takes {width} inputs, the task gives 3",
                             expected="size: 3")], SpecSource("specs/net.yaml"))


def unpicklable(message: str) -> None:
    raise Unpicklable(message, 7)


def value_error(message: str) -> None:
    raise ValueError(message)


def square(x: int) -> int:
    return x * x


def die(code: int) -> None:
    os._exit(code)
