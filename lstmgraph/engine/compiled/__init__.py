"""The compiled executor: one numba interpreter of lowered programs, trials in SIMD lanes."""

from .network import CompiledNetwork, Population

__all__ = ["CompiledNetwork", "Population"]
