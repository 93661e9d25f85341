"""numpy's default bit generator, PCG64 (XSL-RR 128/64), and its bounded integers, as scalar
compiled functions on a state array.

Every trial draws its data from a numpy ``Generator`` on PCG64 (`experiments.data.data_rng`);
results and checkpoints depend on exactly those draws. numba's ``Generator.integers`` makes
them through a call into numpy per draw (about 45 ns a draw here, against 1.4 ns inline:
benchmarks/generator_rate.py). These functions run the same algorithm inline on the generator's own
state, copied out (`state_of`) and back (`set_state`): the same numbers, and the same state after
them (tests/tasks/test_pcg64.py). Written as scalar code on one array, they also compile as GPU
device code (`engine.gpu.device_code`), where a trial's state is one row of an array.

The algorithm is numpy's ``pcg64.h`` and ``distributions.c``: the 128-bit state ``s`` steps as
``s * MULTIPLIER + increment``; a 64-bit draw is the new state's halves xor-ed and rotated by
its top six bits; a 32-bit draw is the low half of a 64-bit draw, whose high half is kept for
the next (``has_uint32``, ``uinteger``); ``integers(low, high)`` below 2^32 apart is Lemire's
bounded draw on 32-bit draws; a double in [0, 1) is a 64-bit draw's top 53 bits.
"""

from __future__ import annotations

import numba
import numpy as np

from .. import numba_cache  # noqa: F401  (numba caches this module's functions in the kernel cache)

#: The slots of a state array (uint64): the 128-bit state and increment in halves, then the
#: buffered half of the last 64-bit draw and whether it is waiting (numpy's bit generator state).
STATE_HIGH, STATE_LOW, INCREMENT_HIGH, INCREMENT_LOW, HAS_UINT32, UINTEGER = range(6)

_MULTIPLIER_HIGH = np.uint64(2549297995355413924)
_MULTIPLIER_LOW = np.uint64(4865540595714422341)
_LOW_HALF = np.uint64(0xFFFFFFFF)
_HALF = np.uint64(32)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_ROTATION = np.uint64(58)
_63 = np.uint64(63)
_64 = np.uint64(64)
_MASK = (1 << 64) - 1
_ELEVEN = np.uint64(11)
_TWO_TO_MINUS_53 = 1.0 / 9007199254740992.0


def is_pcg64(rng: np.random.Generator) -> bool:
    """Whether ``rng`` draws from PCG64, the generator these functions follow."""
    return type(rng.bit_generator) is np.random.PCG64


def state_of(rng: np.random.Generator) -> np.ndarray:
    """A PCG64 generator's state as a state array (its slots above)."""
    if not is_pcg64(rng):
        raise TypeError(f"compiled draws follow numpy's PCG64; this generator is {type(rng.bit_generator).__name__}")
    state = rng.bit_generator.state
    value, increment = state["state"]["state"], state["state"]["inc"]
    return np.array([value >> 64, value & _MASK, increment >> 64, increment & _MASK,
                     state["has_uint32"], state["uinteger"]], dtype=np.uint64)


def as_bit_generator_state(state: np.ndarray) -> dict:
    """A state array as numpy's ``PCG64.state`` dictionary (what `StreamData` anchors hold)."""
    high, low, increment_high, increment_low, has_uint32, uinteger = (int(value) for value in state)
    return {"bit_generator": "PCG64",
            "state": {"state": (high << 64) | low, "inc": (increment_high << 64) | increment_low},
            "has_uint32": has_uint32, "uinteger": uinteger}


def set_state(rng: np.random.Generator, state: np.ndarray) -> None:
    """Put a state array back into the generator it came from (`state_of`)."""
    rng.bit_generator.state = as_bit_generator_state(state)


def draw_with(rng: np.random.Generator, draws, *arguments):
    """``draws(state, *arguments)`` on ``rng``'s state (a compiled function of `tasks.draws`),
    leaving ``rng`` where its draws end."""
    state = state_of(rng)
    result = draws(state, *arguments)
    set_state(rng, state)
    return result


@numba.njit(cache=True, nogil=True)
def multiply_high(a, b):
    """The high 64 bits of the 128-bit product of two uint64 (from 32-bit halves)."""
    a0, a1, b0, b1 = a & _LOW_HALF, a >> _HALF, b & _LOW_HALF, b >> _HALF
    w0 = a0 * b0
    t = a1 * b0 + (w0 >> _HALF)
    w1 = (t & _LOW_HALF) + a0 * b1
    return a1 * b1 + (t >> _HALF) + (w1 >> _HALF)


@numba.njit(cache=True, nogil=True)
def next_uint64(state):
    """numpy's ``pcg64_next64``: step the state, then its output (XSL-RR) as a uint64."""
    low, high = state[STATE_LOW], state[STATE_HIGH]
    product_low = low * _MULTIPLIER_LOW
    product_high = high * _MULTIPLIER_LOW + low * _MULTIPLIER_HIGH + multiply_high(low, _MULTIPLIER_LOW)
    new_low = product_low + state[INCREMENT_LOW]
    carry = _ONE if new_low < product_low else _ZERO
    new_high = product_high + state[INCREMENT_HIGH] + carry
    state[STATE_LOW], state[STATE_HIGH] = new_low, new_high
    rotation = new_high >> _ROTATION
    mixed = new_high ^ new_low
    return (mixed >> rotation) | (mixed << ((_64 - rotation) & _63))


@numba.njit(cache=True, nogil=True)
def next_double(state):
    """numpy's ``pcg64_next_double``: a uniform double in [0, 1), the top 53 bits of a 64-bit
    draw times 2^-53 (exact: no rounding, so the device's arithmetic gives the same)."""
    return np.float64(next_uint64(state) >> _ELEVEN) * _TWO_TO_MINUS_53


@numba.njit(cache=True, nogil=True)
def next_uint32(state):
    """numpy's ``pcg64_next32``: the waiting high half of the last 64-bit draw, or the low half
    of a new one (its high half then waits)."""
    if state[HAS_UINT32] != _ZERO:
        state[HAS_UINT32] = _ZERO
        return state[UINTEGER]
    value = next_uint64(state)
    state[HAS_UINT32], state[UINTEGER] = _ONE, value >> _HALF
    return value & _LOW_HALF


@numba.njit(cache=True, nogil=True)
def integers(state, low, high):
    """``Generator.integers(low, high)`` (int64, ``high`` excluded, less than 2^32 apart) as
    numpy draws it: no draw when one value is possible, else Lemire's bounded 32-bit draw
    (``buffered_bounded_lemire_uint32``)."""
    span = np.uint64(high - 1 - low)
    if span == _ZERO:
        return low
    if span == _LOW_HALF:
        return low + np.int64(next_uint32(state))
    excluded = span + _ONE
    product = next_uint32(state) * excluded
    leftover = product & _LOW_HALF
    if leftover < excluded:
        threshold = (_LOW_HALF - span) % excluded
        while leftover < threshold:
            product = next_uint32(state) * excluded
            leftover = product & _LOW_HALF
    return low + np.int64(product >> _HALF)
