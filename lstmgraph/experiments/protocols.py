"""A protocol: one paper's training and test regime, as one registered class.

Each protocol is a frozen dataclass of its settings, subclassing `Protocol` and registered
with `@register` under its ``kind``. The class owns everything the rest of the code asks of
a protocol: what a trial counts (``counted``), the success rate's key and label, its success
test, its limit, its summary figures, its trial class (`make_trial`) and, through the trial
class, its compiled driver. Nothing dispatches on a protocol by ``isinstance`` or by a label.

The two registered kinds (docs/results.md describes each experiment's settings):

- ``sequences`` (Hochreiter & Schmidhuber 1997, `sequences.py`): independent sequences, each
  from a reset state, an online update after every step, until the experiment's stopping rule,
  then a frozen test set;
- ``streams`` (Gers et al. 2000, 2002, `streams.py`): continual training streams that stop at
  their first error, each followed by frozen test streams; "perfect" when every test stream
  reaches its limit.

Adding a protocol is one module with its class (settings, `make_trial`, summary) and trial,
imported by the package's ``__init__`` (which registers it before any module of the package is
used), and its tests.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import statistics
from typing import Any, ClassVar

from ..errors import shown
from ..success import SuccessTest


class ProtocolError(ValueError):
    """A protocol setting that does not exist, or a value it cannot take."""


#: Every registered protocol class, by kind.
PROTOCOLS: dict[str, type["Protocol"]] = {}


def trial_of(protocol: type["Protocol"]):
    """Class decorator of a trial class: the trial ``protocol``'s `make_trial` builds."""
    def mark(trial_class: type) -> type:
        protocol.trial_class = trial_class
        return trial_class
    return mark


def register(cls: type["Protocol"]) -> type["Protocol"]:
    """Register a protocol class under its ``kind`` (a class decorator)."""
    if cls.kind in PROTOCOLS:
        raise ValueError(f"a protocol of kind {cls.kind!r} is registered already")
    PROTOCOLS[cls.kind] = cls
    return cls


