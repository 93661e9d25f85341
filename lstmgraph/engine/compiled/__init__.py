"""The compiled executor: one numba interpreter of lowered programs (trials in SIMD lanes), and
kernels specialised to one program (bit-identical, faster, compiled per program)."""

from .network import KERNELS, CompiledNetwork, Population, kernel_for

__all__ = ["KERNELS", "CompiledNetwork", "Population", "kernel_for"]
