"""Reading spec files: YAML and JSON syntax errors, duplicate keys, odd files, located fields."""

from __future__ import annotations

import json

import pytest

import lstmgraph
from lstmgraph.errors import SpecError
from lstmgraph.spec.loader import parse_spec_bytes, parse_spec_text

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


# -- hostile documents: limits, aliases, JSON positions, numbers as people write them -----------

LAUGHS = "version: 1\na: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(9))


@pytest.mark.parametrize("text, fmt, words", [
    (LAUGHS, "yaml", "more than 50,000 values"),
    ("[" * 100_000 + "]" * 100_000, "yaml", "nested more than 32 deep"),
    ("{a: " * 100_000 + "1" + "}" * 100_000, "yaml", "nested more than 32 deep"),
    ("".join(" " * level + "a:\n" for level in range(200)), "yaml", "nested more than 32 deep"),
    ("a: &a " + "[" * 30 + "]" * 30 + "\nb: [[[[*a]]]]\n", "yaml", "nested more than 32 deep"),
    ("[" * 100_000 + "]" * 100_000, "json", "nested more than 32 deep"),
    ('{"a":' * 100_000 + "1" + "}" * 100_000, "json", "nested more than 32 deep"),
    ("[" + "1," * 60_000 + "1]", "json", "more than 50,000 values"),
])
def test_limits_stop_hostile_documents_with_a_located_error(text, fmt, words):
    with pytest.raises(SpecError) as caught:
        parse_spec_text(text, "net", fmt)
    message = caught.value.format()
    assert "the spec is too large" in message and words in message
    assert "docs/spec.md in the lstmgraph source, Limits" in message
    assert caught.value.source.position(()) is not None


def test_an_alias_inside_its_own_value_is_an_error():
    with pytest.raises(SpecError) as caught:
        parse_spec_text("version: 1\ngroups: &a [*a]\n")
    assert "the alias *a is inside the value it refers to" in caught.value.format()
    assert caught.value.source.position(()) == (2, 13)


def test_aliases_within_the_limits_still_work():
    data, source = parse_spec_text("x: &x {kind: input, size: 2}\ngroups: [*x, *x]\n")
    assert data["groups"] == [{"kind": "input", "size": 2}] * 2
    assert source.position(("groups", 1)) == (1, 4)  # an alias is located at its anchor


@pytest.mark.parametrize("text, value", [("1e-3", 0.001), ("1E3", 1000.0), ("-2.5e-2", -0.025),
                                         (".5e1", 5.0), ("1.0e-3", 0.001), ("12", 12), ("1_000", 1000)])
def test_yaml_numbers_as_people_write_them(text, value):
    data, _ = parse_spec_text(f"a: {text}\n")
    assert data["a"] == value and type(data["a"]) is type(value)


@pytest.mark.parametrize("text, words", [("a: " + "9" * 5000, "Exceeds the limit"),
                                         ("a: 2024-13-45", "month must be in 1..12")])
def test_values_python_cannot_hold_are_located(text, words):
    with pytest.raises(SpecError) as caught:
        parse_spec_text("\n" + text + "\n")
    assert words in caught.value.format() and caught.value.source.position(()) == (2, 4)


def test_json_with_tabs_keeps_positions_and_reports_repeated_keys():
    text = '{\n\t"version": 1,\n\t"groups": [\n\t\t{"name": "x"}\n\t],\n\t"version": 2\n}'
    with pytest.raises(SpecError) as caught:
        parse_spec_text(text, "net.json", "json")
    ((path, line, message),) = located(caught.value)
    assert (path, line) == ("version", 6) and "more than once" in message
    data, source = parse_spec_text(text.replace('"version": 2', '"name": "n"'), "net.json", "json")
    assert data["groups"] == [{"name": "x"}]
    assert source.position(("groups", 0, "name")) == (4, 4)


def test_json_reader_matches_json_loads():
    text = json.dumps({"a": [1, 2.5, -3e-2, True, None, "\u00e9\\n\""], "b": {}, "c": []}, indent="\t")
    assert parse_spec_text(text, "x.json", "json")[0] == json.loads(text)


@pytest.mark.parametrize("text, words", [('{"a": NaN}', "expected a value, found 'N'"),
                                         ('{"a": 1} x', "extra data"), ('{"a" 1}', "expected ':'"),
                                         ('{"a": [1 2]}', "expected ',' or ']'"), ("", "ends where a value")])
def test_json_syntax_errors_are_located(text, words):
    with pytest.raises(SpecError) as caught:
        parse_spec_text(text, "x.json", "json")
    assert "invalid JSON" in caught.value.format() and words in caught.value.format()
    assert caught.value.source.position(()) is not None


