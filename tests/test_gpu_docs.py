"""docs/gpu.md's table of the agreement measured on a GPU is the one its committed files give."""

import json
from pathlib import Path

from lstmgraph.benchmark_gpu import agreement_table

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT / "docs" / "gpu" / "h200-2026-11-27"
BUILDS = {"LTO": "agreement-first-call.json", "no LTO": "agreement-second-call.json"}


def test_the_gpu_page_shows_the_committed_agreement():
    checks = {label: json.loads((MEASURED / name).read_text()) for label, name in BUILDS.items()}
    table = agreement_table(checks)
    assert table in (ROOT / "docs" / "gpu.md").read_text(), "regenerate it: see docs/gpu.md, 'Measured on an H200'"


def test_a_failed_layout_shows_its_error():
    table = agreement_table({"b": {"net": {"warp": {"error": "Traceback\nTypingError: bad index\n"}}}})
    assert "| net | warp | b | error: TypingError: bad index" in table
