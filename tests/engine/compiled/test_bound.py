"""`bind_kernel`: a driver compiled with its kernel bound in, cached on disk in a module named
by the sources it reaches (so that a change in a function it calls compiles it anew)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

from lstmgraph.engine.compiled import bound
from lstmgraph.engine.compiled.bound import bind_kernel
from lstmgraph.experiments import sequence_driver, stream_driver


@numba.njit(cache=True)
def _double(values):
    values *= 2.0


@numba.njit(cache=True)
def _add_one(values):
    values += 1.0


def _twice(kernel, values):
    kernel(values)
    kernel(values)


def test_the_bound_driver_calls_its_own_kernel_from_a_module_of_the_kernel_cache():
    doubled, added = bind_kernel(_twice, _double), bind_kernel(_twice, _add_one)
    values = np.ones(3)
    doubled(values)
    np.testing.assert_array_equal(values, 4.0)
    added(values)
    np.testing.assert_array_equal(values, 6.0)
    assert bind_kernel(_twice, _double) is doubled  # once per process
    module = sys.modules[doubled.py_func.__module__]
    assert module is not sys.modules[added.py_func.__module__]
    assert Path(module.__file__).parent == bound.load_source.__globals__["cache_directory"]()


def test_a_driver_without_a_kernel_first_is_refused():
    def no_kernel(values, kernel):
        kernel(values)
    with pytest.raises(ValueError, match="first parameter must be kernel"):
        bind_kernel(no_kernel, _double)


def test_the_name_digests_every_lstmgraph_module_the_driver_reaches():
    """The stream driver reads the counters' enums and calls the lane functions and the success
    test's compiled forms: a change in any of those files must give another module."""
    for driver, expected in ((stream_driver._drive, {"lstmgraph.experiments.stream_driver",
                                                     "lstmgraph.experiments.counters",
                                                     "lstmgraph.engine.compiled.lanes"}),
                             (sequence_driver._drive, {"lstmgraph.experiments.sequence_driver",
                                                       "lstmgraph.experiments.counters", "lstmgraph.success"})):
        modules: set[str] = set()
        bound._reached_modules(driver, set(), modules)
        assert expected <= modules, expected - modules


def test_a_second_process_loads_the_driver_from_the_cache():
    """The first call in a fresh process compiles nothing when the cache holds the driver
    (numba's own count of cache hits and misses, not a timing)."""
    script = (
        "from lstmgraph.engine.compiled import bound\n"
        "from lstmgraph.experiments import find_experiment\n"
        "from lstmgraph.experiments.trial import advance_together\n"
        "experiment = find_experiment('gers2002-gts-peephole')\n"
        "advance_together([experiment.trial(experiment.plan(), 0, 300, 'interpreter')], None)\n"
        "(driver,) = bound._BOUND.values()\n"
        "print(sum(driver.stats.cache_hits.values()), sum(driver.stats.cache_misses.values()))\n")
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
            for _ in range(2)]
    assert runs[1] == ["1", "0"], runs
