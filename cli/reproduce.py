"""`lstmgraph reproduce`: run a table row of the papers and print our figures beside theirs."""

from __future__ import annotations

import json
from pathlib import Path

import click
import yaml

from lstmgraph.errors import SpecError
from lstmgraph.files import BUNDLED_SPECS, default_out
from lstmgraph.limits import MAX_TRIALS

from .common import (MAX_STEPS_OPTION, UNTIL_SETTLED_OPTION, counted, error_text, fail, note_first_compile,
                     report_spec_error_from)
from .trial_progress import trial_progress
from .trial_runs import (ALL_FINISHED, check_cluster_option, run_errors, running_options, trial_line,
                         where_trials_run)


def _list(as_json: bool, chosen=None) -> None:
    """Every experiment in a few lines each, or only ``chosen`` (as the options given change it)
    with its protocol."""
    from lstmgraph.experiments import EXPERIMENTS
    from lstmgraph.experiments.results_table import measured_cost

    listed = [chosen] if chosen is not None else list(EXPERIMENTS.values())
    if as_json:
        click.echo(json.dumps([experiment.describe() for experiment in listed], indent=2))
        return
    for experiment in listed:
        published = ", ".join(f"{key.replace('_', ' ')} {value:,}" if isinstance(value, (int, float))
                              else f"{key.replace('_', ' ')}: {value}"
                              for key, value in experiment.published.items())
        click.echo(f"{experiment.name}")
        click.echo(f"    {experiment.paper}, {experiment.table}; {experiment.trials} trials; "
                   + ", ".join([f"spec {_spec_name(experiment.spec)}"]
                               + [variant.description for variant in experiment.variants]))
        click.echo(f"    task: {experiment.task}"
                   + "".join(f", {key} {value}" for key, value in experiment.task_options.items()))
        click.echo(f"    published: {published}")
        if chosen is not None:
            click.echo(f"    protocol: {experiment.protocol.describe()}")
            cost = measured_cost(experiment.name, Path.cwd())
            if cost:
                click.echo(f"    the committed run of the row: {cost}")
        if experiment.note:
            click.echo(f"    note: {experiment.note}")


def _spec_name(name: str) -> str:
    """A bundled spec as `train` and the other commands take it after pip install: its name
    (`bundled.argument_for`)."""
    from lstmgraph.bundled import argument_for

    try:
        return argument_for(name)
    except ValueError:  # not bundled (a spec of --specs): its name all the same
        return name


def _options(flag: str, example: str, pairs: tuple[str, ...]) -> dict:
    """``flag``'s KEY=VALUE pairs as a dict (`parse_option`)."""
    from lstmgraph.experiments.sweep_values import SweepError, parse_option

    try:
        parsed = [parse_option(pair, flag, example) for pair in pairs]
    except SweepError as error:
        fail(str(error))
    keys = [key for key, _ in parsed]
    again = sorted({key for key in keys if keys.count(key) > 1})
    if again:  # (before: the last one was taken without a word)
        fail(f"{flag} {again[0]} is given {keys.count(again[0])} times: give each option once")
    return dict(parsed)


@click.command(short_help="Run a table row of the papers; compare with their figures.")
@click.argument("experiment", required=False)
@click.option("--list", "show_list", is_flag=True,
              help="Name every experiment with its paper, table and figures; with EXPERIMENT, that one and its "
                   "protocol.")
@click.option("--print-spec", is_flag=True,
              help="Print EXPERIMENT's network as it runs (the bundled spec with the row's changes, task, rate "
                   "and momentum) as YAML, to copy and change, and run nothing.")
@click.option("--trials", metavar="N", type=click.IntRange(min=1, max=MAX_TRIALS),
              help=f"Number of trials, at most {MAX_TRIALS:,} (default: the paper's).")
@running_options(
    lanes_help="Trials side by side in one block of lanes per worker, the same results (more than 1 costs more "
               "CPU on every row measured: docs/performance.md in the lstmgraph source).",
    device_help="cuda: every trial at once on this machine's GPU (docs/gpu.md in the lstmgraph source).")
@click.option("--out", metavar="DIR", type=click.Path(file_okay=False, path_type=Path),
              help="Results folder (default runs/reproduce/EXPERIMENT); rerun to resume.")
@MAX_STEPS_OPTION
@click.option("--status", "show_status", is_flag=True,
              help="Run nothing: say what the results folder holds (the finished trials' figures so far, "
                   "each checkpointed trial's place, the trials not started) and whether this command "
                   "would resume it.")
@click.option("--json", "as_json", is_flag=True, help="Print the results with their verdict (or the list, or the status) as JSON.")
@click.option("--specs", metavar="DIR", type=click.Path(file_okay=False, exists=True, path_type=Path),
              default=BUNDLED_SPECS, show_default=True, help="Folder holding the bundled specs.")
