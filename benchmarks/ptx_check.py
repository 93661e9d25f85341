"""Compile the GPU kernels for a real GPU without one: numba-cuda's own compiler down to PTX.

    pip install 'numba-cuda[cu13]'      # numba-cuda and NVVM, no driver needed
    NUMBA_ENABLE_CUDASIM=0 python benchmarks/ptx_check.py [SPEC ...] [--drivers]

numba's CUDA simulator runs kernels as Python, so it cannot show what numba-cuda refuses to
compile. This script can: it stands in for the GPU (a device of compute capability 9.0, host
arrays for device arrays) and intercepts each launch, where it compiles the kernel for the
launch's argument types to PTX (`numba.cuda.compile_ptx`) and stops. Found this way: numba-cuda's
recursion limit on the GRU net's kernel. Not found this way (seen on an H200's Python 3.12,
not here on 3.11): numba-cuda refusing IntEnum members as indices.

For each bundled spec named (default: all), the population kernel of three layouts (or the
first, ``--warp-only``), its step in parts of ``--part-lines`` (docs/gpu.md, "Compile time"), its
exact-RTRL program with ``--exact``; with ``--drivers``, the drive kernels of the protocol drivers'
GPU tests; with ``--draws``, only the kernels that draw streams on the device. Each kernel
prints its PTX size, compile seconds and fused multiply-adds; a failure
prints its error and the others go on.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import traceback

import numpy as np

if not hasattr(np, "row_stack"):  # numba-cuda 0.30 still imports it; numpy 2.5 removed the alias
    np.row_stack = np.vstack
if os.environ.get("NUMBA_ENABLE_CUDASIM") != "0":
    sys.exit("set NUMBA_ENABLE_CUDASIM=0: this compiles with numba-cuda, not its simulator")

import numba  # noqa: E402
from numba import cuda  # noqa: E402
from numba.cuda import dispatcher  # noqa: E402

LAYOUTS = ((32, "auto"), (32, "global"), (1, "auto"))


class Compiled(Exception):
    """A launch was compiled and stopped before running."""


class _HostArray(np.ndarray):
    """A device array's interface on host memory."""

    def copy_to_host(self):
        return np.array(self)

    def copy_to_device(self, values):
        self[...] = values


class _Device:
    compute_capability = (9, 0)
    name = "PTX check (no GPU)"

    @staticmethod
    def get_memory_info():  # (free, total) bytes: an H100's
        return 80 * 10**9, 80 * 10**9


def _typeof(value):
    """A launch argument's type as numba-cuda sees it on a GPU: a device array is contiguous, in
    C order or, where the array is so, in F order (`Layout.slot_order`)."""
    if not isinstance(value, np.ndarray):
        return numba.typeof(value)
    host = value.view(np.ndarray)
    return numba.typeof(host if host.flags.f_contiguous and not host.flags.c_contiguous else np.ascontiguousarray(host))


def _compile_at_launch(kernel, _config):
    def launch(*args):
        # Called inside lstmgraph's own launch context (`population.launching`): its arithmetic.
        start, cpu = time.perf_counter(), time.process_time()
        ptx, _ = cuda.compile_ptx(kernel.py_func, tuple(_typeof(a) for a in args), cc=_Device.compute_capability)
        calls = len(re.findall(r"^\s*call", ptx, re.M))  # 0 where every device function is inlined
        print(f"  {kernel.py_func.__name__}: PTX {len(ptx):,} characters, {time.perf_counter() - start:.0f} s "
              f"({time.process_time() - cpu:.0f} s of CPU), "
              f"{ptx.count('fma.rn.f64')} fused multiply-adds, {calls} calls; "
              f"{ptx.count('mul.rn.f64')} multiplies, {ptx.count('ld.shared.f64')} shared and "
              f"{ptx.count('ld.global.f64')} global loads (in the text, not as run)", flush=True)
        if PTXAS:
            _assemble(ptx)
        raise Compiled
    return launch


#: ptxas to assemble each kernel's PTX with (``--ptxas``), as the driver does at a kernel's
#: first load (numba-cuda hands it PTX where link-time optimisation is off): None, not run.
PTXAS: str | None = None


