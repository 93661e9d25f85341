"""experiment.json: what a folder's trials ran with is compared and digested, the row's words
and published figures are not (`folder_settings.DESCRIPTIVE_KEYS`), and a folder written before the
protocol was recorded as data (``protocol_settings``) is taken as it was and brought up to date."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lstmgraph.arrays import npz_bytes
from lstmgraph.experiments import EXPERIMENTS, find_experiment
from lstmgraph.experiments.folder import ResultsConflict, ResultsFolder
from lstmgraph.experiments.folder_settings import (DESCRIPTIVE_KEYS, PROTOCOL_SETTINGS, checkpoint_digests, settings,
                                                   settings_digest)
from lstmgraph.experiments.protocols import ProtocolError, protocol_from_settings
from lstmgraph.experiments.schedule import run_experiment
from lstmgraph.files import BUNDLED_SPECS

ROW = "hochreiter1997-adding-t100"
BUDGET = 1000


def _run_once(tmp_path) -> tuple:
    """A folder holding one finished trial of ROW, and the settings its run wrote."""
    experiment = find_experiment(ROW)
    first = run_experiment(experiment, 1, 1, tmp_path, BUDGET)
    return experiment, first, json.loads((tmp_path / "experiment.json").read_text())


def _checkpoint_arrays(seed: int) -> dict:
    """The arrays of a trial's checkpoint as far as a folder checks them."""
    return {"trial/seed": np.array(seed), "trial/kind": np.array("sequences"),
            "trial/counters": np.arange(4, dtype=np.int64), "trial/seconds": np.array(1.0)}


def _reworded(stored: dict) -> dict:
    """``stored`` with every descriptive key otherwise: the words a later version might use."""
    return {**stored, "protocol": stored["protocol"] + " (reworded)", "published": {"success_percent": 99},
            "note": "a corrected note", "paper": "another citation", "table": "Table 70", "trials": 7}


def test_every_row_s_protocol_reads_back_from_its_settings_as_data():
    for name, experiment in EXPERIMENTS.items():
        recorded = json.loads(json.dumps(experiment.describe()[PROTOCOL_SETTINGS]))  # as experiment.json holds it
        assert protocol_from_settings(recorded) == experiment.protocol, name


@pytest.mark.parametrize("damage, words", [
    ({"kind": "tapes"}, "no protocol of kind 'tapes'"),
    ({"tolerance": "a lot"}, "tolerance takes a finite number, not 'a lot'"),
    ({"speed": 3}, "none of its: speed"),
    ({"window": None}, "window takes a value (it cannot be unset)"),
])
def test_damaged_protocol_settings_are_named(damage, words):
    recorded = {**find_experiment(ROW).protocol.settings(), **damage}
    with pytest.raises(ProtocolError, match=words.replace("(", r"\(").replace(")", r"\)")):
        protocol_from_settings(recorded)
    missing = {key: value for key, value in find_experiment(ROW).protocol.settings().items() if key != "window"}
    with pytest.raises(ProtocolError, match="missing: window"):
        protocol_from_settings(missing)


def test_the_row_s_words_and_figures_changed_keep_the_folder_s_trials_and_are_brought_up_to_date(tmp_path):
    """Before: a corrected wording of the protocol or a corrected published figure made every
    committed folder refuse to resume ('run with other settings')."""
    experiment, first, stored = _run_once(tmp_path)
    (tmp_path / "experiment.json").write_text(json.dumps(_reworded(stored)))
    more = run_experiment(experiment, 2, 1, tmp_path, BUDGET)
    assert more["trials"][0] == first["trials"][0] and [row["seed"] for row in more["trials"]] == [0, 1]
    assert json.loads((tmp_path / "experiment.json").read_text()) == stored  # the words now current
    assert settings_digest(_reworded(stored)) == settings_digest(stored)
    assert set(DESCRIPTIVE_KEYS) <= set(stored) | {"deterministic_task"}


@pytest.mark.parametrize("change, named", [
    ({"tolerance": 0.05}, "protocol_settings.tolerance: 0.05 in the folder, 0.04 in this command"),
    ({"window": 1000}, "protocol_settings.window: 1,000 in the folder, 2,000 in this command"),
])
def test_a_folder_whose_trials_ran_another_protocol_is_refused_naming_the_setting(tmp_path, change, named):
    experiment, _, stored = _run_once(tmp_path)
    other = {**stored, PROTOCOL_SETTINGS: {**stored[PROTOCOL_SETTINGS], **change}}
    (tmp_path / "experiment.json").write_text(json.dumps(other))
    with pytest.raises(ResultsConflict, match="run with other settings") as refused:
        run_experiment(experiment, 2, 1, tmp_path, BUDGET)
    assert named in str(refused.value)
    assert settings_digest(other) != settings_digest(stored)