@click.option("--task-option", "task_options", multiple=True, metavar="KEY=VALUE",
              help="Set one of the task's options otherwise (repeatable; VALUE read as JSON, else as "
                   "text; null unsets it, the task's default), e.g. cue=delay or idle_target=null: a "
                   "coding the papers leave open, tried against the row's published figures.")
@click.option("--protocol-option", "protocol_options", multiple=True, metavar="KEY=VALUE",
              help="Set one of the protocol's settings otherwise (repeatable; VALUE read as JSON, else "
                   "as text), e.g. success=most_active: a stream judged by its most active output unit "
                   "rather than within the tolerance.")
@UNTIL_SETTLED_OPTION
def reproduce(experiment: str | None, show_list: bool, print_spec: bool, trials: int | None, jobs: int,
              cluster: str | None, checkpoint_seconds: float, lanes: int, out: Path | None, max_steps: int | None,
              log_every: float, show_status: bool, as_json: bool, specs: Path, task_options: tuple[str, ...],
              protocol_options: tuple[str, ...], device: str, until_settled: bool) -> None:
    """Run EXPERIMENT (a table row of the 1997, 2000 or 2002 paper) and compare with the paper.

    Trials run in worker processes (or on a Dask cluster's workers), checkpointed as they go;
    the table shows our success rate and the mean and standard deviation of sequences (or
    training streams) to success next to the published figures. Results are written as JSON,
    CSV and a PNG figure to the results folder, each trial's trained network to
    OUT/trials/SEED/ (for plot and evaluate). Rerun the same command to resume."""
    check_cluster_option(cluster)
    # Imported here: the experiments import numba, which the other commands do without.
    from lstmgraph.experiments import find_experiment
    from lstmgraph.experiments.folder import ResultsFolder
    from lstmgraph.experiments.protocols import ProtocolError
    from lstmgraph.experiments.reference import with_reference
    from lstmgraph.experiments.results_table import measured_cost
    from lstmgraph.experiments.run_checks import beyond_note, cap_note
    from lstmgraph.experiments.schedule import run_experiment
    from lstmgraph.experiments.summary import comparison, no_verdict_reason, verdict_words
    from lstmgraph.experiments.sweep import row_protocol_note
    from lstmgraph.experiments.verdict import judge, trials_left_note, verdict
    from lstmgraph.tasks import TaskError

    if show_list and not experiment:
        for option, given in (("--task-option", task_options), ("--protocol-option", protocol_options)):
            if given:
                fail(f"{option} changes one experiment: name it, e.g. lstmgraph reproduce EXPERIMENT --list "
                     f"{option} {given[0]}")
        _list(as_json)
        return
    if not experiment:
        fail("name an experiment, or use --list to see them")
    try:
        chosen = find_experiment(experiment)
    except KeyError as error:
        fail(error.args[0])
    given_task: dict = {}
    if task_options:
        try:
            given_task = _options("--task-option", "idle_target=0", task_options)
            chosen = chosen.with_task_options(given_task)
        except TaskError as error:
            fail(f"--task-option: {error}")
    if protocol_options:
        try:
            given = _options("--protocol-option", "success=most_active", protocol_options)
            chosen = chosen.with_protocol_options(given)
            chosen.protocol.check_read(given)
        except ProtocolError as error:
            fail(f"--protocol-option: {error}")
    if show_list:
        _list(as_json, chosen)
        return
    if print_spec:
        try:
            data = chosen.printed_spec(specs)
        except SpecError as error:
            report_spec_error_from(error, specs)
        click.echo("\n".join(row_protocol_note(chosen)))
        click.echo(yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100), nl=False)
        return
    count = trials or chosen.trials
    out = out or default_out("reproduce", chosen.name)
    if show_status:
        _status(chosen, count, out, max_steps, specs, as_json)
        return

    def print_plan() -> None:  # once the run's checks pass: a refused run prints only its error
        where = where_trials_run(device, cluster, jobs, "all at once")
        click.echo(f"{chosen.name}: {chosen.paper}, {chosen.table}; {counted(count, 'trial')} on {where} -> {out}")
        click.echo(f"protocol: {chosen.protocol.describe()}")
        cost = measured_cost(chosen.name, Path.cwd()) if not (given_task or protocol_options) else None
        if cost and specs == BUNDLED_SPECS:
            click.echo(f"the committed run of the row: {cost}")
        if specs != BUNDLED_SPECS:
            click.echo(f"spec: {chosen.spec_path(specs)} (set with --specs: not the bundled one)")
        if given_task:
            row = find_experiment(chosen.name).task_options
            click.echo("task options: " + ", ".join(
                f"{key} {json.dumps(value)}" + (" (the row's own)" if row.get(key) == value else "")
                for key, value in given_task.items()) + " (set with --task-option)")
        if protocol_options:
            click.echo("protocol settings: " + ", ".join(f"{key} {json.dumps(value)}"
                                                         for key, value in chosen.protocol_options.items())
                       + " (set with --protocol-option: not the row's)")
        for note in (cap_note(chosen, max_steps), beyond_note(chosen, count, out)):
            if note:
                click.echo(f"note: {note}", err=True)
        note_first_compile(device, cluster, chosen, count, max_steps, specs)

    def interrupted(stop: BaseException) -> str:
        folder = ResultsFolder(out)
        summarised = (f" and summarised so far in {folder.RESULTS}, {folder.CSV} and {folder.FIGURE}"
                      if getattr(stop, "results", None) else "")
        return (f"finished trials are kept in {folder.file(folder.ROWS)}{summarised}, running ones in their "
                "checkpoints; run the same command to resume")

    begun: list = []
    with run_errors(device, begun, interrupted):
        try:
            with trial_progress(count, as_json, log_every, lambda row: trial_line(row, chosen.protocol.counted),
                                print_plan) as (begin, trial_done, progress):
                results = run_experiment(chosen, count, jobs, out, max_steps, specs, trial_done, progress, cluster,
                                         checkpoint_seconds, lanes, device, until_settled,
                                         checks_passed=lambda: begun.append(begin()))
            judged = with_reference(results, out, chosen.published)  # (the row a published ratio names)
        except SpecError as error:
            report_spec_error_from(error, specs)
    reason = no_verdict_reason(results, count)
    if as_json:  # results.json's content, with the verdict the table would print
        click.echo(json.dumps({**results, "verdict": verdict_words(judged, count)}, indent=2))
        return
    click.echo("")
    _table(comparison(judged, count))
    finished = results["summary"]["trials"]
    if until_settled and finished < count:
        click.echo(f"settled at {finished:,} of {count:,} trials: {verdict(judge(judged))}, "
                   f"{trials_left_note(judged, count - finished)} (--until-settled; without it the same command "
                   "runs them)")
    elif reason:
        click.echo(f"{reason}: no verdict (a verdict needs the paper's {chosen.trials:,} trials, none stopped by a cap)")
    folder = ResultsFolder(out)
    click.echo(f"wrote {folder.file(folder.RESULTS)}, {folder.file(folder.CSV)} and {folder.file(folder.FIGURE)}")


