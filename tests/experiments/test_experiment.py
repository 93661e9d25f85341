"""An experiment's methods: a row with other task options or protocol settings keeps its net,
seeds and figures; a --specs folder's spec is read as a folder of its own (no link followed)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.protocols import ProtocolError
from lstmgraph.tasks import TaskError


def test_a_test_stream_count_a_deterministic_row_cannot_take_is_refused_not_reset():
    """Every test stream of a deterministic task scores the same: more than one is refused with a
    message (it used to be reset to 1 without a word while experiment.json kept the value)."""
    pfg = find_experiment("gers2002-pfg-cos-f10-peephole")
    with pytest.raises(ProtocolError, match="test_streams must be 1 for the periodic_function task"):
        pfg.with_protocol_options({"test_streams": 10})
    assert pfg.with_protocol_options({"test_streams": 1}).protocol.test_streams == 1
    gts = find_experiment("gers2002-gts-peephole").with_protocol_options({"test_streams": 5})
    with pytest.raises(ProtocolError, match="test_streams must be 1"):
        gts.with_task_options({"delays": [0]})  # deterministic now, and the 5 was asked for


def test_a_row_with_other_task_options_keeps_its_net_protocol_and_figures():
    row = find_experiment("gers2000-cnto-forget")
    assert row.task_options == {"variant": "6b", "continual": True, "idle_target": 0}  # seed 000's coding
    changed = row.with_task_options({"idle_target": 0.5})
    assert changed.task_options == {"variant": "6b", "continual": True, "idle_target": 0.5}
    assert row.task_options["idle_target"] == 0  # the catalogue's row is untouched
    assert (changed.protocol, changed.published, changed.trials, changed.variants) == \
        (row.protocol, row.published, row.trials, row.variants)
    assert changed.spec_data()[0]["training"]["task"]["idle_target"] == 0.5
    assert changed.make_task().idle_target == 0.5
    # None unsets an option: the task's default (no target between classifications, the 1997 rule)
    unset = row.with_task_options({"idle_target": None})
    assert unset.task_options == {"variant": "6b", "continual": True} and unset.make_task().idle_target is None
    assert "idle_target" not in unset.spec_data()[0]["training"]["task"]
    # a single delay makes GTS deterministic, so its test phase needs one stream
    gts = find_experiment("gers2002-gts-peephole")
    assert gts.protocol.test_streams == 1  # seed 002, line 258: one test after each training stream
    ten = replace(gts, protocol=replace(gts.protocol, test_streams=10))
    assert ten.with_task_options({"delays": [0]}).protocol.test_streams == 1
    for wrong in ({"idle": 0}, {"idle": None}):
        with pytest.raises(TaskError, match="has no option 'idle'"):
            row.with_task_options(wrong)
    with pytest.raises(TaskError, match="cue must be one of"):
        gts.with_task_options({"cue": "clock"})


def test_a_row_with_other_protocol_settings_keeps_its_net_task_and_figures():
    row = find_experiment("gers2000-cnto-forget")
    changed = row.with_protocol_options({"success": "most_active", "max_streams": 500, "rate_decay": 1})
    assert (changed.protocol.success, changed.protocol.max_streams, changed.protocol.rate_decay) == \
        ("most_active", 500, 1.0)
    assert changed.protocol == replace(row.protocol, success="most_active", max_streams=500)
    assert (changed.task_options, changed.published, changed.trials, changed.variants) == \
        (row.task_options, row.published, row.trials, row.variants)
    assert row.protocol.success == "tolerance" and row.protocol_options == {}  # the catalogue's row is untouched
    assert "protocol_options" not in row.describe()  # (a folder run before the option keeps its settings)
    assert changed.describe()["protocol_options"] == {"success": "most_active", "max_streams": 500, "rate_decay": 1}
    assert "the target's unit not the most active" in changed.describe()["protocol"]
    for wrong, message in (({"succes": "most_active"}, "no setting 'succes' (did you mean 'success'?)"),
                           ({"success": "winner"}, "success is one of 'tolerance', 'most_active', not 'winner'"),
                           ({"tolerance": 0}, "tolerance must be a finite number > 0"),
                           ({"tolerance": True}, "tolerance takes a finite number"),
                           ({"tolerance": 1e400}, "tolerance takes a finite number"),
                           ({"max_streams": 10**30}, "max_streams takes a whole number of at most"),
                           ({"max_streams": 1.5}, "max_streams takes a whole number"),
                           ({"tolerance": None}, "tolerance takes a value (it cannot be unset)"),
                           ({"max_streams": 0}, "max_streams must be at least 1"),
                           ({"reset_each_sequence": 1}, "takes true or false"),
                           ({"rate_decay": 2}, "rate_decay must be in (0, 1]")):
        with pytest.raises(ProtocolError, match=re.escape(message)):
            row.with_protocol_options(wrong)
    adding = find_experiment("hochreiter1997-adding-t100")
    with pytest.raises(ProtocolError, match="sequences protocol has no setting 'success_rule'"):
        adding.with_protocol_options({"success_rule": "x"})
    for wrong, message in (({"window": 0}, "window must be at least 1"),
                           ({"allowed_wrong": 2000}, "allowed_wrong must be at least 0 and below window (2000)"),
                           ({"max_error": 0}, "max_error must be > 0 (or null)"),
                           ({"max_error": "small"}, "max_error takes a finite number"),
                           ({"window": 10**7}, "window must be at most 1,000,000")):
        with pytest.raises(ProtocolError, match=re.escape(message)):
            adding.with_protocol_options(wrong)
    assert adding.with_protocol_options({"max_error": None, "window": 500}).protocol.max_error is None


@pytest.mark.parametrize("text", ["hello\n", "[1, 2]\n", "version: 1\nname: net\n", "groups: 5\nconnections: {}\n"])
def test_a_specs_folder_s_spec_that_is_no_spec_is_a_spec_error_before_the_row_changes_it(tmp_path, text):
    """Before: a --specs DIR file that is no spec's mapping (a string, a list, a mapping without the
    groups and connections the row's variants change) ended in an AttributeError, KeyError or
    TypeError traceback from `spec_data`, in reproduce and its --print-spec."""
    from lstmgraph.errors import SpecError

    row = find_experiment("hochreiter1997-erg-4x1-lr0.1-2000-wiring")
    assert row.variants
    (tmp_path / f"{row.spec}.yaml").write_text(text)
    with pytest.raises(SpecError) as raised:
        row.spec_data(tmp_path)
    assert raised.value.source.filename == str(tmp_path / f"{row.spec}.yaml")


def test_a_specs_folder_s_spec_is_never_read_through_a_link(tmp_path):
    """Before: --specs DIR holding NAME.yaml -> /anywhere read the file the link points to (and
    printed it with --print-spec, or its parts in the errors); the bundled folder is the
    installation's own and read as it is."""
    from lstmgraph.errors import SpecFileError
    from lstmgraph.files import BUNDLED_SPECS

    row = find_experiment("gers2002-gts-peephole")
    (tmp_path / f"{row.spec}.yaml").symlink_to(BUNDLED_SPECS / f"{row.spec}.yaml")
    with pytest.raises(SpecFileError) as raised:
        row.spec_data(tmp_path)
    assert "is a symbolic link" in raised.value.format()
    assert row.spec_data()[0] == row.spec_data(BUNDLED_SPECS)[0]


def test_a_specs_folder_may_be_given_as_text():
    """Before: Experiment.plan("specs") failed inside with TypeError: str / str."""
    from conftest import SPECS

    row = find_experiment("gers2002-gts-peephole")
    assert row.spec_path(str(SPECS)) == row.spec_path(SPECS)
    assert row.plan(str(SPECS)).n_parameters == row.plan(SPECS).n_parameters
