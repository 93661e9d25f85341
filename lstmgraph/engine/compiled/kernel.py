"""Load (and cache) the generated kernel of a plan.

The source is written once to ``$LSTMGRAPH_CACHE`` (default ``~/.cache/lstmgraph/kernels``)
under a name derived from its hash, then imported; numba's ``cache=True`` keeps the machine
code beside it, so a second start neither generates nor compiles again.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from ...files import write_atomically
from .codegen import KernelSource

# LLVM's level-1 optimisation compiles as fast as level 3 and runs these loop nests faster
# (CERG net: about 440,000 against 250,000 steps/s here). Numba reads it when first imported.
os.environ.setdefault("NUMBA_OPT", "1")


def cache_directory() -> Path:
    root = os.environ.get("LSTMGRAPH_CACHE") or Path.home() / ".cache" / "lstmgraph"
    return Path(root) / "kernels"


def load_kernel(source: KernelSource) -> ModuleType:
    name = f"lstmgraph_kernel_{source.key}"
    if name in sys.modules:
        return sys.modules[name]
    path = cache_directory() / f"{name}.py"
    if not path.exists() or path.read_text() != source.text:
        write_atomically(path, source.text.encode())
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module
