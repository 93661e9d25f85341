"""The kernel cache's numba locator (lstmgraph/numba_cache.py); tests/test_packaging.py runs it
end to end in an installed package."""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest
from numba.core import caching

from lstmgraph import numba_cache
from lstmgraph.engine.compiled import lanes


def _ours() -> list[type]:
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    return [locator for locator in impl._locator_classes if getattr(locator, "lstmgraph_kernel_cache", False)]


def test_the_locator_is_installed_once_after_a_user_provided_folder():
    assert numba_cache.install() and numba_cache.install()
    (locator,) = _ours()
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    names = [each.__name__ for each in impl._locator_classes]
    assert names.index("KernelCacheLocator") == names.index("UserProvidedCacheLocator") + 1


def test_a_function_of_ours_is_cached_in_the_kernel_cache_and_another_is_left_to_numba(tmp_path, monkeypatch):
    monkeypatch.setenv("LSTMGRAPH_CACHE", str(tmp_path))
    (locator,) = _ours()
    function = lanes.reset_lane.py_func
    path = locator.from_function(function, function.__code__.co_filename).get_cache_path()
    assert path.startswith(str(tmp_path / "kernels" / "modules"))
    assert locator.from_function(np.sum, np.__file__) is None


def test_a_numba_without_the_classes_it_extends_is_left_to_its_own_locators():
    with pytest.warns(RuntimeWarning, match="cached where numba puts them"):
        assert numba_cache.install(types.SimpleNamespace()) is False
    assert len(_ours()) == 1


def test_a_full_disk_under_numba_s_cache_is_an_output_error_naming_the_cache(tmp_path, monkeypatch):
    """numba saving machine code to a full kernel cache: `OutputError` naming its folder and
    what to do (the command exits 2 saying so), not a bare ENOSPC taken for standard output."""
    import errno

    from lstmgraph.files import OutputError

    monkeypatch.setenv("LSTMGRAPH_CACHE", str(tmp_path))
    cache = caching.FunctionCache(lanes.reset_lane.py_func)

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache._cache_file, "save", full)
    monkeypatch.setattr(cache._impl, "check_cachable", lambda data: True)
    monkeypatch.setattr(cache._impl, "reduce", lambda data: data)
    monkeypatch.setattr(cache, "_index_key", lambda sig, codegen: sig)
    with pytest.raises(OutputError) as raised:
        cache.save_overload((), types.SimpleNamespace(codegen=None))
    assert raised.value.errno == errno.ENOSPC and raised.value.path == Path(cache.cache_path)
    assert raised.value.path.is_relative_to(tmp_path / "kernels" / "modules")
    assert "No space left on device" in str(raised.value) and "LSTMGRAPH_CACHE" in str(raised.value)