def test_a_folder_from_before_protocol_settings_resumes_with_its_checkpoint_and_is_brought_up_to_date(tmp_path):
    """Its settings are compared whole, as they were then; its checkpoints carry the digest of
    those whole settings (`checkpoint_digests`); the run rewrites experiment.json in the new form."""
    experiment, first, stored = _run_once(tmp_path)
    former = {key: value for key, value in stored.items() if key != PROTOCOL_SETTINGS}
    (tmp_path / "experiment.json").write_text(json.dumps(former))
    folder = ResultsFolder(tmp_path)
    current, legacy = checkpoint_digests(stored)[0], checkpoint_digests(stored)[-1]
    assert current != legacy and checkpoint_digests(former) == (legacy,)
    content = npz_bytes(_checkpoint_arrays(1))
    folder.write_checkpoint(1, content, legacy)
    assert folder.read_checkpoint(1, "sequences", checkpoint_digests(stored)) is not None
    with pytest.raises(ResultsConflict, match="written for other settings"):
        folder.read_checkpoint(1, "sequences", checkpoint_digests(_reworded(stored)))
    (tmp_path / "trials" / "1" / "checkpoint.npz").unlink()
    more = run_experiment(experiment, 2, 1, tmp_path, BUDGET)
    assert more["trials"][0] == first["trials"][0]
    assert json.loads((tmp_path / "experiment.json").read_text()) == stored


def test_a_folder_from_before_protocol_settings_with_other_words_is_refused_as_before(tmp_path):
    """Its words were then its only record of the protocol, so they still count."""
    experiment, _, stored = _run_once(tmp_path)
    former = {key: value for key, value in _reworded(stored).items() if key != PROTOCOL_SETTINGS}
    (tmp_path / "experiment.json").write_text(json.dumps(former))
    with pytest.raises(ResultsConflict, match=r"run with other settings \(.*reworded"):
        run_experiment(experiment, 2, 1, tmp_path, BUDGET)
    assert json.loads((tmp_path / "experiment.json").read_text()) == former


def test_experiment_json_records_the_protocol_as_data_beside_its_words():
    recorded = settings(find_experiment("gers2002-pfg-cos-f10-peephole"), None, BUNDLED_SPECS)
    assert recorded[PROTOCOL_SETTINGS]["kind"] == "streams" and recorded[PROTOCOL_SETTINGS]["test_streams"] == 1
    assert "1 frozen test stream" in recorded["protocol"] and "deterministic_task" in recorded


def test_a_data_file_whose_bytes_changed_is_named_with_both_digests():
    from lstmgraph.experiments.folder_settings import data_file_change

    before = {"task": "data_file", "task_options": {"path": "/d.npz", "sha256": "a" * 64}}
    now = {"task": "data_file", "task_options": {"path": "/d.npz", "sha256": "b" * 64}}
    assert data_file_change(before, now) == (f"trials run on /d.npz when its sha256 was {'a' * 64}; /d.npz now has "
                                             f"{'b' * 64}: restore that file, or choose another --out for the new data")
    assert data_file_change(before, before) is None
    moved = {"task": "data_file", "task_options": {"path": "/e.npz", "sha256": "a" * 64}}
    assert data_file_change(before, moved) is None  # the same bytes elsewhere: the same data
    other = {"task": "data_file", "task_options": {"path": "/e.npz", "sha256": "b" * 64}}
    assert data_file_change(before, other) == (f"trials run on /d.npz (sha256 {'a' * 64}), not on /e.npz (sha256 "
                                               f"{'b' * 64}): choose another --out for that file's data")
    changed_elsewhere = {"task": "data_file", "task_options": {"path": "/checkout/d.npz", "sha256": "b" * 64}}
    assert data_file_change(before, changed_elsewhere).startswith("trials run on /d.npz when its sha256 was")
    held = {"task": "data_file", "task_options": {**before["task_options"], "test_path": "/h.npz", "test_sha256": "c" * 64}}
    held_changed = {"task": "data_file", "task_options": {**held["task_options"], "test_sha256": "d" * 64}}
    assert data_file_change(held, held_changed).startswith(f"trials run on /h.npz when its sha256 was {'c' * 64}")
    assert data_file_change({"task": "adding", "task_options": {}}, now) is None


