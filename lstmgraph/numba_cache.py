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

The locator extends numba's private caching classes (numba >= 0.60 has them). A numba without
them gets a warning, and its own locators decide; lstmgraph runs the same, only its compiled
functions are cached where numba puts them.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from numba.core import caching

from .files import OutputError, cache_directory

_PACKAGE = Path(__file__).resolve().parent


def is_ours(source: str | os.PathLike) -> bool:
    """Whether ``source`` is a file of the lstmgraph package (not a generated module)."""
    try:
        return Path(source).resolve().is_relative_to(_PACKAGE)
    except (OSError, ValueError):
        return False


def install(numba_caching=caching) -> bool:
    """Put the kernel cache's locator among ``numba_caching``'s locators (once), after a
    user-provided ``NUMBA_CACHE_DIR``'s. False, with a warning, where that numba lacks the
    private classes it extends: numba's own locators then decide."""
    try:
        impl = getattr(numba_caching, "CacheImpl", None) or numba_caching._CacheImpl  # (numba < 0.61: _CacheImpl)
        classes = impl._locator_classes
        bases = (numba_caching._SourceFileBackedLocatorMixin, numba_caching._CacheLocator)
    except AttributeError:
        warnings.warn("this numba lacks the caching classes lstmgraph extends: lstmgraph's compiled functions "
                      "are cached where numba puts them, not in its kernel cache", RuntimeWarning, stacklevel=2)
        return False
    if not any(getattr(locator, "lstmgraph_kernel_cache", False) for locator in classes):
        provided = [index for index, locator in enumerate(classes) if "UserProvided" in locator.__name__]
        classes.insert(provided[0] + 1 if provided else 0, _kernel_cache_locator(*bases))
    cache = getattr(numba_caching, "Cache", None)
    if cache is not None and not getattr(cache.save_overload, "lstmgraph_names_cache", False):
        cache.save_overload = _naming_the_cache(cache.save_overload)
    return True


def _naming_the_cache(save_overload):
    """numba's ``Cache.save_overload``, raising `OutputError` naming the cache's folder where
    the machine code cannot be written (numba's error names no file)."""

    def save_naming_the_cache(self, sig, data):
        try:
            save_overload(self, sig, data)
        except OutputError:
            raise
        except OSError as error:
            where = ("the kernel cache: free space there, or set LSTMGRAPH_CACHE to a writable folder with room"
                     if Path(self.cache_path).is_relative_to(cache_directory()) else
                     "numba's cache: free space there, or set NUMBA_CACHE_DIR to a writable folder with room")
            raise OutputError(self.cache_path, OSError(error.errno, f"{error.strerror or error} ({where})")) from None

    save_naming_the_cache.lstmgraph_names_cache = True
    return save_naming_the_cache


def _kernel_cache_locator(source_backed: type, locator: type) -> type:
    """numba's locator for a function of an lstmgraph module: a folder of the kernel cache
    under ``modules/``, named by a hash of the source's folder as numba names its own."""

    class KernelCacheLocator(source_backed, locator):
        lstmgraph_kernel_cache = True

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = str(cache_directory() / "modules" / self.get_suitable_cache_subpath(str(py_file)))

        def get_cache_path(self) -> str:
            return self._cache_path

        @classmethod
        def from_function(cls, py_func, py_file):
            if not is_ours(py_file):
                return None
            return super().from_function(py_func, py_file)  # None where the folder cannot be written

    return KernelCacheLocator


install()
