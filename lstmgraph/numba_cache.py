"""Where numba caches the compiled functions of lstmgraph's own modules: in the kernel cache,
never beside their source.

numba keeps the machine code of a ``cache=True`` function in a ``__pycache__`` folder beside
its module wherever it may write there, which for an installed lstmgraph is inside
site-packages. Importing this module adds a numba cache locator that puts the functions of
lstmgraph's own files in the kernel cache instead (`cache_directory`: ``~/.cache/lstmgraph/kernels``
or ``$LSTMGRAPH_CACHE/kernels``), under ``modules/``, one folder per source folder named by a
hash of its path as numba names its own, so a checkout and an installation never share one.
Where ``NUMBA_CACHE_DIR`` is set, numba's own locator for it comes first, as before; where the
kernel cache cannot be written, numba's usual locators decide. The generated modules (the
interpreter, the specialised kernels, the drivers) already live in the kernel cache and keep
numba's default. Every module of ours that compiles with ``cache=True`` imports this one
before its first ``numba.njit``.
"""

from __future__ import annotations

import os
from pathlib import Path

from numba.core import caching

from .files import cache_directory

_PACKAGE = Path(__file__).resolve().parent
_IMPL = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # (numba < 0.61: _CacheImpl)


def is_ours(source: str | os.PathLike) -> bool:
    """Whether ``source`` is a file of the lstmgraph package (not a generated module)."""
    try:
        return Path(source).resolve().is_relative_to(_PACKAGE)
    except (OSError, ValueError):
        return False


def module_cache(source: str | os.PathLike) -> Path:
    """The folder numba caches the compiled functions of ``source`` in (a file of ours)."""
    return cache_directory() / "modules" / caching._CacheLocator.get_suitable_cache_subpath(str(source))


class KernelCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """numba's locator for a function of an lstmgraph module: `module_cache` of its file."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(module_cache(py_file))

    def get_cache_path(self) -> str:
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        if not is_ours(py_file):
            return None
        return super().from_function(py_func, py_file)  # None where the folder cannot be written


def _register() -> None:
    classes = _IMPL._locator_classes
    if KernelCacheLocator in classes:
        return
    provided = [index for index, locator in enumerate(classes) if "UserProvided" in locator.__name__]
    classes.insert(provided[0] + 1 if provided else 0, KernelCacheLocator)


_register()
