"""A sweep's subject, its settings as run, and its figures (`sweep.py`, `sweep_report.py`)."""

from __future__ import annotations

import json
import shutil
import statistics

import numpy as np
import pytest
import yaml

from lstmgraph.experiments import SequenceProtocol, StreamProtocol, find_experiment
from lstmgraph.experiments.sweep import SpecExperiment, compared_with_nothing, grid, subject_of
from lstmgraph.experiments.sweep_keys import KEYS
from lstmgraph.experiments.sweep_values import SweepError
from lstmgraph.experiments.sweep_report import (csv_text, document_bytes, mcnemar_exact, paired, sweep_document,
                                                sweep_figure, table_lines)

from conftest import SPECS

MSD = find_experiment("gers2002-msd-f10-peephole")


def _row(trial) -> dict:
    row = trial.run()
    row.pop("seconds")
    return row


def test_a_key_set_to_the_row_s_own_value_runs_the_row_s_trials():
    """forget_gate_bias -2 as a constant is the row's `values: [-2.0]`: the same net, trials and weights."""
    same = KEYS["forget_gate_bias"].apply(MSD, "", -2)
    assert same.spec_data()[0] != MSD.spec_data()[0]  # written otherwise ...
    for seed in (0, 1):
        ours, theirs = same.trial(same.plan(), seed, 3000), MSD.trial(MSD.plan(), seed, 3000)
        assert _row(ours) == _row(theirs)  # ... run the same
        assert all((a == b).all() for a, b in zip(ours.engine.weights.values(), theirs.engine.weights.values()))
    other = KEYS["forget_gate_bias"].apply(MSD, "", 2)
    opened, row = other.trial(other.plan(), 0, 3000), MSD.trial(MSD.plan(), 0, 3000)
    assert opened.engine.weights["bias->memory.forget_gate"][0, 0] == 2.0
    assert row.engine.weights["bias->memory.forget_gate"][0, 0] == -2.0


def test_one_changed_setting_says_it_is_compared_with_nothing_and_how_to_compare_it():
    alone = grid(MSD, [("variant.without_peepholes", [True]), ("learning_rate", [0.5])])
    assert len(alone) == 1 and alone[0].own
    note = compared_with_nothing(MSD, alone)
    assert note.endswith("give the own value too: --vary variant.without_peepholes=false,true "
                         f"--vary learning_rate={json.dumps(MSD.learning_rate)},0.5")
    # the suggestion's grid pairs the change with the row itself
    paired = grid(MSD, [("variant.without_peepholes", [False, True]), ("learning_rate", [MSD.learning_rate, 0.5])])
    assert any(setting.own and not setting.changes(MSD) for setting in paired)
    assert compared_with_nothing(MSD, paired) is None
    assert compared_with_nothing(MSD, grid(MSD, [("learning_rate", [MSD.learning_rate])])) is None  # the row


def test_a_spec_is_swept_under_its_task_s_test_and_a_protocol_for_its_kind_of_task(tmp_path):
    timing = tmp_path / "mine.yaml"
    shutil.copy(SPECS / "gers2002_timing.yaml", timing)
    subject = subject_of(str(timing), 3)
    assert subject.kind == "spec" and isinstance(subject.experiment, SpecExperiment)
    protocol = subject.experiment.protocol
    assert isinstance(protocol, StreamProtocol) and protocol.test_streams == 1  # PFG: continual, deterministic
    assert protocol.tolerance == 0.3 and "continual" in subject.judged_by and subject.experiment.trials == 3
    assert subject.experiment.learning_rate is None and subject.experiment.plan().training.learning_rate == 0.001
    adding = subject_of("hochreiter1997_adding", None)  # a bundled spec by name
    assert isinstance(adding.experiment.protocol, SequenceProtocol)
    assert adding.experiment.protocol.tolerance == 0.04 and adding.experiment.trials == 10
    (faster,) = grid(subject.experiment, [("learning_rate", [0.01])], add_own=False)
    assert faster.experiment.plan().training.learning_rate == 0.01
    assert faster.experiment.describe()["spec"] == str(timing.resolve())


