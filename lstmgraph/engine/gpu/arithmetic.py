"""The GPU kernels' floating-point arithmetic: no fused multiply-adds, as on the CPU, or fused.

NVVM (the compiler numba-cuda hands a kernel to) contracts ``a * b + c`` into one fused
multiply-add by default: one rounding where the CPU kernels round twice. lstmgraph compiles its
kernels with contraction off (NVVM's ``-fma=0``), so every ``+ - * /`` is meant to round as on
the CPU, in the CPU kernels' order (`source`). ``exp`` and ``log`` (softmax and cross-entropy
outputs only) are the device's. On an H200 the results still differed from the CPU's in the
last bits, with and without contraction: the source is not found yet (docs/gpu.md). A layout
with ``fused=True`` contracts; `lstmgraph bench` prices the difference.

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
