"""The CPU's compiled functions as GPU device code: `device_version` rebuilds a numba function
(``numba.njit``) from its Python source, the compiled functions it calls too, and wraps each
(``numba.cuda.jit(device=True)`` on a GPU). So the GPU kernels call the code the CPU kernels
and drivers run, written once. numba's CUDA simulator runs kernels as Python and cannot pass
its arrays to compiled functions: there the wrap is none, and the functions run as Python.

The counters' slot names are IntEnum classes (`experiments.counters`). numba-cuda on an H200's
Python 3.12 refused an IntEnum member as an array index ("Unsupported array index type
IntEnum<int64>(StreamCounter)"; not so on Python 3.11), so the rebuilt functions see each IntEnum
class as a named tuple of its members' values: ``StreamCounter.PHASE`` reads the same integer."""

from __future__ import annotations

import enum
import functools
import types
from collections import namedtuple
from typing import Callable

from numba.core.registry import CPUDispatcher


def device_version(function, wrap: Callable, done: dict | None = None):
    """``function`` (a numba dispatcher) rebuilt from its Python source with the device
    versions of the dispatchers it calls, then wrapped; anything else as it is."""
    if not isinstance(function, CPUDispatcher):
        return function
    done = {} if done is None else done
    if function not in done:
        python = function.py_func
        namespace = {name: _plain(value) for name, value in python.__globals__.items()}
        copy = types.FunctionType(python.__code__, namespace, python.__name__, python.__defaults__,
                                  python.__closure__)
        done[function] = wrap(copy)
        for name, value in python.__globals__.items():
            if isinstance(value, CPUDispatcher):
                namespace[name] = device_version(value, wrap, done)
    return done[function]


@functools.cache
def _as_tuple(names: type[enum.IntEnum]):
    """An IntEnum class as a named tuple of its members' integer values."""
    return namedtuple(names.__name__, [member.name for member in names])(*(int(member) for member in names))


def _plain(value):
    """A global as device code sees it: IntEnum classes as named tuples (module docstring)."""
    return _as_tuple(value) if isinstance(value, type) and issubclass(value, enum.IntEnum) else value