def test_a_spec_s_training_length_is_named_as_not_capping_a_sweep_unless_max_steps_does(tmp_path):
    data = yaml.safe_load((SPECS / "hochreiter1997_adding.yaml").read_text())
    data["training"].update(steps=20000, epochs=None)
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data))
    subject = subject_of(str(path), 1)
    assert subject.length_note(None) == (
        "the spec's training.steps (20000) does not cap a sweep's trials: each runs until its protocol ends it, at "
        "most 1,000,000 sequences; --max-steps N caps each trial at N steps")
    assert subject.length_note(20000) is None and subject_of("hochreiter1997-adding-t100").length_note(None) is None


def test_a_spec_without_a_task_or_a_name_that_is_nothing_is_refused_by_name(tmp_path):
    data = yaml.safe_load((SPECS / "gers2002_timing.yaml").read_text())
    del data["training"]["task"]
    path = tmp_path / "no-task.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SweepError, match=r"no-task.yaml: no training.task or training.data"):
        subject_of(str(path), None)
    with pytest.raises(SweepError, match="gers2002-gts-peepholes: neither .* did you mean gers2002-gts-peephole"):
        subject_of("gers2002-gts-peepholes", None)


def test_mcnemar_s_exact_test_counts_the_discordant_pairs():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 0) == pytest.approx(2 / 32)
    assert mcnemar_exact(0, 6) == pytest.approx(2 / 64)
    assert mcnemar_exact(3, 1) == pytest.approx(2 * 5 / 16)
    assert mcnemar_exact(4, 4) == 1.0


def _rows(solved: list[bool]) -> list[dict]:
    return [{"seed": seed, "solved": s, "to_success": 100 * (seed + 1) if s else None, "seconds": 0.5,
             "diverged": False} for seed, s in enumerate(solved)]


def _document(second_key: bool) -> dict:
    keys = {"learning_rate": [0.1, 0.5]} | ({"forget_gate_bias": [-1, 1]} if second_key else {})
    combos = [{"learning_rate": r} | ({"forget_gate_bias": b} if second_key else {})
              for r in keys["learning_rate"] for b in (keys.get("forget_gate_bias") or [None])]
    settings = [{"index": i, "values": values, "folder": f"settings/{i}", "own": i == 0, "added": False}
                for i, values in enumerate(combos)]
    outcomes = [[True] * 6, [True, False, False, False, False, False], [True, True, False, True, True, True],
                [False] * 6]
    head = {"subject": {"name": "row"}, "keys": keys, "trials": 6, "budget_steps": None, "unit": "sequences",
            "rate_label": "% solved", "published_rate_percent": 100}
    return sweep_document(head, settings, {i: _rows(outcomes[i]) for i in range(len(settings))})


def test_the_document_gives_each_setting_its_intervals_and_its_paired_test_against_the_own_setting():
    document = _document(second_key=False)
    own, other = document["settings"]
    assert document["own_setting"] == 0 and own["paired_with_own"] is None
    assert own["rate_percent"] == 100.0 and own["rate_interval_percent"] == [60.97, 100.0]
    assert own["mean_to_success"] == 350.0 and own["mean_interval"][0] < 350 < own["mean_interval"][1]
    assert other["solved"] == 1 and other["mean_interval"] is None and other["cpu_seconds"] == 3.0
    assert other["paired_with_own"] == {"pairs": 6, "solved_in_both": 1, "solved_only_here": 0,
                                        "solved_only_in_own": 5, "mcnemar_p": 0.0625, "faster_here": 0,
                                        "slower_here": 0, "wilcoxon_p": 1.0}
    assert document_bytes(document) == document_bytes(json.loads(document_bytes(document)))
    assert list(json.loads(document_bytes(document))) == sorted(document)
    assert csv_text(document).splitlines()[2].startswith("1,0.5,false,6,1,16.67,")
    assert "1 = 16.67 %" in "\n".join(table_lines(document)) or "1 = 17 %" in "\n".join(table_lines(document))


