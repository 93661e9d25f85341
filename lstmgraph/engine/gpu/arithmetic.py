"""The GPU kernels' floating-point arithmetic: the CPU's, or fused multiply-adds.

NVVM (the compiler numba-cuda hands a kernel to) contracts ``a * b + c`` into one fused
multiply-add by default: one rounding where the CPU kernels round twice. So by default a
kernel's sums differ from the CPU's in the last place, and a trial's outcome can drift.
lstmgraph compiles its kernels with contraction off (NVVM's ``-fma=0``): every ``+ - * /``
then rounds as on the CPU, in the CPU kernels' order (`source`), and a trial on the GPU ends
as on the CPU bit for bit. ``exp`` and ``log`` are the exceptions: the device's may differ
from the CPU's libm in the last place (only the softmax and cross-entropy outputs call them;
``tanh`` is lstmgraph's own arithmetic, `vector_math`). A layout with ``fused=True``
contracts: faster, and within 1e-12 of the CPU rather than equal (docs/gpu.md measures both).

numba-cuda offers ``-fma`` only through ``fastmath``, which also flushes subnormals and
loosens division. So `install` wraps its NVVM entry, ``nvvm.compile_ir``: inside
`contraction`, the launch's choice is passed on; any other compilation is left as it was.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from types import ModuleType
from typing import Iterator

_launch = threading.local()


@contextmanager
def contraction(fused: bool) -> Iterator[None]:
    """Compilations started inside (a kernel's first launch) use fused multiply-adds or not."""
    previous = getattr(_launch, "fused", None)
    _launch.fused = fused
    try:
        yield
    finally:
        _launch.fused = previous


def install(nvvm: ModuleType) -> None:
    """Wrap ``nvvm.compile_ir`` (numba-cuda's ``numba.cuda.cudadrv.nvvm``) once, so that a
    compilation inside `contraction` gets NVVM's ``-fma`` as asked."""
    original = nvvm.compile_ir
    if getattr(original, "lstmgraph_contraction", False):
        return

    def compile_ir(llvmir, **options):
        fused = getattr(_launch, "fused", None)
        if fused is not None and not options.get("fastmath"):
            options["fma"] = fused
        return original(llvmir, **options)

    compile_ir.lstmgraph_contraction = True
    nvvm.compile_ir = compile_ir
