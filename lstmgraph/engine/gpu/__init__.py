"""The GPU executor: a CUDA kernel generated per lowered program (`source`), running a
population of trials with the CPU population's contract (`population`)."""

from .population import GpuPopulation, GpuUnavailable, cuda_module

__all__ = ["GpuPopulation", "GpuUnavailable", "cuda_module"]