def _signed_rank_by_enumeration(differences: list[float]) -> float:
    """Wilcoxon's two-sided p written out: the positive ranks' sum over every one of the 2^n signs."""
    import itertools
    kept = [d for d in differences if d != 0]
    sizes = sorted(abs(d) for d in kept)
    ranks = [statistics.fmean(i + 1 for i, size in enumerate(sizes) if size == abs(d)) for d in kept]
    seen = sum(rank for rank, d in zip(ranks, kept) if d > 0)
    sums = [sum(rank for rank, up in zip(ranks, signs) if up) for signs in itertools.product((False, True), repeat=len(kept))]
    below, above = (sum(s <= seen for s in sums), sum(s >= seen for s in sums))
    return min(1.0, 2 * min(below, above) / len(sums))


def test_the_speed_test_is_wilcoxon_s_signed_rank_test_exact_and_then_normal(monkeypatch):
    from lstmgraph.experiments import sweep_report
    from lstmgraph.experiments.sweep_report import signed_rank_p

    rng = np.random.default_rng(0)
    for _ in range(100):  # ties in size, zeros and signs drawn, up to 10 pairs
        differences = [float(d) for d in rng.integers(-4, 5, rng.integers(1, 11))]
        assert signed_rank_p(differences) == pytest.approx(_signed_rank_by_enumeration(differences), abs=1e-12)
    assert signed_rank_p([1, 2, 3, 4, 5, 6]) == 2 / 64 and signed_rank_p([0, 0]) == 1.0
    for differences in (list(rng.normal(0.2, 1, 150)), [float(d) for d in rng.integers(-30, 40, 150)]):
        exact = signed_rank_p(differences)
        monkeypatch.setattr(sweep_report, "EXACT_PAIRS", 0)  # beyond it: the normal approximation
        assert signed_rank_p(differences) == pytest.approx(exact, rel=0.1)
        monkeypatch.setattr(sweep_report, "EXACT_PAIRS", 200)


def test_a_setting_that_solves_as_often_but_slower_has_a_small_speed_p():
    """Before: only McNemar's test on success: a setting three times slower on every seed read
    p = 1 against the own setting, as if no different."""
    from lstmgraph.experiments.sweep_report import signed_rank_p

    own, slow = _rows([True] * 8), _rows([True] * 8)
    for row in slow:
        row["to_success"] *= 3
    result = paired(slow, own)
    assert result["mcnemar_p"] == 1.0 and result["slower_here"] == 8 and result["wilcoxon_p"] == pytest.approx(2 / 256, abs=1e-6)
    head = {"subject": {"name": "row"}, "keys": {"learning_rate": [0.1, 0.5]}, "trials": 30, "budget_steps": None,
            "unit": "sequences", "rate_label": "% solved", "published_rate_percent": 100}
    settings = [{"index": i, "values": {"learning_rate": rate}, "folder": f"settings/{i}", "own": i == 1,
                 "added": False} for i, rate in enumerate([0.1, 0.5])]
    slower = _rows([True] * 30)
    for row in slower:
        row["to_success"] *= 2
    document = sweep_document(head, settings, {0: slower, 1: _rows([True] * 30)})
    assert document["settings"][0]["paired_with_own"]["wilcoxon_p"] == 0.0  # 2^-29, kept to 6 decimals
    assert table_lines(document)[1].endswith("  <1e-6")  # not "0"
    with pytest.raises(ValueError, match="finite differences"):
        signed_rank_p([1.0, float("nan")])


