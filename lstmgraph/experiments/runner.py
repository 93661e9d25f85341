"""Run an experiment's trials in worker processes and summarise them beside the paper's figures.

Results go to an output folder: ``experiment.json`` (settings, the spec as run),
``trials.jsonl`` (one line per finished trial, appended as each ends, so a killed run resumes
where it stopped), ``trials/SEED/`` (each trial's final weights, a run directory for
`lstmgraph plot`), and ``results.json`` / ``trials.csv`` (written atomically at the end).
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import statistics
import threading
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import yaml

from ..engine.weights import save_weights
from ..files import BUNDLED_SPECS, OutputError, make_folder, write_atomically
from .catalogue import Experiment, find_experiment
from .network import OnlineNetwork
from .protocols import run_trial
from .verdict import verdict_rows

TrialDone = Callable[[dict[str, Any]], None]


class ResultsConflict(Exception):
    """The output folder holds trials run with other settings."""


def _ignore_interrupts() -> None:
    """Workers leave Ctrl-C to the parent, which stops them (no traceback per worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Hold Ctrl-C until the block ends, then raise it: a worker whose start is cut short reads
    half its start-up data and prints a traceback. The handler defers it in this process (any
    thread may receive the signal); the signal mask, which started workers inherit, keeps a
    terminal's Ctrl-C from reaching them before they ignore it."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread handles signals
        return
    caught: list[int] = []
    handler = signal.signal(signal.SIGINT, lambda number, frame: caught.append(number))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGINT, handler)
    if caught:
        raise KeyboardInterrupt


def _trial_in_worker(name: str, seed: int, budget_steps: int | None, specs: str, out: str) -> dict[str, Any]:
    experiment = find_experiment(name)
    plan = experiment.plan(Path(specs))
    rate, momentum = experiment.rates(plan)
    network = OnlineNetwork(plan, seed, rate, momentum)
    row = run_trial(network, experiment.make_task(), experiment.protocol, seed, budget_steps)
    row.setdefault("class", None)
    save_trial(Path(out) / "trials" / str(seed), experiment, Path(specs), network, row)
    return row


def save_trial(folder: Path, experiment: Experiment, specs: Path, network: OnlineNetwork,
               row: dict[str, Any]) -> None:
    """A trained trial as a run directory `lstmgraph plot` reads: ``spec.yaml`` (the network as
    run, with the experiment's rate and momentum), ``weights.npz`` (final weights) and
    ``summary.json`` (its result row)."""
    data, _ = experiment.spec_data(specs)
    data["training"]["learning_rate"], data["training"]["momentum"] = experiment.rates(network.plan)
    write_atomically(folder / "spec.yaml", yaml.safe_dump(data, sort_keys=False).encode())
    save_weights(folder / "weights.npz", network.plan, network.weights())
    write_atomically(folder / "summary.json", (json.dumps(row, indent=2) + "\n").encode())


def settings(experiment: Experiment, budget_steps: int | None, specs: Path) -> dict[str, Any]:
    data, _ = experiment.spec_data(specs)
    return {**experiment.describe(), "budget_steps": budget_steps, "spec_data": data}


def _read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = []
    for line in _read_text(path).splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            break  # a line cut by a kill: that trial runs again
        if not isinstance(row, dict) or type(row.get("seed")) is not int:
            raise ResultsConflict(f"{path}: a line is not a trial's row; delete the file to run "
                                  "the trials again, or choose another --out")
        rows.append(row)
    return rows


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ResultsConflict(f"{path}: cannot read it ({error}); delete it or choose another --out") from None


def _stored_settings(path: Path) -> Any:
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError:
        raise ResultsConflict(f"{path}: not JSON; delete it or choose another --out") from None


