"""`lstmgraph bench` (its helpers: tests/test_benchmark.py; the timed runs are not a test)."""

from __future__ import annotations


def test_bench_without_the_bundled_specs_exits_2(tmp_path):
    from test_commands import run
    result = run("bench", "--specs", str(tmp_path))
    assert result.returncode == 2 and "no such file" in result.stderr and "Traceback" not in result.stderr