def test_where_a_run_found_its_files_is_neither_compared_nor_digested():
    """Before: a sweep of a spec file compared the spec's absolute path (and a data file's), so its
    committed folder resumed only in the checkout it ran in."""
    stored = settings(find_experiment(ROW), BUDGET, BUNDLED_SPECS)
    moved = {**stored, "spec": "/elsewhere/net.yaml"}
    assert settings_digest(moved) == settings_digest(stored)
    pinned = {**stored, "task": "data_file", "task_options": {"path": "/a/d.npz", "sha256": "a" * 64}}
    assert settings_digest({**pinned, "task_options": {"path": "/b/d.npz", "sha256": "a" * 64}}) == settings_digest(pinned)
    assert settings_digest({**pinned, "task_options": {"path": "/a/d.npz", "sha256": "b" * 64}}) != settings_digest(pinned)


def test_a_checkpoint_written_with_the_spec_s_path_in_its_digest_resumes_from_another_checkout(tmp_path):
    """A checkpoint written before 2026-11-29 carries the digest of the settings with their paths,
    as the folder's experiment.json holds them (`checkpoint_digests`' second form)."""
    experiment, _, stored = _run_once(tmp_path)
    elsewhere = {**stored, "spec": "/elsewhere/net.yaml"}
    (tmp_path / "experiment.json").write_text(json.dumps(elsewhere))
    with_path = checkpoint_digests(elsewhere)[1]
    assert with_path not in checkpoint_digests(stored) and with_path in checkpoint_digests(stored, elsewhere)
    content = npz_bytes(_checkpoint_arrays(1))
    folder = ResultsFolder(tmp_path)
    folder.write_checkpoint(1, content, with_path)
    assert folder.read_checkpoint(1, "sequences", checkpoint_digests(stored, folder.stored_settings())) is not None
    with pytest.raises(ResultsConflict, match="written for other settings"):
        folder.read_checkpoint(1, "sequences", checkpoint_digests(stored))


def test_a_run_stamps_a_checkpoint_read_through_an_earlier_digest_with_the_current_one(tmp_path):
    """The earlier digest comes from experiment.json, which a run rewrites with this checkout's
    paths: a run stopped before the trial checkpoints again must still find it (before: 'written
    for other settings' at the next resume from the new checkout)."""
    from lstmgraph.experiments.folder_run import FolderRun

    experiment, _, stored = _run_once(tmp_path)
    elsewhere = {**stored, "spec": "/elsewhere/net.yaml"}
    (tmp_path / "experiment.json").write_text(json.dumps(elsewhere))
    arrays = {seed: _checkpoint_arrays(seed) for seed in (1, 3)}  # 3: beyond the resumes' 2 trials
    for seed in arrays:
        ResultsFolder(tmp_path).write_checkpoint(seed, npz_bytes(arrays[seed]), checkpoint_digests(elsewhere)[1])
    for trials in (2, 2, 4):  # a resume stopped before trial 1 checkpoints again, another, then one of 4 trials
        run = FolderRun(experiment, tmp_path, trials, BUDGET, BUNDLED_SPECS, "cpu", lambda row: None)
        run.open()
        run.release()
        assert run.checkpoints[1] is not None and (trials < 4 or run.checkpoints[3] is not None)
    for seed, written in arrays.items():
        again = ResultsFolder(tmp_path).read_checkpoint(seed, "sequences", (settings_digest(stored),))
        assert {name: again[1][name].tolist() for name in written} == {name: a.tolist() for name, a in written.items()}


def test_a_varied_data_file_s_path_in_a_setting_s_name_is_compared_by_its_digest():
    """Before: a sweep setting's name held the varied file's absolute path, so the setting
    resumed only where it began. A checkpoint written then carries that name's digest, which
    `checkpoint_digests` still offers."""
    stored = settings(find_experiment(ROW), BUDGET, BUNDLED_SPECS)
    pinned = {**stored, "task": "data_file", "name": 'net [task.path="/a/d2.npz"]',
              "task_options": {"path": "/a/d2.npz", "sha256": "a" * 64}}
    moved = {**pinned, "name": 'net [task.path="/b/d2.npz"]', "task_options": {"path": "/b/d2.npz", "sha256": "a" * 64}}
    assert settings_digest(moved) == settings_digest(pinned)
    assert settings_digest({**moved, "task_options": {"path": "/b/d2.npz", "sha256": "b" * 64}}) != settings_digest(pinned)
    import hashlib
    then = {key: value for key, value in pinned.items() if key not in DESCRIPTIVE_KEYS}  # (as run_settings did)
    then["task_options"] = {"sha256": "a" * 64}
    written_then = hashlib.sha256(json.dumps(then, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert written_then != settings_digest(pinned) and written_then in checkpoint_digests(moved, pinned)
    other_file = {**pinned, "task_options": {"path": "/a/d2.npz", "sha256": "b" * 64}}
    assert written_then not in checkpoint_digests(other_file, other_file)
