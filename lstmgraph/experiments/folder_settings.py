"""What a results folder's experiment.json compares and digests: the settings its trials ran
with, the protocol as data (``protocol_settings``) among them, apart from the words that describe
the row to a reader (`DESCRIPTIVE_KEYS`), which a run neither compares nor digests (`folder.py`
writes the file and checks it; `settings_diff.py` names what differs)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..tasks.data_file import DATA_FILE, FILE_OPTIONS

#: The arithmetic trials run with, raised whenever a change makes a trial take another path
#: (chaotic trials part at a changed last bit). A folder records it, and a run refuses to add
#: trials to a folder of another arithmetic. 1: libm's tanh in the compiled kernels (until
#: 2026-11-22); 2: the kernels' own vectorised tanh (`engine/compiled/vector_math.py`).
TRIAL_ARITHMETIC = 2
#: experiment.json's protocol as data (`Protocol.settings`): what its trials ran with, where
#: ``protocol`` says it in words. A folder written before 2026-11-28 lacks it (`run_settings`).
PROTOCOL_SETTINGS = "protocol_settings"
#: experiment.json's keys that describe the row to a reader: the paper, its figures and trial
#: count, the protocol, variants and a deterministic task in words; and the spec's path (its
#: content is compared as ``spec_data``). A run neither compares nor digests them, so a corrected
#: figure or wording keeps a folder's trials and checkpoints, and so does another checkout.
DESCRIPTIVE_KEYS = frozenset({"paper", "table", "protocol", "trials", "unit", "published", "note", "variants",
                              "deterministic_task", "spec"})
#: `DESCRIPTIVE_KEYS` until 2026-11-29, when the paths of a run's files still counted.
_DESCRIPTIVE_WITH_PATHS = DESCRIPTIVE_KEYS - {"spec"}


def run_settings(recorded: dict[str, Any], files_in_name: bool = False) -> dict[str, Any]:
    """What a folder's trials ran with, as read back from experiment.json: the settings without
    `DESCRIPTIVE_KEYS`, and a ``data_file`` task's file by its sha256 alone (not its path, which
    differs between checkouts), in a sweep setting's name too (``files_in_name``: as until
    2026-11-29, when a setting that varied task.path resumed only where it began). A folder
    written before ``protocol_settings`` was recorded has only the protocol's words, so all of its
    settings count. Until 2026-11-29 the paths counted, so a committed spec sweep resumed only in
    the checkout it ran in."""
    recorded = json.loads(json.dumps(recorded))
    if PROTOCOL_SETTINGS not in recorded:
        return recorded
    ran = {key: value for key, value in recorded.items() if key not in DESCRIPTIVE_KEYS}
    if ran.get("task") == DATA_FILE:
        options, name = ran.get("task_options"), ran.get("name")
        if isinstance(options, dict) and isinstance(name, str) and not files_in_name:
            for path, digest in FILE_OPTIONS.items():
                if isinstance(options.get(path), str) and digest in options:
                    name = name.replace(json.dumps(options[path]), json.dumps(options[digest]))
            ran["name"] = name
        training = ran["spec_data"].get("training") if isinstance(ran.get("spec_data"), dict) else None
        for options in (ran.get("task_options"), training.get("task") if isinstance(training, dict) else None):
            for path, digest in FILE_OPTIONS.items():
                if isinstance(options, dict) and digest in options:
                    options.pop(path, None)  # (a copy: the bytes are compared, not where they lay)
    return ran


def settings_digest(recorded: dict[str, Any]) -> str:
    """A digest of what a folder's trials ran with (`run_settings`; key order aside)."""
    return _digest(run_settings(recorded))


def former_settings(recorded: dict[str, Any]) -> dict[str, Any]:
    """``recorded`` as a folder written before 2026-11-28 holds it: without ``protocol_settings``."""
    return {key: value for key, value in recorded.items() if key != PROTOCOL_SETTINGS}


def checkpoint_digests(recorded: dict[str, Any], stored: dict[str, Any] | None = None) -> tuple[str, ...]:
    """The digests a trial's checkpoint of a run recording ``recorded`` may carry, in a folder whose
    experiment.json holds ``stored`` (``recorded`` where None): `settings_digest` (the first, which
    a run writes), then those of earlier forms of ``stored``. A checkpoint written before
    2026-11-29 carries the digest of the settings with the paths of their files; one written that
    day, with a varied data file's path in the setting's name; one written before 2026-11-28, that
    of the whole settings without ``protocol_settings`` (the same run, if the row's words have not
    changed since)."""
    stored = recorded if stored is None else json.loads(json.dumps(stored))
    digests = [settings_digest(recorded), _digest(run_settings(stored, files_in_name=True)),
               _digest(former_settings(stored))]
    if PROTOCOL_SETTINGS in stored:
        digests.insert(1, _digest({key: value for key, value in stored.items() if key not in _DESCRIPTIVE_WITH_PATHS}))
    return tuple(dict.fromkeys(digests))


def _digest(recorded: dict[str, Any]) -> str:
    canonical = json.dumps(json.loads(json.dumps(recorded)), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def settings(experiment: Any, budget_steps: int | None, specs: Path, device: str = "cpu") -> dict[str, Any]:
    """What a run of ``experiment`` (an `experiment.Experiment`) records in experiment.json: the
    row (`Experiment.describe`: its protocol as data and in words), the cap, the spec as run
    and the arithmetic; the device where it is not the CPU (a GPU's arithmetic may differ in
    the last bits, so its trials and the CPU's do not mix in one folder)."""
    data, _ = experiment.spec_data(specs)
    return {**experiment.describe(), "budget_steps": budget_steps, "spec_data": data,
            "arithmetic": TRIAL_ARITHMETIC, **({"device": device} if device != "cpu" else {})}


def data_file_change(stored: dict[str, Any], expected: dict[str, Any]) -> str | None:
    """Where a folder's trials ran on a ``data_file`` task's file whose bytes differ from those
    this run's file holds now (another sha256): the words for it; else None."""
    before, now = stored.get("task_options"), expected.get("task_options")
    if stored.get("task") != DATA_FILE or expected.get("task") != DATA_FILE \
            or not isinstance(before, dict) or not isinstance(now, dict):
        return None
    for path, digest in FILE_OPTIONS.items():
        if before.get(digest) == now.get(digest) or digest not in before or digest not in now:
            continue
        if before.get(path) != now.get(path) and Path(str(before.get(path))).name != Path(str(now.get(path))).name:
            return (f"trials run on {before.get(path)} (sha256 {before.get(digest)}), not on {now.get(path)} "
                    f"(sha256 {now.get(digest)}): choose another --out for that file's data")
        return (f"trials run on {before.get(path)} when its sha256 was {before.get(digest)}; {now.get(path)} "
                f"now has {now.get(digest)}: restore that file, or choose another --out for the new data")
    return None

