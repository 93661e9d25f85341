"""Shared fixtures: the bundled specs and helpers that compile spec text written to a file."""

from __future__ import annotations

import functools
import json
import os

# The GPU tests (marker gpu) run in numba's CUDA simulator unless NUMBA_ENABLE_CUDASIM=0 says a
# real GPU is there; numba reads the setting when it is first imported, which is below.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
#: Whether the gpu tests run in the simulator (the CPU's arithmetic: results equal bit for bit).
SIMULATED = os.environ["NUMBA_ENABLE_CUDASIM"] == "1"

import signal
import subprocess
import textwrap
import traceback
from pathlib import Path
from typing import Callable

import pytest

import lstmgraph
from lstmgraph.errors import SpecError

REPO = Path(__file__).resolve().parents[1]
SPECS = REPO / "specs"


def pytest_configure(config) -> None:
    """Ctrl-C and SIGHUP as a terminal delivers them. A test run started in the background
    (`cmd &`, `nohup`) inherits them ignored, and a run keeps them so, as its user meant
    (lstmgraph/experiments/stops.py); the tests that send them need them heeded."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)


def pytest_runtest_setup(item) -> None:
    if SIMULATED and item.get_closest_marker("gpu"):
        _poll_yielding()


@functools.cache
def _poll_yielding() -> None:
    """numba's CUDA simulator runs a block's threads as Python threads while its main thread
    polls them (`BlockManager.run` calls each one's `is_alive`) without ever waiting. So it holds
    the GIL about half the time beside a block of one thread. Here each poll first yields the GIL
    (`time.sleep(0)`): the gpu tests take 38 s instead of 57 s on two cores, with the same results.
    A numba whose simulator is built otherwise is left as it is."""
    import threading
    import time

    try:
        from numba.cuda.simulator.kernel import BlockThread
    except ImportError:
        return
    if not issubclass(BlockThread, threading.Thread) or "is_alive" in vars(BlockThread):
        return

    def is_alive(thread) -> bool:
        time.sleep(0)
        return threading.Thread.is_alive(thread)

    BlockThread.is_alive = is_alive


def hostile(max_examples: int):
    """Hypothesis settings of the hostile-file tests: reproducible draws, no deadline."""
    from hypothesis import HealthCheck, settings
    return settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def run(*args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The command line in this process, through click's runner (a process start and the imports
    saved per call): its exit code, stdout and stderr. An exception that escapes the command is
    printed to stderr with exit code 1, as the console script would (tests/cli/test_commands.py
    runs the installed script itself where a process of its own is the point)."""
    from click.testing import CliRunner
    from lstmgraph_cli.main import main
    before = Path.cwd()
    os.chdir(cwd or before)
    try:
        result = CliRunner().invoke(main, [str(arg) for arg in args], prog_name="lstmgraph")
    finally:
        os.chdir(before)
    code, stderr = result.exit_code, result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        code, stderr = 1, stderr + "".join(traceback.format_exception(*result.exc_info))
    return subprocess.CompletedProcess(["lstmgraph", *map(str, args)], code, result.stdout, stderr)


def invoke(*args) -> tuple[int, str]:
    """The CLI in-process (`run`): its exit code and output, asserting that no traceback escaped."""
    result = run(*args)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result.returncode, result.stdout + result.stderr


@pytest.fixture
def write_spec(tmp_path: Path) -> Callable[..., Path]:
    """Write dedented spec text to a file and return its path."""

    def write(text: str, name: str = "net.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    return write


@pytest.fixture
def spec_error(write_spec) -> Callable[..., SpecError]:
    """Compile spec text that must fail; return the `SpecError`."""

    def compile_failing(text: str, name: str = "net.yaml") -> SpecError:
        path = write_spec(text, name)
        with pytest.raises(SpecError) as caught:
            lstmgraph.compile_spec(path)
        return caught.value

    return compile_failing


def located(error: SpecError) -> list[tuple[str, int | None, str]]:
    """Each problem as (field path, line, message)."""
    from lstmgraph.errors import format_path
    rows = []
    for problem in error.problems:
        position = error.source.position(problem.path)
        rows.append((format_path(problem.path), position[0] if position else None, problem.message))
    return rows


MINIMAL = """
version: 1
groups:
  - {name: x, kind: input, size: 2}
  - name: mem
    kind: memory_block
    blocks: 2
    cells_per_block: 3
    gates: [input, forget, output]
  - {name: y, kind: output, size: 1}
connections:
  - from: x
    to: [mem.cell_input, mem.input_gate, mem.forget_gate, mem.output_gate]
  - {from: mem.cell_output, to: y}
"""

#: A linear recurrent net with self-weights in [2, 3] on a continual stream: it blows up.
EXPLODING = {
    "version": 1,
    "groups": [{"name": "x", "kind": "input", "size": 2},
               {"name": "h", "kind": "hidden", "size": 2, "activation": "identity"},
               {"name": "y", "kind": "output", "size": 1, "activation": "identity"}],
    "connections": [{"from": "x", "to": "h"}, {"from": "h", "to": "h", "delay": 1},
                    {"from": "h", "to": "y"}],
    "init": {"uniform": [2.0, 3.0]},
    "training": {"learning_rate": 0.01, "steps": 100000, "reset": "never",
                 "task": {"name": "adding", "length": 20}},
}


def dense_spec(tmp_path: Path, rule: str) -> Path:
    """A valid spec whose exact RTRL program is over `limits.MAX_TRACE_TERMS`: 60 fully
    recurrent tanh units, 3,780 weights, some 14 million multiply-adds a step."""
    spec = {"version": 1, "name": "dense",
            "groups": [{"name": "x", "kind": "input", "size": 2},
                       {"name": "h", "kind": "hidden", "size": 60, "activation": "tanh"},
                       {"name": "y", "kind": "output", "size": 1}],
            "connections": [{"from": "x", "to": "h"}, {"from": "h", "to": "h", "delay": 1}, {"from": "h", "to": "y"}],
            "training": {"learning_rate": 0.1, "learning_rule": rule, "steps": 10,
                         "task": {"name": "adding", "length": 20}}}
    path = tmp_path / "dense.json"
    path.write_text(json.dumps(spec))
    return path


def with_a_ctrl_c(figure: Callable, cut_short: bool = False) -> Callable:
    """``figure`` (a figure writer) that sends this process a Ctrl-C on its first call, as an
    auditor's Ctrl-C once arrived inside its import of matplotlib. ``cut_short``: if the signal
    cut that call short, every later call fails as the half-loaded matplotlib then did."""
    state = {"sent": False, "cut": False}

    def drawn(*args, **kwargs):
        if state["cut"]:
            raise AttributeError("module 'matplotlib' has no attribute 'get_data_path'")
        if not state["sent"]:
            state["sent"], state["cut"] = True, cut_short
            os.kill(os.getpid(), signal.SIGINT)
            state["cut"] = False  # (the signal waited: the call goes on)
        return figure(*args, **kwargs)

    return drawn


#: One row per distinct net the committed experiments train (`lstmgraph.experiments.catalogue`
#: and the committed sweeps' variants, docs/sweeps): (row, the variants a sweep adds). The
#: forget-gate bias rows are their nets' rows: a bias's initial value changes no arithmetic.
#: tests/engine/test_gradients.py checks that every catalogue row's net is one of these.
EXPERIMENT_NETS = {
    "erg-3x2": ("hochreiter1997-erg-3x2-lr0.1", ()),
    "erg-4x1": ("hochreiter1997-erg-4x1-lr0.1", ()),
    "erg-3x2-2000-wiring": ("hochreiter1997-erg-3x2-lr0.1-2000-wiring", ()),
    "erg-4x1-2000-wiring": ("hochreiter1997-erg-4x1-lr0.1-2000-wiring", ()),
    "adding": ("hochreiter1997-adding-t100", ()),
    "adding-linear-output": ("hochreiter1997-adding-t100-linear-output", ()),
    "temporal-order-6a": ("hochreiter1997-temporal-order-6a", ()),
    "temporal-order-6b": ("hochreiter1997-temporal-order-6b", ()),
    "6b-cell-sources-only": ("hochreiter1997-temporal-order-6b", ("cell_sources_only",)),
    "6b-input-shortcut": ("hochreiter1997-temporal-order-6b", ("input_shortcut",)),
    "cerg-forget": ("gers2000-cerg-forget", ()),
    "cerg-without-forget-gate": ("gers2000-cerg-standard", ()),
    "cerg-state-decay": ("gers2000-cerg-state-decay", ()),
    "nto-without-forget-gate": ("gers2000-nto-standard", ()),
    "nto-forget": ("gers2000-nto-forget-bias5", ()),
    "pfg-peephole": ("gers2002-pfg-cos-f10-peephole", ()),
    "pfg-no-peephole": ("gers2002-pfg-cos-f10-no-peephole", ()),
    "gts-peephole": ("gers2002-gts-peephole", ()),
    "gts-no-peephole": ("gers2002-gts-no-peephole", ()),
    "gts-no-forget": ("gers2002-gts-no-forget", ()),
}


def experiment_data(key: str) -> dict:
    """The spec data of `EXPERIMENT_NETS`' ``key``: its row's, with the sweep's variants on."""
    from lstmgraph.experiments import find_experiment
    from lstmgraph.experiments.sweep_keys import VARIANTS
    row, extra = EXPERIMENT_NETS[key]
    data, _ = find_experiment(row).spec_data()
    for name in extra:
        VARIANTS[name].apply(data)
    return data


def experiment_plan(key: str) -> lstmgraph.Plan:
    """The plan of `EXPERIMENT_NETS`' ``key``."""
    return lstmgraph.compile_plan(lstmgraph.spec_from_data(experiment_data(key), f"<{key}>"))


def net_structure(data: dict) -> str:
    """A spec's groups and connections, initial values left out: equal for nets that compute alike."""
    connections = [{k: v for k, v in c.items() if k != "init"} for c in data["connections"]]
    return json.dumps({"groups": data["groups"], "connections": connections}, sort_keys=True)
