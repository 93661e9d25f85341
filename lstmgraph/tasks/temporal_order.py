"""1997 Exp. 6, the temporal order problem (6a, 6b); 6b is also the 2000 paper's "noisy
temporal order" (NTO), and with ``continual=True`` its continual variant (CNTO).

Inputs are one-hot over 8 symbols in the order ``a, b, c, d, X, Y, E, B`` (unit 0 = a ...
unit 7 = B). Positions below are 1-based as in the paper (step 1 is the first symbol):

- length L uniform integer in [100, 110];
- step 1 is E, step L is B (the trigger), all other steps uniform among {a, b, c, d}
  except the relevant steps, each uniform in its window (both ends included) and carrying
  X or Y with probability 0.5 each:
  6a: t1 in [10, 20], t2 in [50, 60];  6b: t1 in [10, 20], t2 in [33, 43], t3 in [66, 76];
- target at step L: one-hot class, 4 outputs (6a) or 8 (6b). The class index is the X/Y
  sequence read as a binary number, X = 0, Y = 1, first symbol most significant: 6a XX, XY,
  YX, YY = 0..3 (the paper's Q, R, S, U); 6b XXX, XXY, ..., YYY = 0..7 (Q, R, S, U, V, A, B, C);
- before step L no target (NaN), unless ``idle_target`` gives a value for every output there;
  it is judged there too (a stream ends at an output off it), unless ``idle_judged`` is false.

The 2000 paper's NTO is exactly 6b (seed 000: "just Exp. 6b of the 1997 paper", 8 inputs and
8 outputs); its "noise" can only be the a/b/c/d distractors, which 6b already has. How CNTO scored
the steps between classifications is not said; seed 000 guesses that the net must output 0
there, which is ``idle_target: 0``. The default (no target) is the 1997 rule. The paper stops a
stream at "the first misclassification", and the seed at the net's first "預測錯誤" (prediction
error), where it calls the classification steps "預測時間點" (prediction steps): trained toward
0 between them but judged only at them is ``idle_target: 0, idle_judged: false``.
"""

from __future__ import annotations

from itertools import product

import numpy as np

from ..errors import shown
from ..success import SuccessTest
from .base import Sequence, Sequences, register

SYMBOLS: tuple[str, ...] = ("a", "b", "c", "d", "X", "Y", "E", "B")
INDEX: dict[str, int] = {symbol: i for i, symbol in enumerate(SYMBOLS)}
DISTRACTORS = (INDEX["a"], INDEX["b"], INDEX["c"], INDEX["d"])
MIN_LENGTH, MAX_LENGTH = 100, 110
WINDOWS: dict[str, tuple[tuple[int, int], ...]] = {
    "6a": ((10, 20), (50, 60)),
    "6b": ((10, 20), (33, 43), (66, 76)),
}


