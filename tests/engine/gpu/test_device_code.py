"""The CPU's compiled functions rebuilt as device code: every compiled function they call is
rebuilt and wrapped too, and the rebuilt code computes what the compiled code does."""

from __future__ import annotations

import numpy as np
import pytest

from lstmgraph.engine.gpu.device_code import device_version
from lstmgraph.experiments import stream_driver
from lstmgraph.experiments.counters import STREAM_COUNTERS, STREAM_SETTINGS, StreamCounter, StreamSetting

pytestmark = pytest.mark.gpu


def test_the_functions_called_are_rebuilt_and_wrapped_too():
    wrapped = []

    def wrap(function):
        wrapped.append(function.__name__)
        return function

    device_version(stream_driver.lane_begin, wrap)
    assert {"lane_begin", "_begin_segment", "reset_lane", "_room", "_first_at_least"} <= set(wrapped)
    assert len(wrapped) == len(set(wrapped))  # each once
    assert device_version(len, wrap) is len  # not a compiled function: as it is


def test_the_rebuilt_code_computes_what_the_compiled_code_does():
    python = device_version(stream_driver.lane_begin, lambda function: function)
    settings = np.zeros(STREAM_SETTINGS, dtype=np.int64)
    settings[[StreamSetting.TRAIN_LIMIT, StreamSetting.TEST_LIMIT, StreamSetting.MAX_STREAMS]] = [3, 2, 10]
    counts = np.array([0, 0, 1, 1, 2, 3, 3, 4], dtype=np.int64)  # sequence ends after rows 1, 3, 4, 6
    results = []
    for function in (stream_driver.lane_begin, python):
        counter = np.zeros(STREAM_COUNTERS, dtype=np.int64)
        counter[StreamCounter.BUDGET] = counter[StreamCounter.LAST_BUDGET] = -1
        V = np.ones((6, 2))
        rows = np.array([0, 2, 2, 4, 4, 6], dtype=np.int64)
        room = function(counter, settings, V, 1, rows, 7, counts, 7, counts)
        results.append((room, counter.copy(), V.copy()))
    (room, counter, V), (other_room, other_counter, other_V) = results
    assert room == other_room == 5  # to the third sequence's end
    np.testing.assert_array_equal(counter, other_counter)
    np.testing.assert_array_equal(V, other_V)
    assert (V[:4, 1] == 0).all() and (V[:, 0] == 1).all()  # the lane's state and traces reset, not the other
