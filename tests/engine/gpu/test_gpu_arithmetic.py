"""The NVVM wrap of `arithmetic`: a launch's choice of contraction reaches the compiler, and
nothing else is touched (numba-cuda's NVVM is a stand-in here: no GPU needed)."""

from types import SimpleNamespace

from lstmgraph.engine.gpu.arithmetic import contraction, install


def fake_nvvm():
    calls = []
    return SimpleNamespace(compile_ir=lambda llvmir, **options: calls.append(options) or "ptx"), calls


def test_a_launch_s_contraction_reaches_nvvm_and_nothing_else():
    nvvm, calls = fake_nvvm()
    install(nvvm)
    install(nvvm)  # once only: a second wrap would be harmless but is not made
    assert nvvm.compile_ir("ir", opt=3) == "ptx"
    with contraction(False):
        nvvm.compile_ir("ir", opt=3)
        with contraction(True):
            nvvm.compile_ir("ir", opt=3)
        nvvm.compile_ir("ir", opt=3, fastmath=True)  # fastmath's own choice stands
    nvvm.compile_ir("ir", opt=3)
    assert calls == [{"opt": 3}, {"opt": 3, "fma": False}, {"opt": 3, "fma": True}, {"opt": 3, "fastmath": True},
                     {"opt": 3}]


def test_the_arithmetic_names_the_kernel():
    from lstmgraph import compile_spec
    from lstmgraph.engine.compiled import CompiledNetwork
    from lstmgraph.engine.gpu.source import choose_layout, source
    from lstmgraph.files import BUNDLED_SPECS

    network = CompiledNetwork(compile_spec(BUNDLED_SPECS / "gers2002_timing.yaml"), kernel="interpreter")
    exact, fused = (source(network.flat, network.program.n_slots, choose_layout(network.program.n_slots, 32, fused=f))
                    for f in (False, True))
    assert 'ARITHMETIC = "fused multiply-adds"' in fused and "no contraction" in exact and exact != fused
