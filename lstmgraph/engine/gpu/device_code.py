"""The CPU's compiled functions as GPU device code: `device_version` rebuilds a numba function
(``numba.njit``) from its Python source, the compiled functions it calls too, and wraps each
(``numba.cuda.jit(device=True)`` on a GPU). So the GPU kernels call the code the CPU kernels
and drivers run, written once. numba's CUDA simulator runs kernels as Python and cannot pass
its arrays to compiled functions: there the wrap is none, and the functions run as Python."""

from __future__ import annotations

import types
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
        namespace = dict(python.__globals__)
        copy = types.FunctionType(python.__code__, namespace, python.__name__, python.__defaults__,
                                  python.__closure__)
        done[function] = wrap(copy)
        for name, value in python.__globals__.items():
            if isinstance(value, CPUDispatcher):
                namespace[name] = device_version(value, wrap, done)
    return done[function]