def run_experiment(experiment: Experiment, trials: int, jobs: int, out: Path, budget_steps: int | None = None,
                   specs: Path = BUNDLED_SPECS, trial_done: TrialDone = lambda row: None) -> dict[str, Any]:
    """Run trials with seeds 0..trials-1 (those already in ``out`` are kept) and summarise."""
    make_folder(out)
    wanted = settings(experiment, budget_steps, specs)
    settings_path = out / "experiment.json"
    if settings_path.exists() and _stored_settings(settings_path) != json.loads(json.dumps(wanted)):
        raise ResultsConflict(f"{out} holds trials of {experiment.name} run with other settings; "
                              f"choose another --out or delete it")
    write_atomically(settings_path, json.dumps(wanted, indent=2).encode())
    rows_path = out / "trials.jsonl"
    rows = [row for row in _read_rows(rows_path) if row["seed"] < trials]
    done = {row["seed"] for row in rows}
    write_atomically(rows_path, "".join(json.dumps(row) + "\n" for row in rows).encode())
    for row in rows:
        trial_done(row)
    todo = [seed for seed in range(trials) if seed not in done]
    if todo:
        plan = experiment.plan(specs)
        warm = OnlineNetwork(plan, 0, 0.0, 0.0)  # compile (or load) the interpreter once, before the workers
        warm.run(np.zeros((1, warm.n_inputs)), np.zeros((1, warm.n_outputs)), learn=False)
        pool = ProcessPoolExecutor(max_workers=max(1, min(jobs, len(todo))), mp_context=get_context("spawn"),
                                   initializer=_ignore_interrupts)
        try:
            with _interrupts_deferred():  # submitting starts the workers
                futures = [pool.submit(_trial_in_worker, experiment.name, seed, budget_steps, str(specs), str(out))
                           for seed in todo]
            for future in as_completed(futures):
                row = future.result()
                try:
                    with rows_path.open("a") as stream:
                        stream.write(json.dumps(row) + "\n")
                        stream.flush()
                        os.fsync(stream.fileno())
                except OSError as error:
                    raise OutputError(rows_path, error) from None
                rows.append(row)
                trial_done(row)
        except BaseException:
            # Ctrl-C (or an error): stop the workers now; finished trials stay in trials.jsonl.
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
    rows.sort(key=lambda row: row["seed"])
    results = {"experiment": experiment.describe(), "budget_steps": budget_steps, "summary": summarise(experiment, rows),
               "trials": rows}
    write_atomically(out / "results.json", json.dumps(results, indent=2).encode())
    write_atomically(out / "trials.csv", _csv(rows).encode())
    return results


def summarise(experiment: Experiment, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Our figures in the published figures' terms."""
    solved = [row["to_success"] for row in rows if row["solved"]]
    summary: dict[str, Any] = {
        "trials": len(rows),
        "success_percent": 100.0 * len(solved) / len(rows) if rows else None,
        "mean_to_success": statistics.fmean(solved) if solved else None,
        "std_to_success": statistics.stdev(solved) if len(solved) > 1 else None,
        "range": f"{min(solved):,}-{max(solved):,}" if solved else None,
        "diverged": sum(bool(row.get("diverged")) for row in rows),
        "seconds_total": round(sum(row["seconds"] for row in rows), 1),
        "steps_total": sum(row["steps"] for row in rows),
    }
    if experiment.unit == "training streams":
        for label in ("perfect", "good", "rest"):
            summary[f"{label}_percent"] = (100.0 * sum(row.get("class") == label for row in rows) / len(rows)
                                           if rows else None)
        summary["mean_test_score"] = statistics.fmean(row["score"] for row in rows) if rows else None
    tested = [row for row in rows if "test_wrong" in row]
    if tested:
        summary["test_wrong"] = statistics.fmean(row["test_wrong"] for row in tested)
        summary["test_mse"] = statistics.fmean(row["test_mse"] for row in tested)
    return summary


def _csv(rows: list[dict[str, Any]]) -> str:
    columns = sorted({key for row in rows for key in row}, key=lambda key: (key != "seed", key))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns)
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def comparison(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(figure, ours, published) rows for the table `lstmgraph reproduce` prints."""
    summary, published = results["summary"], results["experiment"]["published"]
    unit = results["experiment"]["unit"]

    def show(value: Any, digits: int = 0) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:,.{digits}f}"
        return f"{value:,}" if isinstance(value, int) else str(value)

    rows = [("trials", show(summary["trials"]), show(results["experiment"]["trials"]))]
    if unit == "training streams":
        rows.append(("% perfect", show(summary["perfect_percent"]), show(published.get("perfect_percent"))))
        rows.append(("% good", show(summary["good_percent"]), show(published.get("good_percent"))))
        rows.append(("% rest", show(summary["rest_percent"]), show(published.get("rest_percent"))))
        rows.append(("mean test stream length", show(summary["mean_test_score"], 1), "-"))
    else:
        rows.append(("% solved", show(summary["success_percent"]), show(published.get("success_percent"))))
    rows.append((f"mean {unit} to success", show(summary["mean_to_success"]), show(published.get("mean_to_success"))))
    rows.append((f"std {unit} to success", show(summary["std_to_success"]), "-"))
    rows.append(("range", show(summary["range"]), show(published.get("range"))))
    if "test_wrong" in summary:
        rows.append(("test sequences wrong (of 2,560)", show(summary["test_wrong"], 1), show(published.get("test_wrong"))))
        rows.append(("test MSE", show(summary["test_mse"], 4), show(published.get("test_mse"), 4)))
    if "finding" in published:
        rows.append(("published finding", "", published["finding"]))
    rows.extend(verdict_rows(results))
    rows.append(("diverged trials", show(summary["diverged"]), "-"))
    rows.append(("CPU time (s, all trials)", show(summary["seconds_total"], 1), "-"))
    return rows