def _assemble(ptx: str) -> None:
    """Time ptxas on ``ptx`` for the device's architecture, as the driver's JIT would."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "kernel.ptx")
        with open(path, "w") as file:
            file.write(ptx)
        arch = "sm_{}{}".format(*_Device.compute_capability)
        start = time.perf_counter()
        done = subprocess.run([PTXAS, f"-arch={arch}", "-O3", "-v", path, "-o", os.path.join(folder, "kernel.cubin")],
                              capture_output=True, text=True)
        seconds = time.perf_counter() - start
    usage = " ".join(line.split("info    : ", 1)[-1] for line in done.stderr.splitlines()
                     if "Used" in line or "spill" in line)
    print(f"    ptxas ({arch}): {seconds:.1f} s, exit {done.returncode}; {usage}", flush=True)


def stand_in_for_the_gpu() -> None:
    """numba-cuda without a driver: a current device, host arrays, launches that compile only."""
    cuda.is_available = lambda: True
    cuda.to_device = lambda values, *a, **k: np.array(values).view(_HostArray)
    cuda.device_array = lambda shape, dtype=np.float64, **k: np.zeros(shape, dtype).view(_HostArray)
    cuda.get_current_device = lambda: _Device()
    cuda.current_context = lambda: _Device()
    dispatcher.get_current_device = lambda: _Device()
    dispatcher.CUDADispatcher.__getitem__ = _compile_at_launch


def check_specs(names: list[str], layouts: tuple = LAYOUTS, exact: bool = False) -> int:
    from lstmgraph import compile_spec
    from lstmgraph.benchmark import stream
    from lstmgraph.engine import initial_weights
    from lstmgraph.engine.compiled import CompiledNetwork
    from lstmgraph.engine.gpu import GpuPopulation
    from lstmgraph.files import BUNDLED_SPECS

    failures = 0
    for spec in [BUNDLED_SPECS / f"{name}.yaml" for name in names] or sorted(BUNDLED_SPECS.glob("*.yaml")):
        network = CompiledNetwork(compile_spec(spec), kernel="interpreter", full_gradient=exact)
        inputs, targets = stream(network.n_inputs, network.n_outputs, 4)
        for threads, slots_in in layouts:
            print(f"{spec.stem}, {threads} threads a trial, slots {slots_in}:", flush=True)
            failures += _failed(lambda: GpuPopulation(network, initial_weights(network.plan, [0, 1]), 0.1,
                                                      threads=threads, slots_in=slots_in).run(inputs, targets))
    return failures


def _failed(launch) -> bool:
    """Whether ``launch()`` failed before its kernel compiled (its error printed: the others go on)."""
    try:
        launch()
    except Compiled:
        return False
    except Exception:  # noqa: BLE001 (report each failure, go on)
        print("  FAILED: " + traceback.format_exc().strip().splitlines()[-1], flush=True)
        return True
    return False


def check_draws() -> int:
    """The kernels that draw on the device (`experiments.gpu_data`), one task of each draw
    function; the 1997 ERG's fixed sets with each trial's own set (arguments a trial's own)."""
    from lstmgraph.engine.gpu.population import cuda_module
    from lstmgraph.experiments import find_experiment
    from lstmgraph.experiments.data import StreamData, data_rng
    from lstmgraph.experiments.gpu_data import DeviceStreams, device_rows
    from lstmgraph.experiments.sequences import _sequence_data
    from lstmgraph.tasks import make_task

    cuda_module()  # (as a run gets numba.cuda: its arithmetic installed)
    erg = find_experiment("hochreiter1997-erg-3x2-lr0.5")
    tasks = {name: [make_task(name, options)] * 2 for name, options in (
        ("continual_embedded_reber", {}), ("generating_timed_spikes", {}), ("periodic_function", {}), ("adding", {}),
        ("temporal_order", {"variant": "6b", "continual": True, "idle_target": 0, "idle_judged": False}))}
    tasks["1997 ERG fixed sets"] = [_sequence_data(erg.make_task(), erg.protocol, seed)[0] for seed in (0, 1)]
    failures = 0
    for name, both in tasks.items():
        sources = [StreamData(task, data_rng(seed, 0)) for seed, task in enumerate(both)]
        streams = DeviceStreams(cuda, sources, device_rows(sources), ["steps", "sequences"])
        print(f"{name} drawn on the device:", flush=True)
        failures += (_failed(lambda: streams.refill(np.ones(2, dtype=bool), np.zeros(2, dtype=np.int64)))
                     + _failed(lambda: streams.give_back(np.zeros(2, dtype=np.int64))))
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", help="bundled spec names (default: all)")
    parser.add_argument("--drivers", action="store_true", help="also the drive kernels of the driver tests")
    parser.add_argument("--warp-only", action="store_true", help="only the first layout: a warp a trial, slots auto")
    parser.add_argument("--part-lines", type=int, help="lines of a part of the step (default: source.PART_LINES)")
    parser.add_argument("--exact", action="store_true", help="the exact-RTRL programs instead of the truncated ones")
    parser.add_argument("--draws", action="store_true", help="only the kernels that draw streams on the device")
    parser.add_argument("--ptxas", metavar="PATH", help="also assemble each kernel's PTX with this ptxas, timed "
                        "(pip install nvidia-cuda-nvcc: nvidia/cu13/bin/ptxas)")
    options = parser.parse_args()
    global PTXAS
    PTXAS = options.ptxas
    if options.part_lines:
        from lstmgraph.engine.gpu import source

        source.PART_LINES = options.part_lines
    stand_in_for_the_gpu()
    if options.draws:
        sys.exit(1 if check_draws() else 0)
    failures = check_specs(options.specs, LAYOUTS[:1] if options.warp_only else LAYOUTS, options.exact)
    if options.drivers:
        import pytest

        # The driver tests launch each drive kernel once: here each stops with Compiled, which
        # pytest reports as a failure; the PTX lines above each are the result.
        pytest.main(["-q", "-n0", "-p", "no:cacheprovider", "-k", "end_as_on_the_cpu",
                     "tests/experiments/test_gpu_drivers.py"])
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
