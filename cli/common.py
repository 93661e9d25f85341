"""Helpers shared by the commands: compiling a spec with user errors turned into exit code 2.

A SPEC argument is a file, or a bundled spec's name (`lstmgraph.load_spec` resolves it with
`lstmgraph.bundled.find_spec`): every command that compiles one through `compile_or_exit` takes
``lstmgraph train gers2000_cerg``, and a folder of that name does not hide it.
"""

from __future__ import annotations

import errno
import json
import sys
from pathlib import Path

import click

from lstmgraph import Overrides, compile_spec
from lstmgraph.bundled import SpecNotFound
from lstmgraph.errors import SpecError, SpecFileError
from lstmgraph.files import BUNDLED_SPECS, NO_ROOM, TOO_LONG, OutputError
from lstmgraph.limits import LIMITS_HINT, MAX_STEPS
from lstmgraph.plan import Plan

from .entry import exit_interrupted

#: A spec file, or a bundled spec's name (resolved by `compile_or_exit`).
SPEC_ARGUMENT = click.argument("spec", type=click.Path(path_type=Path))
#: `reproduce` and `sweep`: a cap on each trial's steps.
MAX_STEPS_OPTION = click.option(
    "--max-steps", metavar="N", type=click.IntRange(min=1, max=MAX_STEPS),
    help="Cap each trial's training steps, checked between training sequences or streams, so a trial may pass "
         "it by one (a quick look; the paper's limits otherwise).")
#: `reproduce` and `sweep`: stop a run (each setting) once its verdict is settled.
UNTIL_SETTLED_OPTION = click.option(
    "--until-settled", is_flag=True,
    help="Start no more trials of a row (or setting) once no outcome of those not run can change its verdict "
         "against the published figures: a tested change ruled out, or reproduced, early "
         "(docs/results.md in the lstmgraph source). The same command without it runs the rest.")


class Commands(click.Group):
    """The command group: any command that cannot write a file (read-only or full disk, a file
    where a folder should be) or its standard output (a full disk), or runs out of memory, ends
    with a message and exit code 2. Ctrl-C ends any command with "interrupted" and exit code
    130 (`reproduce`, `sweep` and `train` say first how to resume), not click's "Aborted!" and 1."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            exit_interrupted()
        except OutputError as error:
            fail(str(error))
        except MemoryError as error:
            fail(str(error) or f"not enough memory for this network ({LIMITS_HINT})")
        except OSError as error:
            if error.errno == errno.ENAMETOOLONG:  # (Path.exists raises it, wherever a command asks)
                fail(error_text(error))
            if error.errno not in NO_ROOM:  # (the library names its own files: `OutputError`)
                raise
            fail(error_text(error))


def error_text(error: Exception) -> str:
    """What an error message says of ``error``: a path too long for the file system named as
    such, with what to do (Path.exists raises ENAMETOOLONG rather than answer); a write that
    found no room and names no file (the library names its own: `OutputError`) as the standard
    output's, for a command that catches it before the command group does (`Commands`)."""
    if isinstance(error, OSError) and not isinstance(error, OutputError):
        if error.errno == errno.ENAMETOOLONG:
            return f"{error.filename if error.filename is not None else error}: {TOO_LONG}"
        if error.errno in NO_ROOM and error.filename is None:
            return f"cannot write the standard output: {error.strerror} (redirected to a full disk?)"
    return str(error)


def resumable_error_text(error: Exception) -> str:
    """`error_text` of what stopped `reproduce` or `sweep`, with what to do where a file could
    not be written (a full or read-only disk): the same command again resumes."""
    text = error_text(error)
    if isinstance(error, OutputError):
        text += ("; once it can be written, run the same command again: it resumes, keeping the trials finished "
                 "and checkpointed")
    return text


def note_first_compile(device: str, cluster: str | None, experiment, trials: int, max_steps: int | None,
                       specs: Path = BUNDLED_SPECS) -> None:
    """Where ``trials`` trials of ``experiment`` run on this machine's CPU, the once-per-installation
    compilation the first waits for (`run_checks.compile_note`: its kernel, its protocol's
    driver), said on standard error before the wait."""
    if device == "cpu" and not cluster:
        from lstmgraph.experiments.folder_run import trials_kernel
        from lstmgraph.experiments.run_checks import compile_note  # numba: only here

        note = compile_note(experiment, trials_kernel(trials, max_steps), specs)
        if note:
            click.echo(f"note: {note}", err=True)


def counted(number: int, noun: str) -> str:
    """``number`` ``noun``s, e.g. "1 trial", "2 trials"."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def fail(message: str, code: int = 2) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def report_spec_error_from(error: SpecError, fallback: Path | str) -> None:
    """`report_spec_error` for an error met reading specs (a `--specs` folder's, a run's): it
    names the file the error came from, else ``fallback``."""
    report_spec_error(error.source.filename if error.source else fallback, error)


def report_spec_error(spec: Path | str, error: SpecError, as_json: bool = False) -> None:
    """Print a spec's problems and exit with code 2; ``as_json`` (only `validate --json`, whose
    report says whether a spec is valid) also prints them as JSON on standard output."""
    if as_json:
        click.echo(json.dumps({"valid": False, "errors": error.as_dicts()}, indent=2))
    if isinstance(error, SpecFileError):
        click.echo(f"error: {error.format()}", err=True)
        if isinstance(error, SpecNotFound):
            from lstmgraph.experiments import EXPERIMENTS

            if str(spec) in EXPERIMENTS:
                click.echo(f"  {spec} is a paper row: `lstmgraph reproduce {spec}` runs it under its protocol; "
                           f"`lstmgraph reproduce {spec} --print-spec` prints its net as a spec", err=True)
        sys.exit(2)
    click.echo(f"error: {error.headline(spec)}", err=True)
    click.echo(error.format(), err=True)
    sys.exit(2)


def compile_or_exit(spec: Path, as_json: bool = False, overrides: Overrides | None = None,
                    data_files: bool = True) -> Plan:
    """Find (a file, or a bundled spec's name: `lstmgraph.load_spec`), load, override
    (`lstmgraph.Overrides`), validate and compile a spec (``data_files``: `load_spec`'s); its
    problems, and a name that is neither (with the closest bundled specs' names), end the
    command with exit code 2."""
    try:
        return compile_spec(spec, overrides, data_files)
    except SpecError as error:
        report_spec_error(spec, error, as_json)
        raise AssertionError("unreachable")
