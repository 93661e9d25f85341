"""The compiled executor: numba kernels generated from a plan (see codegen.py)."""

from .network import CompiledNetwork

__all__ = ["CompiledNetwork"]