@register("temporal_order")
class TemporalOrder:
    """1997 Exp. 6a/6b: classify a sequence by the order of its widely separated X/Y symbols.

    Options: ``variant`` "6a" (2 relevant symbols, 4 classes) or "6b" (3 relevant symbols,
    8 classes); ``continual`` (default false) marks the stream as continual with no reset
    between sequences, the 2000 paper's CNTO; the sequences themselves are the same;
    ``idle_target`` (default none) is the target of every output before the last step
    (none: no target there, as in 1997; 0: seed 000's guess for CNTO); ``idle_judged``
    (default true) whether an output off it there is an error (false: trained toward it, but
    judged only at the classifications, `Sequence.legal`).
    """

    name = "temporal_order"
    #: 1997 Exp. 6 and 2000 NTO/CNTO: every output within 0.3 of its target.
    success_test = SuccessTest("tolerance", 0.3)
    n_inputs = len(SYMBOLS)
    draws_in_threads = True  # `base.draws_in_threads`: compiled draws (`draws.temporal_order_rows`)
    input_symbols = SYMBOLS

    def __init__(self, variant: str = "6a", continual: bool = False,
                 idle_target: float | None = None, idle_judged: bool = True) -> None:
        if not isinstance(variant, str) or variant not in WINDOWS:
            raise ValueError(f"variant must be one of {', '.join(map(repr, WINDOWS))}, got {shown(variant)}")
        if not isinstance(continual, bool):
            raise ValueError(f"continual must be true or false, not {shown(continual)}")
        if idle_target is not None and (isinstance(idle_target, bool)
                                        or not isinstance(idle_target, (int, float))
                                        or not np.isfinite(idle_target)):
            raise ValueError(f"idle_target must be a finite number (such as 0) or null for no "
                             f"target, got {shown(idle_target)}")
        if not isinstance(idle_judged, bool):
            raise ValueError(f"idle_judged must be true or false, not {shown(idle_judged)}")
        if not idle_judged and idle_target is None:
            raise ValueError("idle_judged: false needs an idle_target (such as 0); with none there is "
                             "nothing to judge between classifications")
        self.idle_target = None if idle_target is None else float(idle_target)
        self.idle_judged = idle_judged
        self.variant = variant
        self.windows = WINDOWS[variant]
        self.n_outputs = 2 ** len(self.windows)
        # Class k is the X/Y string of k in binary (X = 0, first most significant): XX, XY, YX, YY.
        self.output_symbols = tuple("".join(letters) for letters in product("XY", repeat=len(self.windows)))
        self.continual = continual

    def sample(self, rng: np.random.Generator) -> Sequence:
        length = int(rng.integers(MIN_LENGTH, MAX_LENGTH, endpoint=True))
        codes = rng.choice(DISTRACTORS, size=length)
        codes[0], codes[-1] = INDEX["E"], INDEX["B"]
        label = 0
        for low, high in self.windows:
            step = int(rng.integers(low, high, endpoint=True))  # 1-based
            is_y = int(rng.integers(2))
            codes[step - 1] = INDEX["Y"] if is_y else INDEX["X"]
            label = 2 * label + is_y
        coded = self._coded(codes, np.array([length]), np.array([label]))
        return Sequence(coded.inputs, coded.targets, None if coded.judged is coded.targets else coded.judged)

    def sample_many(self, rng: np.random.Generator, count: int) -> Sequences:
        """``count`` sequences end to end, drawn as ``count`` calls of `sample` draw them and
        coded as it codes them, in compiled code (`draws.temporal_order_rows`, which the GPU
        runs too)."""
        from .draws import draw_rows

        return draw_rows(rng, self.stream_rows, count, count * MAX_LENGTH, self.n_inputs, self.n_outputs)

    @property
    def stream_rows(self):
        """How its stream is drawn in place (`draws.StreamRows`): the GPU's draws."""
        from .draws import StreamRows, temporal_order_rows

        # the lengths, distractors, first and last symbols, windows, X and Y, the coding between classifications
        arguments = (MIN_LENGTH, MAX_LENGTH, np.array(DISTRACTORS, dtype=np.int64), INDEX["E"], INDEX["B"],
                     np.array(self.windows, dtype=np.int64), INDEX["X"], INDEX["Y"],
                     np.nan if self.idle_target is None else self.idle_target, self.idle_judged)
        return StreamRows(temporal_order_rows, arguments, MIN_LENGTH, MAX_LENGTH, 1 if self.idle_judged else 2,
                          (self.name, self.variant, self.idle_target, self.idle_judged))

    def _coded(self, codes: np.ndarray, lengths: np.ndarray, labels: np.ndarray) -> Sequences:
        """Sequences of symbol ``codes`` (end to end) of ``lengths`` and classes ``labels``: inputs
        one-hot; the class one-hot at each sequence's last step, ``idle_target`` (or none)
        before it; judged there too unless ``idle_judged`` is false."""
        inputs = np.zeros((len(codes), len(SYMBOLS)))
        inputs[np.arange(len(codes)), codes] = 1.0
        idle = np.nan if self.idle_target is None else self.idle_target
        targets = np.full((len(codes), self.n_outputs), idle)
        last = np.cumsum(lengths) - 1
        targets[last] = 0.0
        targets[last, labels] = 1.0
        if self.idle_judged:
            return Sequences(inputs, targets, targets, lengths)
        judged = np.full_like(targets, np.nan)
        judged[last] = targets[last]
        return Sequences(inputs, targets, judged, lengths)
