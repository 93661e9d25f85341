"""Run a sweep: every setting of the grid as a row, through `schedule.run_checked` (`run_experiments`'
run once its checks have passed).

The sweep's folder ``DIR`` holds one results folder per setting, ``DIR/settings/INDEX`` (with
everything `reproduce` gives a row: the same seeds 0..N-1 for every setting, checkpoints,
resume after a kill, Dask workers), and the sweep's own files, written at the end and, for the
settings finished so far, at a stop: ``sweep.json`` (`sweep_report.sweep_document`, written
deterministically), ``sweep.csv`` and ``sweep.png``. ``DIR/.lock`` keeps a second sweep off
the folder while one runs; every setting's folder is checked against its settings before any
trial runs, so a sweep that would mix settings is refused with the folder as it was, and so is
a folder of files without sweep.json or settings/ (no sweep wrote it). No link is followed below
``DIR``: ``settings`` or a setting's folder that is one is refused, its files never written through.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from ..errors import SpecError
from ..files import BUNDLED_SPECS, make_folder, write_atomically
from ..layouts import SWEEP_FOLDER
from ..limits import LimitError
from .folder import ResultsConflict, ResultsFolder, check_written_by, locked_folder
from .folder_settings import settings
from .run_checks import check_run_device, check_run_settings
from .schedule import CHECKPOINT_SECONDS, run_checked
from .stops import Stopped, stops_deferred
from .sweep_keys import invalid_alone
from .status import FolderError, OtherExperiment, folder_status
from .experiment import Experiment
from .sweep import Setting, Subject, judged_by, varied_values
from .sweep_values import SweepError
from .sweep_report import CSV, FIGURE, JSON, csv_text, document_bytes, rate_label, sweep_document, sweep_figure
from .workers import connected


def head(subject: Subject, grid: list[Setting], trials: int, budget_steps: int | None) -> dict[str, Any]:
    """What sweep.json says of the sweep as a whole."""
    row = subject.experiment
    protocol = row.protocol
    published = row.published.get(protocol.rate_key)
    words, described = judged_by(subject, grid)
    return {"subject": {"name": row.name, "kind": subject.kind, "judged_by": words,
                        "protocol": described, "published": row.published},
            "keys": varied_values(grid), "trials": trials, "budget_steps": budget_steps, "unit": protocol.counted,
            "rate_label": rate_label(protocol.counted),
            "published_rate_percent": published if isinstance(published, (int, float)) else None}


def _listed(setting: Setting) -> dict[str, Any]:
    return {"index": setting.index, "values": setting.values, "folder": setting.folder, "own": setting.own,
            "added": setting.added, "experiment": setting.experiment.name}


@contextmanager
def sweep_locked(out: Path) -> Iterator[None]:
    """``out/.lock`` held while the block runs; `ResultsConflict` names a sweep holding it, or
    a folder of files no sweep wrote (`folder.check_written_by`)."""
    made = make_folder(out)
    with locked_folder(out, "sweep", made):
        check_written_by(out, "", SWEEP_FOLDER.marks, "sweep")
        yield


def setting_folder(out: Path, setting: Setting) -> ResultsFolder:
    """The results folder of ``setting``, reached from ``out`` without following a link."""
    return ResultsFolder(out / setting.folder, within=out)


def check_plans(grid: list[Setting], subject: Experiment | None = None, device: str = "cpu",
                cluster: Any = None) -> None:
    """`SweepError` naming a setting whose net does not compile, that the compiled engine
    cannot train, or whose program is over a limit, before any folder is made or worker
    started, and ``device`` for it (`check_run_device`): each setting's plan compiled once and
    its program lowered once, as `run_sweep` runs the settings without checking them again
    (`schedule.run_checked`). Where ``subject`` compiles and a setting changed it does not, the
    setting's values are named, not the file's lines."""
    from ..training.engines import EngineError, check_program, select_engine

    checked: set[str] = set()
    for setting in grid:
        named = f"setting {setting.index} ({setting.label() or 'as the subject'})"
        try:
            plan = setting.experiment.plan()
            check_run_device(setting.experiment, plan, device, cluster)
            select_engine(plan, plan.training, "compiled")
            check_program(plan, checked)
        except SpecError as error:
            if subject is not None and setting.changes(subject):
                try:
                    subject.plan()
                except SpecError as own:  # the file itself is not valid: its lines say where
                    raise SweepError(f"the spec is not valid: {own.format()}") from None
                # The file is valid: the --vary values broke the net, so the file's lines would
                # point at entries they changed. The fields, without the file's places.
                alone = invalid_alone(subject, setting.values)
                one = len(alone) == 1
                hint = (f"\n{' and '.join(alone)} alone make{'s' if one else ''} the net invalid: does the net have "
                        f"what {'it adds' if one else 'they add'} already?" if alone else "")
                raise SweepError(f"{named}: these values make the net invalid (the spec itself is valid):\n"
                                 f"{SpecError(error.problems).format()}{hint}") from None
            raise SweepError(f"{named}: the net is not valid: {error.format()}") from None
        except (EngineError, LimitError) as error:  # LimitError: a program over a limit (exact RTRL's traces)
            raise SweepError(f"{named}: {error}") from None


def check_sweep(subject: Subject, grid: list[Setting], trials: int, budget_steps: int | None = None,
                checkpoint_seconds: float = CHECKPOINT_SECONDS, lanes: int = 1, device: str = "cpu",
                cluster: Any = None, out: Path | None = None) -> None:
    """What `run_sweep` checks before it writes anything but the folders: the counts, the device
    and every setting's net (`check_plans`); with ``out``, the settings' folders there
    (`check_folders`, read only), before `run_sweep` calls its ``checks_passed``. `SweepError`
    for an empty grid, or one made of another subject (`sweep.grid` of ``subject.experiment``)."""
    if not grid:
        raise SweepError("the grid holds no setting: make it with grid(subject.experiment, {KEY: [VALUES]})")
    name = subject.experiment.name
    for setting in grid:
        if setting.experiment.name != name and not setting.experiment.name.startswith(f"{name} ["):
            raise SweepError(f"setting {setting.index} ({setting.experiment.name}) is not of the subject {name}: "
                             "make the grid with grid(subject.experiment, ...) of this subject")
    check_run_settings(trials, budget_steps, checkpoint_seconds, lanes)
    check_plans(grid, subject.experiment, device, cluster)
    if out is not None:
        check_folders(grid, Path(out), budget_steps, device)


def check_folders(grid: list[Setting], out: Path, budget_steps: int | None, device: str = "cpu") -> None:
    """`ResultsConflict` for a setting's folder holding trials of other settings, or of another
    device, or reached through a link (nothing written)."""
    for setting in grid:
        folder = setting_folder(out, setting)
        if folder.reach():
            folder.check_settings(settings(setting.experiment, budget_steps, BUNDLED_SPECS, device),
                                  setting.experiment.name)


def write_outputs(out: Path, document: dict[str, Any]) -> None:
    write_atomically(out / JSON, document_bytes(document))
    write_atomically(out / CSV, csv_text(document).encode())
    write_atomically(out / FIGURE, sweep_figure(document))


class SweepStopped(KeyboardInterrupt):
    """A stop signal ended the sweep; what had finished, in every setting, is in sweep.json."""

    def __init__(self, signal_number: int):
        super().__init__(signal_number)
        self.signal_number = signal_number


def run_sweep(subject: Subject, grid: list[Setting], trials: int, jobs: int,
              out: str | Path, budget_steps: int | None = None, cluster: Any = None,
              checkpoint_seconds: float = CHECKPOINT_SECONDS, lanes: int = 1,
              trial_done: Callable[[Setting, dict[str, Any]], None] = lambda setting, row: None,
              progress: Any = None, device: str = "cpu", until_settled: bool = False,
              checks_passed: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """Run every setting of ``grid`` (`sweep.grid`) for seeds 0..trials-1 into ``out`` and return
    sweep.json's content. The settings' trials share the workers (`schedule.run_experiments`),
    taken setting by setting, so no worker waits while another setting's trial runs on. Each
    setting is checked (its plan compiled) and each setting's folder against its settings
    before anything is written. ``device`` ``cuda``: every setting's trials at once on the
    GPU, the settings of one net and protocol in one population. ``until_settled``: a setting
    starts no trial once its verdict against the subject's published figures is settled.
    ``checks_passed()``: called once every check has passed, before anything is written (the
    CLI prints the sweep's plan there)."""
    out = Path(out)
    check_sweep(subject, grid, trials, budget_steps, checkpoint_seconds, lanes, device, cluster, out)
    checks_passed()
    with connected(cluster) as workers:  # a scheduler not reached: refused before a folder is made
        document_head = head(subject, grid, trials, budget_steps)
        listed = [_listed(setting) for setting in grid]
        with sweep_locked(out):
            check_folders(grid, out, budget_steps, device)
            targets = [(setting.experiment, setting_folder(out, setting)) for setting in grid]
            try:
                results = run_checked(targets, trials, jobs, budget_steps, BUNDLED_SPECS,
                                      lambda index, row: trial_done(grid[index], row), progress, workers,
                                      checkpoint_seconds, lanes, device, [f"setting {s.index}" for s in grid],
                                      until_settled)
            except Stopped as stop:  # every setting's trials finished so far
                with stops_deferred(drop=True):  # a second stop signal: stopping already, the files written whole
                    write_outputs(out, sweep_document(document_head, listed, _rows(grid, stop.results)))
                raise SweepStopped(stop.signal_number) from None
            try:
                with stops_deferred():  # a stop signal now: the files written whole, then the stop
                    document = sweep_document(document_head, listed, _rows(grid, results))
                    write_outputs(out, document)
            except Stopped as stop:  # every trial had finished: sweep.json is whole
                raise SweepStopped(stop.signal_number) from None
        return document


def _rows(grid: list[Setting], results: list[dict[str, Any] | None] | None) -> dict[int, list[dict[str, Any]]]:
    """Each setting's finished trials' rows, by its index."""
    results = results or [None] * len(grid)
    return {setting.index: (found or {}).get("trials", []) for setting, found in zip(grid, results)}


@dataclass(frozen=True)
class SettingStatus:
    index: int
    values: dict[str, Any]
    finished: int
    checkpointed: int
    waiting: int
    conflict: str | None


def sweep_status(grid: list[Setting], trials: int, out: str | Path, budget_steps: int | None = None,
                 subject: Experiment | None = None) -> dict[str, Any]:
    """What ``out`` holds for this sweep, read only: per setting its trials finished,
    checkpointed and not started, and whether the same command resumes it; who holds the lock.
    `SweepError` for a setting whose net the sweep would refuse (`check_plans`, ``subject`` the
    sweep's); `ResultsConflict` for a folder of files no sweep wrote, which it would refuse too."""
    check_plans(grid, subject)
    out = Path(out)
    if not out.is_dir():
        raise FolderError(f"{out}: no such folder; no sweep has run there")
    check_written_by(out, "", SWEEP_FOLDER.marks, "sweep")
    listed = []
    for setting in grid:
        path = out / setting.folder
        setting_folder(out, setting).reach()  # (`ResultsConflict` for a link: nothing read through it)
        try:
            status = folder_status(setting.experiment, trials, path, budget_steps, BUNDLED_SPECS)
        except FolderError:  # nothing run there: unless it holds files no run wrote, which the sweep refuses
            try:
                check_folders([setting], out, budget_steps)
                conflict = None
            except ResultsConflict as refused:
                conflict = str(refused)
            listed.append(SettingStatus(setting.index, setting.values, 0, 0, trials, conflict))
            continue
        except OtherExperiment:  # another setting's trials: this one's none
            listed.append(SettingStatus(setting.index, setting.values, 0, 0, trials,
                                        f"{path} holds another setting's trials (a sweep numbers its settings in the "
                                        "order of its --vary values: give them in the order of the run that made the "
                                        "folder, or another --out)"))
            continue
        listed.append(SettingStatus(setting.index, setting.values, len(status.results["trials"]),
                                    len(status.checkpointed), len(status.waiting), status.conflict))
    holder = ResultsFolder(out).holder()
    return {"out": str(out), "trials": trials, "in_use_by": holder,
            "settings": [vars(entry) for entry in listed],
            "finished": sum(entry.finished for entry in listed), "total": trials * len(grid),
            "all_finished": not any(entry.checkpointed or entry.waiting for entry in listed)}