def test_files_that_cannot_be_read_say_why(tmp_path):
    import os

    from lstmgraph.errors import SpecFileError
    (tmp_path / "folder.yaml").mkdir()
    os.mkfifo(tmp_path / "pipe.yaml")  # opening it would block: refused unopened
    (tmp_path / "big.yaml").write_text("#" * (2 << 20))
    (tmp_path / "latin.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    for name, words in (("absent.yaml", "no such file"), ("folder.yaml", "is a folder"),
                        ("pipe.yaml", "not a regular file"), ("big.yaml", "larger than 1,048,576 bytes"),
                        ("latin.yaml", "not UTF-8 text (byte 9 is 0xe9)")):
        with pytest.raises(SpecFileError) as caught:
            lstmgraph.load_spec(tmp_path / name)
        assert words in caught.value.format(), name


def test_spec_bytes_are_utf_8_with_or_without_a_byte_order_mark():
    """A run's spec.yaml is compiled from the bytes its identity digests, decoded as a file is."""
    from lstmgraph.errors import SpecFileError
    assert parse_spec_bytes("\ufeffname: café\n".encode("utf-8"), "run/spec.yaml")[0] == {"name": "café"}
    with pytest.raises(SpecFileError) as caught:
        parse_spec_bytes("name: caf\xe9\n".encode("latin-1"), "run/spec.yaml")
    assert caught.value.source.filename == "run/spec.yaml"
    assert "not UTF-8 text (byte 9 is 0xe9)" in caught.value.format()


def test_a_spec_name_too_long_for_the_file_system_is_a_spec_file_error(tmp_path):
    """find_spec's Path.is_dir raised ENAMETOOLONG: validate with a 300-byte name was a traceback."""
    from lstmgraph.errors import SpecFileError
    for name in (str(tmp_path / ("b" * 300)) + ".yaml", "b" * 300):
        with pytest.raises(SpecFileError) as caught:
            lstmgraph.load_spec(name)
        assert caught.value.source.filename == name
        assert "a name in the path is longer than the file system allows" in caught.value.format()


def test_the_library_takes_a_bundled_spec_by_name_from_any_folder(tmp_path, monkeypatch):
    """`load_spec` and `compile_spec` resolve names as the commands do: a folder named like a
    bundled spec does not hide it, a file of that name does, a near miss names the closest."""
    from lstmgraph.bundled import SpecNotFound
    from lstmgraph.files import BUNDLED_SPECS
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gers2000_cerg").mkdir()
    plan = lstmgraph.compile_spec("gers2000_cerg")
    assert plan.n_parameters == 424 and plan.source.filename == str(BUNDLED_SPECS / "gers2000_cerg.yaml")
    assert lstmgraph.load_spec("gers2002_timing.yaml").name == "gers2002_timing"
    (tmp_path / "gers2002_timing.yaml").write_text(MINIMAL)
    assert lstmgraph.load_spec("gers2002_timing.yaml").source.filename == "gers2002_timing.yaml"
    with pytest.raises(SpecNotFound) as caught:
        lstmgraph.compile_spec("gers2000_cer")
    assert "did you mean the bundled spec 'gers2000_cerg'" in caught.value.format()


def test_load_spec_of_data_says_spec_from_data_validates_it():
    """Before: `TypeError: expected str, bytes or os.PathLike object, not dict` from pathlib."""
    for load in (lstmgraph.load_spec, lstmgraph.compile_spec):
        with pytest.raises(TypeError, match=r"not a dict: for data built in Python, spec_from_data\(data\)"):
            load({"version": 1, "groups": []})


def test_a_file_read_without_following_links_refuses_a_link(tmp_path):
    """``follow_links=False`` (a file a command finds in a folder it was given, not a path typed):
    a symbolic link is refused, not read; before, there was no such reading."""
    import os

    from lstmgraph.errors import SpecFileError
    from lstmgraph.spec.loader import read_spec_file

    (tmp_path / "net.yaml").write_text(MINIMAL)
    (tmp_path / "link.yaml").symlink_to(tmp_path / "net.yaml")
    assert read_spec_file(tmp_path / "link.yaml")[0] == read_spec_file(tmp_path / "net.yaml", follow_links=False)[0]
    with pytest.raises(SpecFileError) as caught:
        read_spec_file(tmp_path / "link.yaml", follow_links=False)
    assert "is a symbolic link" in caught.value.format()
    os.mkfifo(tmp_path / "pipe.yaml")  # opening it would block: refused unread
    with pytest.raises(SpecFileError) as caught:
        read_spec_file(tmp_path / "pipe.yaml", follow_links=False)
    assert "not a regular file" in caught.value.format()