@pytest.mark.parametrize("second_key", [False, True])
def test_the_figure_is_a_png_the_same_every_time(second_key):
    document = _document(second_key)
    figure = sweep_figure(document)
    assert figure.startswith(b"\x89PNG") and figure == sweep_figure(document)


def test_an_own_setting_the_subject_sets_no_value_for_is_unset_in_the_table_and_drawn_in_the_figure():
    """Before: a spec's own setting (weights drawn at random: no single forget_gate_bias) read
    ``null`` in the printed table, and the figure left it out (added to the grid, or off its axis)."""
    keys = {"forget_gate_bias": [-1, 1]}
    settings = [{"index": i, "values": {"forget_gate_bias": b}, "folder": f"settings/{i}", "own": b is None,
                 "added": b is None} for i, b in enumerate([-1, 1, None])]
    head = {"subject": {"name": "mynet"}, "keys": keys, "trials": 6, "budget_steps": None, "unit": "sequences",
            "rate_label": "% solved", "published_rate_percent": None}
    outcomes = [[True] * 6, [False] * 6, [True, True, True, False, False, False]]
    document = sweep_document(head, settings, {i: _rows(outcomes[i]) for i in range(3)})
    (own_line,) = [line for line in table_lines(document) if "(own)" in line]
    assert own_line.split()[:3] == ["2", "(own)", "unset"] and "null" not in "\n".join(table_lines(document))
    without_own = {**document, "settings": document["settings"][:2]}
    assert sweep_figure(document) != sweep_figure(without_own)


def test_a_figure_of_long_values_keeps_its_plot():
    """Before: data files' absolute paths as tick labels squeezed the plot to nothing (matplotlib:
    'constrained_layout not applied because axes sizes collapsed to zero')."""
    import warnings
    document = _document(second_key=False)
    paths = [f"/tmp/pytest-of-root/pytest-601/test_a_spec_sweep_resumes_wher0/there/{name}.npz" for name in "ab"]
    document["keys"] = {"protocol.max_sequences": [200], "task.path": paths}
    for setting, path in zip(document["settings"], paths):
        setting["values"] = {"protocol.max_sequences": 200, "task.path": path}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sweep_figure(document).startswith(b"\x89PNG")
    from lstmgraph.experiments.sweep_report import _ticks
    alike = [f"/home/u/runs/{run}/data/sequences/train.npz" for run in ("alpha", "beta")]  # (the same end)
    assert _ticks(alike) == ['0: …ta/sequences/train.npz"', '1: …ta/sequences/train.npz"']


def test_the_deleted_scripts_settings_are_sweep_settings():
    """benchmarks/forget_bias.py and benchmarks/erg_wiring.py (deleted) ran these experiments;
    docs/sweeps.md's commands give settings that run the same spec, task and protocol."""
    from dataclasses import replace

    from lstmgraph.experiments.variants import (CELL_SOURCES_ONLY, INPUT_OUTPUT_SHORTCUT, OUTPUT_BIASES,
                                                forget_gate_bias)

    def net(experiment) -> dict:
        data = experiment.spec_data()[0]
        del data["training"]["task"]  # (an option left at its default, or set to it: the same task)
        return data

    def same(setting, experiment) -> bool:
        ours = setting.experiment
        return (net(ours), vars(ours.make_task()), ours.protocol) == \
            (net(experiment), vars(experiment.make_task()), experiment.protocol)

    settings = grid(MSD, [("forget_gate_bias", [-1, 0, 1, 2, 5]), ("protocol.max_streams", [1_000_000]),
                          ("protocol.test_phase_stops_at_failure", [True])], add_own=False)
    for setting, bias in zip(settings, (-1, 0, 1, 2, 5)):
        script = replace(MSD, protocol=replace(MSD.protocol, max_streams=1_000_000, test_phase_stops_at_failure=True),
                         variants=MSD.variants + (forget_gate_bias(bias),))
        assert same(setting, script)
    erg = find_experiment("hochreiter1997-erg-3x2-lr0.5")
    settings = grid(erg, [("variant.input_shortcut", [False, True]), ("variant.output_biases", [False, True]),
                          ("variant.cell_sources_only", [False, True]), ("task.targets", ["next", "legal"]),
                          ("protocol.max_sequences", [100_000])], add_own=False)
    by_values = {tuple(s.values.values())[:4]: s for s in settings}
    for wiring in [(), (OUTPUT_BIASES,), (INPUT_OUTPUT_SHORTCUT,), (INPUT_OUTPUT_SHORTCUT, OUTPUT_BIASES),
                   (CELL_SOURCES_ONLY,), (INPUT_OUTPUT_SHORTCUT, OUTPUT_BIASES, CELL_SOURCES_ONLY)]:
        for targets in ("next", "legal"):
            script = replace(erg, variants=wiring, task_options={"targets": targets},
                             protocol=replace(erg.protocol, max_sequences=100_000))
            key = (INPUT_OUTPUT_SHORTCUT in wiring, OUTPUT_BIASES in wiring, CELL_SOURCES_ONLY in wiring, targets)
            assert same(by_values[key], script), key


