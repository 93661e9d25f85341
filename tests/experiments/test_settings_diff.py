"""How a folder's stored settings differ from a command's (`experiments/settings_diff.py`)."""

from __future__ import annotations

from lstmgraph.experiments.settings_diff import setting_differences


def test_long_values_are_shown_where_they_first_differ():
    """Two protocol descriptions alike for 100 characters: cut to the same 60 they looked equal."""
    same = "continual streams, no reset inside a stream; a training stream stops at its first error "
    (line,) = setting_differences({"protocol": same + "(|error| >= 0.49)"},
                                  {"protocol": same + "(the target's unit not the most active)"})
    folder, command = line.removeprefix("protocol: ").split(" in the folder, ")
    assert folder != command and folder.startswith("...") and command.startswith("...")
    assert "0.49" in folder and "the target" in command
    assert setting_differences({"n": 3_000}, {"n": 2_999}) == ["n: 3,000 in the folder, 2,999 in this command"]
    assert setting_differences({}, {"n": 1}) == ["n: not set in the folder, 1 in this command"]
