"""Data drawn on the host, staged on the device for the GPU drivers (`gpu_drivers`): a stream
population's where its task does not draw on the device (`gpu_data`), the 1997 training
sequences likewise, and ERG's fixed sets for its full checks. Each trial's rows lie at a
common stride in one array per field; a launch copies only the trials whose data changed."""

from __future__ import annotations

import numpy as np

from ..engine.gpu.population import ensure_room


class Staged:
    """Per-trial arrays on the device (a stream source, or the 1997 training or frozen data), as
    the drive kernels read them: array k of every trial in one device array, each trial's rows
    at its own stride. A launch copies only the trials whose data changed since the last, straight
    from their arrays (laying every trial's data end to end each launch took as long as drawing
    it: docs/gpu.md)."""

    def __init__(self, cuda) -> None:
        self.cuda = cuda
        self.stride = 0
        self.layout: list = []
        self.arrays: tuple = ()
        self.copied: list = []  # per trial, the key of the data on the device now
        self.form: object = None

    def on_device(self, keys: list, rows: list[int], parts, form: object = None) -> tuple[tuple, np.ndarray]:
        """``keys``: per trial, an object replaced when its data change (its inputs array);
        ``rows``: its longest array's rows; ``parts(trial)``: its arrays, rows first; ``form``:
        what else shapes them (the target planes). The device arrays, and each trial's first row.
        Only changed trials' arrays are built (one gives the layout), unless ``form`` changed."""
        changed = [trial for trial, key in enumerate(keys)
                   if form != self.form or len(self.copied) != len(keys) or self.copied[trial] is not key]
        built = {changed[0]: parts(changed[0])} if changed else {}
        layout = [(array.shape[1:], array.dtype) for array in built[changed[0]]] if changed else self.layout
        if max(rows) > self.stride or layout != self.layout:  # room for the longest: every trial copied anew
            stride = max(max(rows) + max(rows) // 4, 1)
            held = len(self.copied) * self.stride * row_bytes(self.layout)
            ensure_room(self.cuda, len(keys) * stride * row_bytes(layout) - held, f"staging {len(keys):,} trials' data")
            self.stride, self.layout = stride, layout
            self.arrays = tuple(self.cuda.device_array((len(keys) * self.stride,) + shape, dtype=dtype)
                                for shape, dtype in layout)
            self.copied, changed = [None] * len(keys), list(range(len(keys)))
        for trial in changed:
            first = trial * self.stride
            for device, array in zip(self.arrays, built.pop(trial, None) or parts(trial)):
                if len(array):
                    device[first:first + len(array)].copy_to_device(array)
            self.copied[trial] = keys[trial]
        self.form = form
        return self.arrays, np.arange(len(keys), dtype=np.int64) * self.stride


def row_bytes(layout: list) -> int:
    """The bytes of one row of every array of a `Staged` layout ((shape after the rows, dtype) each)."""
    return sum(int(np.prod(shape)) * np.dtype(dtype).itemsize for shape, dtype in layout)


def staged_rows(staged: Staged, laid: list[tuple], planes: int | None = None) -> tuple:
    """The trials' host-drawn data, each (inputs, targets, judged, ends, and for streams counts),
    as the drive kernels read them and `DeviceStreams` lays them out: inputs (rows, columns, 1),
    targets (rows, planes, outputs, 1), what is judged the last plane (a second where it differs
    from the targets: ``planes``, else where some trial's judged array is not its targets), ends
    (and counts), and per trial (first row, first count, rows). Reshaped, not ``[..., None]``:
    numba's copies drop zero-stride axes."""
    planes = planes or (1 if all(part[2] is part[1] for part in laid) else 2)

    def parts(trial: int) -> tuple:
        inputs, targets, judged, *rest = laid[trial]
        rows, outputs = len(inputs), targets.shape[1]
        stacked = np.stack([targets, judged][:planes], axis=1)
        return (inputs.reshape(rows, inputs.shape[1], 1), stacked.reshape(rows, planes, outputs, 1), *rest)

    arrays, first = staged.on_device([part[0] for part in laid], [max(map(len, part)) for part in laid], parts, planes)
    at = np.stack([first, first, [len(part[0]) for part in laid]], axis=1).astype(np.int64)
    return (*arrays, staged.cuda.to_device(at))