def test_a_setting_whose_trials_would_never_read_a_protocol_value_is_refused():
    """`reproduce --protocol-option tolerance=...` is refused on a most_active row; so is a sweep
    setting of it, alone or in a grid with the success test, before anything runs."""
    erg = find_experiment("hochreiter1997-erg-3x2-lr0.5")
    assert erg.protocol.success == "most_active"
    with pytest.raises(SweepError, match="setting protocol.tolerance=0.3: protocol.tolerance: .* reads no tolerance"):
        grid(erg, [("protocol.tolerance", [0.3])])
    with pytest.raises(SweepError, match="reads no tolerance"):
        grid(erg, [("protocol.success", ["tolerance", "most_active"]), ("protocol.tolerance", [0.3, 0.4])], False)


def test_a_setting_s_protocol_values_are_applied_together_in_either_order():
    """success=tolerance needs a tolerance > 0: given with one, in either --vary order, it holds."""
    erg = find_experiment("hochreiter1997-erg-3x2-lr0.5")
    for varied in ([("protocol.success", ["tolerance"]), ("protocol.tolerance", [0.3, 0.4])],
                   [("protocol.tolerance", [0.3, 0.4]), ("protocol.success", ["tolerance"])]):
        settings = grid(erg, varied, add_own=False)
        assert [(s.experiment.protocol.success, s.experiment.protocol.tolerance) for s in settings] == [
            ("tolerance", 0.3), ("tolerance", 0.4)]
    # The own setting (success=tolerance at the row's tolerance 0) is not a protocol: the advice says so.
    with pytest.raises(SweepError, match=r"protocol.tolerance must be .* \(the own setting.*--no-own-setting"):
        grid(erg, [("protocol.success", ["tolerance"]), ("protocol.tolerance", [0.3, 0.4])])


def test_a_row_s_print_spec_file_given_its_protocol_keys_is_swept_under_the_row_s_protocol(tmp_path):
    """A row's --print-spec file, swept as a spec, ran under a spec's default protocol (the ERG rows: a
    window of 2,000 sequences, not 256) with nothing to say so; `row_protocol_keys` are the keys that
    give it the row's protocol, for every row whose protocol is of the default's kind."""
    from lstmgraph.experiments import EXPERIMENTS
    from lstmgraph.experiments.sweep import row_protocol_keys
    from lstmgraph.experiments.sweep_keys import protocol_settings

    erg = find_experiment("hochreiter1997-erg-3x2-lr0.5")
    assert row_protocol_keys(erg) == {"fixed_sets": 256, "data_sets": 3, "window": 256, "max_sequences": 200000,
                                      "evaluate_every": 250}
    matched = 0
    for row in EXPERIMENTS.values():
        keys = row_protocol_keys(row)
        if keys is None:
            continue
        (tmp_path / "row.yaml").write_text(yaml.safe_dump(row.spec_data()[0], sort_keys=False))
        spec = subject_of(str(tmp_path / "row.yaml")).experiment
        assert protocol_settings(spec, keys).protocol == row.protocol if keys else spec.protocol == row.protocol, row.name
        matched += 1
    assert matched >= len(EXPERIMENTS) - 5