class Protocol:
    """The base of every protocol class; a subclass is a frozen dataclass of its settings."""

    #: The registry key.
    kind: ClassVar[str]
    #: What a trial counts, as results record it ("sequences", "training streams").
    counted: ClassVar[str]
    #: The same in a table's few words, its last ("sequences", "streams").
    counted_short: ClassVar[str]
    #: A successful trial in one word ("solved", "perfect").
    success_word: ClassVar[str]
    #: The success rate's key in summaries and published figures.
    rate_key: ClassVar[str]
    #: The classes a trial's row falls into, beyond solved or not (streams: perfect, good, rest).
    classes: ClassVar[tuple[str, ...]] = ()
    #: What a trial counts and when it succeeds, in two sentences (results.png's caption).
    terms: ClassVar[str]
    #: The module of its compiled driver on the CPU, whose ``_drive`` takes the kernel first.
    driver: ClassVar[str]

    success: str
    tolerance: float

    def __init_subclass__(cls, **options: Any) -> None:
        super().__init_subclass__(**options)
        if "counted" in cls.__dict__:
            cls.counted_short = cls.counted.split()[-1]

    #: Settings added after results folders were first written, with the value every earlier
    #: trial ran with: `settings` leaves such a setting out at that value (earlier folders' records
    #: stay as they were) and `protocol_from_settings` reads it where it is missing.
    added: ClassVar[dict[str, Any]] = {}
    #: The setting that caps the units a trial presents (`limit`).
    limit_setting: ClassVar[str]
    #: The protocol's `trial.Trial` class (set by `trial_of`).
    trial_class: ClassVar[type]

    # -- what every protocol defines ---------------------------------------------------------------
    def describe(self) -> str:
        raise NotImplementedError

    @property
    def resets_each_sequence(self) -> bool:
        """Whether a trial starts each of the task's sequences from zero activations and traces
        (the spec's ``reset: sequence``, as a trial's spec.yaml records it: `experiment.trained_spec`)."""
        raise NotImplementedError

    @property
    def limit(self) -> int:
        """The most units (`counted`) a trial presents."""
        return getattr(self, self.limit_setting)

    def make_trial(self, engine, task, seed: int, budget_steps: int | None = None):
        """The `trial.Trial` of this protocol: network ``engine``, data from ``seed``."""
        return self.trial_class(engine, task, self, seed, budget_steps)

    @classmethod
    def summary_fields(cls, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """The protocol's own summary figures of finished trials' rows (beyond the rate and the
        units to success that every protocol has)."""
        return {}

    @classmethod
    def rate_rows(cls, summary: dict[str, Any], published: dict[str, Any], show) -> list[tuple[str, str, str]]:
        """(figure, ours, published) rows of the success rate (``show`` formats a value)."""
        return [(cls.rate_label(), show(summary[cls.rate_key]), show(published.get(cls.rate_key)))]

    @classmethod
    def test_rows(cls, summary: dict[str, Any], published: dict[str, Any], show) -> list[tuple[str, str, str]]:
        """(figure, ours, published) rows of the protocol's test figures, after the units to success."""
        return []

    def check_task(self, task) -> None:
        """Raise `ProtocolError` if a setting does not fit ``task`` (a row's)."""

    def sequences_to_succeed(self) -> int | None:
        """The fewest sequences a trial presents before it can succeed (None: no such bound)."""
        return None

    # -- shared ---------------------------------------------------------------------------------------
    @classmethod
    def rate_label(cls) -> str:
        """The success rate's label, e.g. "% perfect"."""
        return f"% {cls.success_word}"

    @property
    def success_test(self) -> SuccessTest:
        return SuccessTest(self.success, self.tolerance)

    def with_settings(self, settings: dict[str, Any]) -> "Protocol":
        """This protocol with some settings otherwise (`reproduce --protocol-option`), each value of
        the setting's type (a whole number for a float is taken; None only where the setting may
        be unset). `ProtocolError` names a setting it does not have, or a value it rejects."""
        annotations = {f.name: str(f.type) for f in dataclasses.fields(self) if f.init}
        changes = {}
        for key, value in settings.items():
            if key not in annotations:
                close = difflib.get_close_matches(key, annotations, n=1)
                raise ProtocolError(f"the {self.kind} protocol has no setting {key!r}"
                                    + (f" (did you mean {close[0]!r}?)" if close else "")
                                    + f"; its settings: {', '.join(annotations)}")
            changes[key] = _setting_value(key, annotations[key], value, getattr(self, key))
        try:
            return dataclasses.replace(self, **changes)
        except (ValueError, TypeError, OverflowError) as error:
            raise ProtocolError(str(error)) from None

    def settings(self) -> dict[str, Any]:
        """The protocol as data: its ``kind`` and every setting (experiment.json's
        ``protocol_settings``, what a folder's trials ran with; `protocol_from_settings` reads it)."""
        return {"kind": self.kind, **{key: value for key, value in dataclasses.asdict(self).items()
                                      if key not in self.added or value != self.added[key]}}

    def check_read(self, names: Any) -> None:
        """`ProtocolError` for a setting among ``names`` (those set otherwise) that this protocol's
        trials never read: ``tolerance`` where the success test is not ``tolerance``,
        ``rate_decay_every`` where the rate does not decay."""
        if "tolerance" in names and self.success != "tolerance":
            raise ProtocolError(f"tolerance: this {self.kind} protocol judges by {self.success}, which reads no "
                                "tolerance; leave it out, or give success=tolerance with it")
        if "rate_decay_every" in names and getattr(self, "rate_decay", 1.0) == 1.0:
            raise ProtocolError("rate_decay_every: this protocol's rate does not decay (rate_decay 1), so it reads "
                                "no rate_decay_every; leave it out, or give rate_decay below 1 with it")


#: The largest whole number a protocol setting takes (the compiled drivers count in int64).
LARGEST_COUNT = 2**62


_NO_ROW = object()


def _setting_value(key: str, annotation: str, value: Any, current: Any = _NO_ROW) -> Any:
    """``value`` checked against the setting's type (its annotation's text); ``current``: the
    row's value, named in the error."""
    if value is None:
        fits, wanted = "None" in annotation, "a value (it cannot be unset)"
    elif "float" in annotation:
        fits = isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 1e300 \
            and math.isfinite(float(value))
        wanted = "a finite number"
        value = float(value) if fits else value
    elif "int" in annotation:
        fits = isinstance(value, int) and not isinstance(value, bool) and abs(value) <= LARGEST_COUNT
        wanted = f"a whole number of at most {LARGEST_COUNT:,}"
    elif "bool" in annotation:
        fits, wanted = isinstance(value, bool), "true or false"
    else:
        fits, wanted = isinstance(value, str), "text"
    if not fits:
        row = f" (the row's: {json.dumps(current)})" if current is not _NO_ROW else ""
        raise ProtocolError(f"{key} takes {wanted}{row}, not {shown(value)}")
    return value


def check_positive(protocol: Protocol, *names: str) -> None:
    """Raise ValueError for a setting among ``names`` below 1 or above `LARGEST_COUNT`."""
    for name in names:
        value = getattr(protocol, name)
        if not 1 <= value <= LARGEST_COUNT:
            raise ValueError(f"{name} must be at least 1 and at most {LARGEST_COUNT:,}, not {value}")


def mean_or_none(values: list[float | None]) -> float | None:
    """The mean of ``values``; None for none, or where one is None (a trial's figure that
    overflowed: a mean without it would hide the worst)."""
    if not values or any(value is None for value in values):
        return None
    return statistics.fmean(values)


def protocol_kind(kind: str) -> type[Protocol]:
    """The registered protocol class of ``kind``; `ProtocolError` names the kinds there are."""
    if kind not in PROTOCOLS:
        raise ProtocolError(f"no protocol of kind {kind!r}; the kinds: {', '.join(PROTOCOLS)}")
    return PROTOCOLS[kind]


def protocol_counting(counted: str) -> type[Protocol]:
    """The protocol class whose trials count ``counted`` (the ``unit`` a results record holds)."""
    for cls in PROTOCOLS.values():
        if cls.counted == counted:
            return cls
    raise ProtocolError(f"no protocol counts {counted!r}; they count "
                        f"{', '.join(cls.counted for cls in PROTOCOLS.values())}")


def protocol_from_settings(settings: Any) -> Protocol:
    """The protocol `Protocol.settings` wrote (a folder's own record of how its trials ran);
    `ProtocolError` for a kind or a setting there is not, one missing, or a value a setting
    cannot take."""
    if not isinstance(settings, dict) or not isinstance(settings.get("kind"), str):
        raise ProtocolError("expected a mapping of a protocol's kind and its settings")
    cls = protocol_kind(settings["kind"])
    annotations = {f.name: str(f.type) for f in dataclasses.fields(cls) if f.init}
    values = {**cls.added, **{key: value for key, value in settings.items() if key != "kind"}}
    extra = [str(key) for key in values if key not in annotations]
    missing = [key for key in annotations if key not in values]
    if extra or missing:
        raise ProtocolError(f"the {cls.kind} protocol's settings are {', '.join(annotations)}; "
                            + "; ".join(f"{what}: {', '.join(keys)}" for what, keys in
                                        (("missing", missing), ("none of its", extra)) if keys))
    try:
        return cls(**{key: _setting_value(key, annotations[key], value) for key, value in values.items()})
    except (ValueError, TypeError, OverflowError) as error:
        raise ProtocolError(str(error)) from None
