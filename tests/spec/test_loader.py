"""Reading spec files: YAML and JSON syntax errors, duplicate keys, odd files, located fields."""

from __future__ import annotations

import json

import pytest

import lstmgraph
from lstmgraph.errors import SpecError
from lstmgraph.spec.loader import parse_spec_text

from conftest import MINIMAL, located


def test_yaml_syntax_error_names_file_and_line(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 2
        connections: []
        """)
    ((path, line, message),) = located(error)
    assert message.startswith("invalid YAML")
    assert line == 4
    assert "net.yaml:4:" in error.format()


def test_json_syntax_error_names_line_and_column(write_spec):
    path = write_spec('{\n  "version": 1,\n  "groups": [,]\n}\n', "net.json")
    with pytest.raises(SpecError) as caught:
        lstmgraph.load_spec(path)
    assert "invalid JSON" in caught.value.format()
    assert caught.value.source.position(()) == (3, 14)


def test_duplicate_key_is_reported_at_the_second_occurrence(spec_error):
    error = spec_error("""
        version: 1
        version: 1
        groups: []
        """)
    ((path, line, message),) = located(error)
    assert (path, line) == ("version", 2)
    assert "more than once" in message


def test_empty_and_non_mapping_files(spec_error):
    assert "empty" in spec_error("\n").format()
    assert "list" in spec_error("- 1\n- 2\n").format()


def test_unknown_extension_and_missing_file(tmp_path):
    for path, words in ((tmp_path / "net.txt", "cannot tell the format"),
                        (tmp_path / "absent.yaml", "no such file")):
        if path.suffix == ".txt":
            path.write_text(MINIMAL)
        with pytest.raises(SpecError) as caught:
            lstmgraph.load_spec(path)
        assert words in caught.value.format()


def test_json_spec_validates_like_yaml_and_locates_fields(write_spec):
    import yaml
    data = yaml.safe_load(MINIMAL)
    data["connections"][1]["to"] = "yy"
    path = write_spec(json.dumps(data, indent=2), "net.json")
    with pytest.raises(SpecError) as caught:
        lstmgraph.compile_spec(path)
    ((field, line, message),) = located(caught.value)
    assert field == "connections[1].to"
    assert line == json.dumps(data, indent=2).splitlines().index('      "to": "yy"') + 1


def test_positions_of_nested_fields():
    _, source = parse_spec_text("a:\n  - b: 1\n    c: [x, y]\n")
    assert source.position(("a", 0, "b")) == (2, 5)
    assert source.position(("a", 0, "c", 1)) == (3, 12)
    assert source.position(("a", 0, "missing")) == (2, 5)