def test_a_sweep_that_sets_protocol_keys_says_so_and_names_the_protocol_its_settings_ran():
    """Before: sweep.json and the printed plan gave the subject's protocol (10 test streams)
    when every setting ran 1."""
    from lstmgraph.experiments.sweep import Subject, judged_by

    row = find_experiment("gers2002-gts-peephole")
    subject = Subject(row, "catalogue row", "the row's protocol (stream)")
    plain = grid(row, [("learning_rate", [0.5, 0.2])], add_own=False)
    assert judged_by(subject, plain) == ("the row's protocol (stream)", row.protocol.describe())
    shared = grid(row, [("learning_rate", [0.5, 0.2]), ("protocol.test_streams", [3])], add_own=False)
    words, described = judged_by(subject, shared)
    assert words == "the row's protocol (stream), with protocol.test_streams as the settings set them"
    assert described == shared[0].experiment.protocol.describe() != row.protocol.describe()
    each = grid(row, [("protocol.test_streams", [3, 4])], add_own=False)
    assert judged_by(subject, each) == ("the row's protocol (stream), with protocol.test_streams as each setting "
                                        "sets them", f"{row.protocol.describe()} (each setting's in its results.json)")


def test_a_key_without_a_list_of_values_is_refused_and_a_dict_of_keys_is_a_grid():
    """Before: an empty list gave the own setting alone, silently; a dict raised 'too many values
    to unpack' from inside."""
    subject = subject_of("gers2000_cerg")
    for values in ([], 0.1, None):
        with pytest.raises(SweepError, match="learning_rate: give a non-empty list of values"):
            grid(subject.experiment, [("learning_rate", values)])
    settings = grid(subject.experiment, {"learning_rate": [0.1, 0.5]})
    assert [setting.label() for setting in settings] == ["learning_rate=0.1", "learning_rate=0.5"]


def test_sweep_csv_writes_text_values_unquoted_and_own_as_json(tmp_path):
    """Before: a text value came out as \"\"\"delay\"\"\" (JSON inside CSV quotes) and own as Python's True."""
    from conftest import REPO as ROOT

    document = json.loads((ROOT / "docs/sweeps/gers2002-gts-no-forget/cue-delay/sweep.json").read_text())
    lines = csv_text(document).splitlines()
    assert lines[0].startswith("index,task.cue,own,") and lines[1].startswith("0,delay,true,10,")
    assert (ROOT / "docs/sweeps/gers2002-gts-no-forget/cue-delay/sweep.csv").read_text() == csv_text(document)


def test_null_unsets_a_task_option_as_reproduce_does_and_a_number_key_refuses_it():
    """Before: null was skipped, so learning_rate=null ran the own net under another label beside
    the own setting, and task.idle_target=null could not unset the option as reproduce does."""
    from lstmgraph.experiments.sweep_values import SweepError

    cnto = find_experiment("gers2000-cnto-forget")
    unset, half, own = grid(cnto, {"task.idle_target": [None, 0.5]})
    assert "idle_target" not in unset.experiment.task_options and not unset.own
    assert unset.experiment.task_options == cnto.with_task_options({"idle_target": None}).task_options
    assert half.experiment.task_options["idle_target"] == 0.5 and own.own and own.experiment is cnto
    with pytest.raises(SweepError, match="learning_rate takes a finite number > 0, not null"):
        grid(MSD, {"learning_rate": [None, 0.1]})
