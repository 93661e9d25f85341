"""Host-drawn data staged on the device (`gpu_staging`): each trial's rows at a common stride,
only the trials drawn anew copied, what is judged a second target plane where it differs, and
no allocation the device has not the memory for."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from lstmgraph.engine.gpu import cuda_module, population
from lstmgraph.experiments import gpu_staging

pytestmark = pytest.mark.gpu


def test_staged_streams_copy_only_the_trials_drawn_anew_and_keep_each_at_its_stride():
    def source(rows: int, value: float):
        ends = np.zeros(rows, dtype=np.bool_)
        ends[1::2] = True
        return SimpleNamespace(inputs=np.full((rows, 3), value), targets=np.full((rows, 2), -value),
                               judged=np.full((rows, 2), 2 * value), ends=ends,
                               counts=np.concatenate([[0], np.cumsum(ends)]).astype(np.int64))

    def staged_rows(staged, sources, planes):
        laid = [(one.inputs, one.targets, one.judged, one.ends, one.counts) for one in sources]
        return gpu_staging.staged_rows(staged, laid, planes)

    def read(staged, sources, planes):
        inputs, targets, ends, counts, at = (array.copy_to_host() for array in staged_rows(staged, sources, planes))
        for trial, one in enumerate(sources):
            row, count, rows = at[trial]
            assert rows == len(one.inputs) and row == count == trial * staged.stride
            np.testing.assert_array_equal(inputs[row:row + rows, :, 0], one.inputs)
            np.testing.assert_array_equal(targets[row:row + rows, 0, :, 0], one.targets)
            if planes == 2:
                np.testing.assert_array_equal(targets[row:row + rows, 1, :, 0], one.judged)
            np.testing.assert_array_equal(ends[row:row + rows], one.ends)
            np.testing.assert_array_equal(counts[count:count + rows + 1], one.counts)
        return inputs

    staged = gpu_staging.Staged(cuda_module())
    sources = [source(8, 1.0), source(6, 2.0)]
    read(staged, sources, 1)
    sources[0].inputs[:] = 9.0  # changed in place, not drawn anew: not copied again
    sources[1] = source(7, 3.0)  # drawn anew, within the stride: copied
    inputs = staged_rows(staged, sources, 1)[0].copy_to_host()
    assert (inputs[:8] == 1.0).all() and (inputs[staged.stride:staged.stride + 7] == 3.0).all()
    sources[0] = source(40, 4.0)  # longer than the stride: every trial copied anew at a new stride
    read(staged, sources, 1)
    assert staged.stride >= 41
    read(staged, sources, 2)  # a second plane: the judged values staged beside the targets


def test_staging_builds_only_the_arrays_of_trials_drawn_anew():
    data = [np.full((4, 2), 1.0), np.full((4, 2), 2.0), np.full((4, 2), 3.0)]
    built = []

    def parts(trial):
        built.append(trial)
        return (data[trial],)

    staged = gpu_staging.Staged(cuda_module())
    staged.on_device(data, [4, 4, 4], parts)
    assert built == [0, 1, 2]  # each trial's arrays built once, the first also for the layout
    built.clear()
    staged.on_device(data, [4, 4, 4], parts)
    assert built == []  # nothing drawn anew: nothing built, nothing copied
    data[2] = np.full((4, 2), 5.0)
    staged.on_device(data, [4, 4, 4], parts)
    assert built == [2] and (staged.arrays[0][2 * staged.stride:2 * staged.stride + 4].copy_to_host() == 5.0).all()
    built.clear()
    staged.on_device(data, [4, 4, 4], parts, form=2)  # another form: every trial anew
    assert sorted(built) == [0, 1, 2]


def test_staged_data_the_device_has_no_room_for_are_refused_before_allocating(monkeypatch):
    """A clear `GpuUnavailable` (the CLI's exit 2) before the device's out-of-memory error; the
    room the staged arrays already hold counts as free."""
    data = [np.zeros((5000, 2)), np.zeros((5000, 2))]  # 2 trials x 6,250 rows (a quarter more) x 16 bytes
    staged = gpu_staging.Staged(cuda_module())
    monkeypatch.setattr(population, "free_bytes", lambda cuda: 10**5)
    with pytest.raises(population.GpuUnavailable, match=r"staging 2 trials' data on the GPU needs 0\.2 MB more, "
                                                        r"and 0\.1 MB is free; run fewer trials"):
        staged.on_device(data, [5000, 5000], lambda trial: (data[trial],))
    assert staged.arrays == ()  # nothing allocated
    monkeypatch.setattr(population, "free_bytes", lambda cuda: 2 * 10**5)
    staged.on_device(data, [5000, 5000], lambda trial: (data[trial],))
    data[0] = np.zeros((7000, 2))  # a longer stride: 0.28 MB in all, of which 0.2 MB held already
    monkeypatch.setattr(population, "free_bytes", lambda cuda: 10**5)
    staged.on_device(data, [7000, 5000], lambda trial: (data[trial],))
    assert staged.stride == 8750


def test_staged_1997_data_include_an_empty_test_set():
    """Host-drawn 1997 data staged as `DeviceStreams` lays them out: what is judged the last
    target plane, a second plane only where some trial's judged values are not its targets."""
    targets, none = np.arange(5.0)[:, None], np.zeros((0, 1))
    laid = [(np.ones((5, 2)), targets, targets, np.ones(5, dtype=np.bool_)),
            (np.ones((0, 2)), none, none, np.ones(0, dtype=np.bool_))]
    inputs, staged, ends, at = (a.copy_to_host() for a in gpu_staging.staged_rows(
        gpu_staging.Staged(cuda_module()), laid))
    assert at.tolist() == [[0, 0, 5], [6, 6, 0]] and inputs.shape == (12, 2, 1) and staged.shape == (12, 1, 1, 1)
    assert (inputs[:5] == 1.0).all() and ends[:5].all() and (staged[:5, 0, :, 0] == targets).all()
    laid[0] = laid[0][:2] + (np.full((5, 1), np.nan), laid[0][3])  # judged apart: a second plane
    staged = gpu_staging.staged_rows(gpu_staging.Staged(cuda_module()), laid)[1].copy_to_host()
    assert staged.shape == (12, 2, 1, 1) and (staged[:5, 0, :, 0] == targets).all() and np.isnan(staged[:5, 1]).all()
