"""The lowering of bundled specs: no program breaks into thousands of affine runs."""

from __future__ import annotations

import pytest

import lstmgraph
from lstmgraph.engine.compiled.interpreter import flatten
from lstmgraph.program import lower

from conftest import SPECS


@pytest.mark.parametrize("spec,most", [("gru.yaml", 700), ("gru_torch.yaml", 700), ("gers2000_cerg.yaml", 250)])
def test_no_bundled_program_breaks_into_thousands_of_runs(spec, most):
    """Sorting every sum by slot took the GRU nets' programs from 549 to 3,093 runs and from 574
    to 22,021, each a kernel line or more (docs/gpu.md, "Kernels too long to compile")."""
    flat = flatten(lower(lstmgraph.compile_spec(SPECS / spec)))
    assert len(flat.runs) <= most