def _status(chosen, count: int, out: Path, max_steps: int | None, specs: Path, as_json: bool) -> None:
    """Print what ``out`` holds for this command (`experiments.status`)."""
    from lstmgraph.experiments.folder import ResultsConflict
    from lstmgraph.experiments.status import FolderError, folder_status, seed_ranges
    from lstmgraph.experiments.summary import comparison

    try:
        status = folder_status(chosen, count, out, max_steps, specs)
    except SpecError as error:
        report_spec_error_from(error, specs)
    except BrokenPipeError:  # a reader closed stdout (| head): click exits 1, quietly
        raise
    except (FolderError, ResultsConflict, OSError) as error:
        fail(error_text(error))
    if as_json:
        click.echo(json.dumps(status.as_dict(), indent=2))
        return
    finished = status.results["trials"]
    click.echo(f"{chosen.name} in {out}: {len(finished)} of {counted(count, 'trial')} finished, "
               f"{len(status.checkpointed)} checkpointed, {len(status.waiting)} not started")
    if status.holder:
        click.echo(f"in use by {status.holder}: a run is writing it now")
    click.echo(f"this command would not run there: {status.conflict}" if status.conflict is not None else
               ALL_FINISHED if status.all_finished else "this command resumes it")
    if finished:
        _table(comparison(status.results, count), "the finished trials")
    click.echo(f"verdict: {status.verdict_so_far}")
    if status.checkpointed:
        click.echo("checkpointed (resume from there):")
        for trial in status.checkpointed:
            click.echo(f"  trial {trial.seed}: {trial.presented:,} of {status.limit:,} {chosen.protocol.counted}, "
                       f"{trial.steps:,} training steps, {trial.seconds:,.1f} s of CPU")
    if status.waiting:
        click.echo(f"not started: trial{'s' if len(status.waiting) > 1 else ''} {seed_ranges(status.waiting)}")


def _table(rows: list[tuple[str, str, str]], heading: str = "") -> None:
    """(figure, ours, published) rows as `reproduce` prints them."""
    width = max(len(row[0]) for row in rows + [(heading, "", "")])
    click.echo(f"  {heading:<{width}}  {'lstmgraph':>14}  {'published':>14}")
    for label, ours, theirs in rows:
        click.echo(f"  {label:<{width}}  {ours:>14}  {theirs:>14}")
