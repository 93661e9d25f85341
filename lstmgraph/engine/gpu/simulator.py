"""numba's CUDA simulator runs a kernel as Python, and cannot pass its arrays to compiled
(``numba.njit``) functions: `as_python` gives such a function as plain Python, the compiled
functions it calls too, so the GPU kernel calls the CPU's code in the simulator as on a GPU."""

from __future__ import annotations

import types

from numba.core.registry import CPUDispatcher


def as_python(function, done: dict | None = None):
    """``function`` (a numba dispatcher) as a Python function whose globals hold the Python
    forms of the dispatchers it calls; anything else as it is."""
    if not isinstance(function, CPUDispatcher):
        return function
    done = {} if done is None else done
    if function in done:
        return done[function]
    python = function.py_func
    namespace = dict(python.__globals__)
    copy = types.FunctionType(python.__code__, namespace, python.__name__, python.__defaults__, python.__closure__)
    done[function] = copy
    for name, value in python.__globals__.items():
        if isinstance(value, CPUDispatcher):
            namespace[name] = as_python(value, done)
    return copy
