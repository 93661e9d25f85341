"""The devices a population of trials runs on: ``cpu``, the compiled kernels (engine/compiled),
and ``cuda``, one NVIDIA GPU (engine/gpu, imported only when asked for)."""

DEVICES = ("cpu", "cuda")
