"""Squashing functions of the LSTM papers and their modern relatives.

Names are spelled out so a spec says exactly which function it means:
``four_logistic_minus_two`` is the 1997/2000 cell-input squashing g(x) = 4 sigma(x) - 2 (range
[-2, 2]); ``two_logistic_minus_one`` is the cell-output squashing h(x) = 2 sigma(x) - 1 (range
[-1, 1]) (Hochreiter & Schmidhuber 1997, section 5; Gers, Schmidhuber & Cummins 2000 keep
both). ``softmax`` is allowed on output groups only.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np

UnitActivation = Literal[
    "logistic", "tanh", "identity", "relu", "four_logistic_minus_two", "two_logistic_minus_one"]
OutputActivation = Literal[
    "logistic", "tanh", "identity", "relu", "four_logistic_minus_two", "two_logistic_minus_one",
    "softmax"]

UNIT_ACTIVATIONS: tuple[str, ...] = get_args(UnitActivation)
OUTPUT_ACTIVATIONS: tuple[str, ...] = get_args(OutputActivation)
#: Other names a spec may use (PyTorch's ``sigmoid``), replaced by their own name at validation.
ALIASES: dict[str, str] = {"sigmoid": "logistic"}

#: Formula of each activation, as printed by `lstmgraph validate` and the renderer.
FORMULAS: dict[str, str] = {
    "logistic": "1/(1+e^-x)",
    "tanh": "tanh(x)",
    "identity": "x",
    "relu": "max(0,x)",
    "four_logistic_minus_two": "4 sigma(x) - 2",
    "two_logistic_minus_one": "2 sigma(x) - 1",
    "softmax": "softmax(x)",
}


def _logistic(net: np.ndarray) -> np.ndarray:
    # sigma(x) = (1 + tanh(x/2)) / 2: one ufunc call, and no overflow for any x.
    return 0.5 + 0.5 * np.tanh(0.5 * net)


def _softmax(net: np.ndarray) -> np.ndarray:
    shifted = np.exp(net - net.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def apply(name: str, net: np.ndarray) -> np.ndarray:
    """y = f(net), elementwise except softmax (over the last axis)."""
    if name == "logistic":
        return _logistic(net)
    if name == "tanh":
        return np.tanh(net)
    if name == "identity":
        return net.copy()
    if name == "relu":
        return np.maximum(net, 0.0)
    if name == "four_logistic_minus_two":
        return 4.0 * _logistic(net) - 2.0
    if name == "two_logistic_minus_one":
        return 2.0 * _logistic(net) - 1.0
    if name == "softmax":
        return _softmax(net)
    raise ValueError(f"unknown activation {name!r}")


def derivative(name: str, net: np.ndarray, y: np.ndarray) -> np.ndarray:
    """f'(net) for an elementwise activation, from the net input and the activation y."""
    if name == "logistic":
        return y * (1.0 - y)
    if name == "tanh":
        return 1.0 - y * y
    if name == "identity":
        return np.ones_like(net)
    if name == "relu":
        return (net > 0).astype(net.dtype)
    if name == "four_logistic_minus_two":
        sigma = (y + 2.0) / 4.0
        return 4.0 * sigma * (1.0 - sigma)
    if name == "two_logistic_minus_one":
        sigma = (y + 1.0) / 2.0
        return 2.0 * sigma * (1.0 - sigma)
    raise ValueError(f"activation {name!r} has no elementwise derivative")


def backward(name: str, net: np.ndarray, y: np.ndarray, grad_y: np.ndarray) -> np.ndarray:
    """dE/dnet from dE/dy; softmax uses its Jacobian diag(y) - y y^T (last axis)."""
    if name == "softmax":
        return y * (grad_y - (grad_y * y).sum(axis=-1, keepdims=True))
    return derivative(name, net, y) * grad_y


def forward_tangent(name: str, net: np.ndarray, y: np.ndarray, tangent: np.ndarray) -> np.ndarray:
    """dy from dnet for a tangent with trailing parameter axis: ``tangent[..., unit, k]``."""
    if name == "softmax":
        weighted = (y[..., :, None] * tangent).sum(axis=-2, keepdims=True)
        return y[..., :, None] * (tangent - weighted)
    return derivative(name, net, y)[..., :, None] * tangent
