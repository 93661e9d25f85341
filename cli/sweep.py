"""`lstmgraph sweep`: a row's (or your own spec's) open choices varied, each setting a row run
with the same seeds, answered with intervals and paired tests (docs/sweeps.md)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from lstmgraph.errors import SpecError
from lstmgraph.files import default_out
from lstmgraph.layouts import SWEEP_FOLDER
from lstmgraph.limits import MAX_TRIALS

from .common import (MAX_STEPS_OPTION, UNTIL_SETTLED_OPTION, counted, error_text, fail, note_first_compile,
                     report_spec_error_from)
from .trial_progress import trial_progress
from .trial_runs import (ALL_FINISHED, check_cluster_option, run_errors, running_options, trial_line,
                         where_trials_run)


@click.command(short_help="Vary a row's or a spec's settings over a grid; run each.")
@click.argument("subject", metavar="EXPERIMENT_OR_SPEC")
@click.option("--vary", "varied", multiple=True, metavar="KEY=V1,V2,...",
              help="A key and its values: a list (JSON each, else text), or A:B:N for N values from A to B "
                   "(A:B:N:log on a log scale). Repeat for a grid of every combination. --keys lists the keys.")
@click.option("--trials", metavar="N", type=click.IntRange(min=1, max=MAX_TRIALS),
              help="Trials a setting, seeds 0..N-1 in every setting (default: the row's; 10 for a spec).")
@MAX_STEPS_OPTION
@click.option("--out", metavar="DIR", type=click.Path(file_okay=False, path_type=Path),
              help="The sweep's folder (default runs/sweep/NAME); rerun to resume.")
@running_options(
    lanes_help="A setting's trials side by side in one block of lanes (the same results; more CPU on every row "
               "measured, docs/performance.md in the lstmgraph source).",
    device_help="cuda: every setting's trials at once on this machine's GPU, the settings of one net in one "
                "population (docs/gpu.md in the lstmgraph source).")
@click.option("--no-own-setting", is_flag=True,
              help="Do not add the subject's own setting when the grid lacks it (no paired tests then).")
@click.option("--status", "show_status", is_flag=True, help="Run nothing: say what the folder holds per setting.")
@click.option("--keys", "show_keys", is_flag=True, help="List the keys this subject takes, with their values now.")
@click.option("--json", "as_json", is_flag=True, help="Print sweep.json (or the status, or the keys) as JSON.")
@UNTIL_SETTLED_OPTION
def sweep(subject: str, varied: tuple[str, ...], trials: int | None, max_steps: int | None, out: Path | None,
          jobs: int, cluster: str | None, checkpoint_seconds: float, lanes: int, no_own_setting: bool,
          log_every: float, show_status: bool, show_keys: bool, as_json: bool, device: str,
          until_settled: bool) -> None:
    """Vary EXPERIMENT_OR_SPEC's settings over a grid and run every setting as a row.

    EXPERIMENT_OR_SPEC is a catalogue row (`lstmgraph reproduce --list`) or your own spec (a file
    or a bundled spec's name) with a training task or a training data file (its sequences drawn at
    random). Every setting runs the same seeds, so the
    settings are compared trial by trial. Writes DIR/settings/INDEX (a results folder per
    setting), DIR/sweep.json, DIR/sweep.csv and DIR/sweep.png. Rerun the same command to resume."""
    check_cluster_option(cluster)
    from lstmgraph.experiments.folder import ResultsConflict, ResultsFolder
    from lstmgraph.experiments.run_checks import beyond_note, cap_note
    from lstmgraph.experiments.status import FolderError
    from lstmgraph.experiments.sweep import compared_with_nothing, grid, judged_by, subject_of
    from lstmgraph.experiments.sweep_values import SweepError, parse_vary
    from lstmgraph.experiments.sweep_report import CSV, FIGURE, JSON
    from lstmgraph.experiments.sweep_run import run_sweep, sweep_status

    try:
        chosen = subject_of(subject, trials)
        if show_keys:
            _keys(chosen.experiment, as_json)
            return
        if not varied:
            fail("name at least one --vary KEY=V1,V2,... (--keys lists the keys)")
        parsed = [parse_vary(argument) for argument in varied]
        settings = grid(chosen.experiment, parsed, add_own=not no_own_setting)
    except SpecError as error:
        report_spec_error_from(error, subject)
    except SweepError as error:
        fail(str(error))
    row = chosen.experiment
    count = trials or row.trials
    out = out or default_out("sweep", row.name)
    if show_status:
        try:
            status = sweep_status(settings, count, out, max_steps, row)
        except BrokenPipeError:  # a reader closed stdout (| head): click exits 1, quietly
            raise
        except SweepError as error:
            fail(str(error))
        except (FolderError, ResultsConflict, OSError) as error:
            fail(error_text(error))
        _print_status(status, as_json)
        return

    def print_plan() -> None:  # once every setting is checked: a refused sweep prints only its error
        where = where_trials_run(device, cluster, jobs, "every setting's trials at once")
        click.echo(f"{row.name} ({chosen.kind}): {counted(len(settings), 'setting')} x {counted(count, 'trial')} "
                   f"on {where} -> {out}")
        click.echo(f"judged by {judged_by(chosen, settings)[0]}")
        lines = []
        for setting in settings:
            note = (" (the subject's own, added as the paired tests' reference; --no-own-setting leaves it out)"
                    if setting.added else " (the own setting: the paired tests' reference)"
                    if setting.own and len(settings) > 1 else "")  # (one setting: nothing to pair it with)
            lines.append(f"setting {setting.index}: {setting.label()}{note} -> {out / setting.folder}")
        for line in shortened(lines, "settings: sweep --status --json lists them all"):
            click.echo(line)
        for note in (compared_with_nothing(row, settings), chosen.length_note(max_steps)):
            if note:
                click.echo(f"note: {note}", err=True)
        capped = [f"note: setting {setting.index}: {note}" for setting in settings
                  if (note := cap_note(setting.experiment, max_steps))]
        for line in shortened(capped, "settings so capped"):
            click.echo(line, err=True)
        beyond = [f"note: {note}" for setting in settings
                  if (note := beyond_note(setting.experiment, count, out / setting.folder))]
        for line in shortened(beyond, "settings so"):
            click.echo(line, err=True)
        note_first_compile(device, cluster, chosen.experiment, count, max_steps)

    def interrupted(stop: BaseException) -> str:
        return (f"finished trials are kept in {out}/{SWEEP_FOLDER.member('*')}/{ResultsFolder.ROWS} and {JSON} has every "
                "setting's so far, running trials their checkpoints; run the same command to resume")

    begun: list = []
    with run_errors(device, begun, interrupted):
        try:
            with trial_progress(count * len(settings), as_json, log_every,
                                lambda found: f"setting {found[0].index}, {trial_line(found[1], row.protocol.counted)}",
                                print_plan) as (begin, trial_done, progress):
                document = run_sweep(chosen, settings, count, jobs, out, max_steps, cluster, checkpoint_seconds,
                                     lanes, lambda setting, row_done: trial_done((setting, row_done)), progress,
                                     device=device, until_settled=until_settled,
                                     checks_passed=lambda: begun.append(begin()))
        except SweepError as error:
            fail(str(error))
    if as_json:
        click.echo(json.dumps(document, indent=2, sort_keys=True))
        return
    from lstmgraph.experiments.sweep_report import table_lines

    click.echo("")
    for line in table_lines(document):
        click.echo(f"  {line}")
    click.echo("p solved: McNemar's exact test against the own setting, on the seeds solved in one and not the other; "
               f"p speed: Wilcoxon's signed-rank test on the {document['unit']} to success of the seeds solved in both")
    if max_steps:
        beside = " beside the published one" if document.get("published_rate_percent") is not None else ""
        click.echo(f"each trial capped at {max_steps:,} training steps (--max-steps): a rate{beside} is a quick look, "
                   "no verdict")
    click.echo(f"wrote {out / JSON}, {out / CSV} and {out / FIGURE}")


def _keys(experiment, as_json: bool) -> None:
    from lstmgraph.experiments.sweep_keys import KEYS, resolve, row_keys

    listed = {}
    for typed in row_keys(experiment):
        _, key, name = resolve(experiment, typed)
        listed[typed] = key.current(experiment, name)
    if as_json:
        click.echo(json.dumps(listed, indent=2))
        return
    for typed, value in listed.items():  # (None: no single value, e.g. weights drawn at random)
        click.echo(f"  {typed} = {'unset' if value is None else json.dumps(value)}")
    click.echo("values: " + "; ".join(f"{key.name}: {key.takes}" for key in KEYS.values() if key.applies(experiment)))


def _print_status(status: dict, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(status, indent=2))
        return
    click.echo(f"{status['out']}: {status['finished']} of {counted(status['total'], 'trial')} finished")
    if status["in_use_by"]:
        click.echo(f"in use by {status['in_use_by']}: a sweep is writing it now")
    lines, conflicts = [], []
    for entry in status["settings"]:
        label = ", ".join(f"{key}={json.dumps(value)}" for key, value in entry["values"].items())
        line = (f"  setting {entry['index']} ({label}): {entry['finished']} finished, {entry['checkpointed']} "
                f"checkpointed, {entry['waiting']} not started")
        if entry["conflict"]:
            conflicts.append(line + f"; this command would not run there: {entry['conflict']}")
        else:
            lines.append(line)
    for line in shortened(lines, "settings: sweep --status --json lists them all") + conflicts:
        click.echo(line)
    click.echo(f"this command would not run there: {counted(len(conflicts), 'setting')} (above) "
               f"hold{'s' if len(conflicts) == 1 else ''} trials of other settings" if conflicts else
               ALL_FINISHED if status["all_finished"] else "this command resumes it")


#: Settings a sweep lists one per line; a longer list shows its first and last few.
LISTED = 20


def shortened(lines: list[str], where: str) -> list[str]:
    """``lines`` (one per setting), or their first 10 and last 5 with a line saying how many
    are left out and ``where`` they all are: a 1,000-setting sweep prints 16 lines, not 1,000."""
    if len(lines) <= LISTED:
        return lines
    return lines[:10] + [f"  ... {len(lines) - 15} more {where}"] + lines[-5:]
