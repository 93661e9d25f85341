"""docs/experiments.md stays true: its YAML snippets parse, every task line in them (the
commented alternatives too) builds its task, and every registered task is described."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import yaml

from lstmgraph.tasks import TASKS, make_task

DOC = Path(__file__).resolve().parents[2] / "docs" / "experiments.md"
TASK_LINE = re.compile(r"^\s*(?:#\s*)?task: (\{.*?\})(?:\s+#.*)?$")


def snippets() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_snippets_are_yaml_with_a_training_task():
    blocks = snippets()
    assert len(blocks) >= 10
    for block in blocks:
        data = yaml.safe_load(block)
        assert set(data) == {"training"} and "name" in data["training"]["task"], block


def test_every_task_line_builds_its_task(tmp_path, monkeypatch):
    np.savez(tmp_path / "mydata.npz", inputs=np.zeros((6, 1)), targets=np.ones((6, 1)))  # the data_file line's
    monkeypatch.chdir(tmp_path)
    built = set()
    for block in snippets():
        for line in block.splitlines():
            match = TASK_LINE.match(line)
            if match:
                options = yaml.safe_load(match.group(1))
                name = options.pop("name")
                task = make_task(name, options)
                built.add(task.name)
    assert built == set(TASKS)


def test_every_task_is_named_and_protocols_come_last():
    text = DOC.read_text(encoding="utf-8")
    for name in TASKS:
        assert f"`{name}`" in text, name
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings[-1] == "Protocols"
    assert text.rstrip().endswith("## Protocols\n\nProtocols are described in docs/results.md.")
