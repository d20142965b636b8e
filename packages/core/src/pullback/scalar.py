"""A scalar autograd engine, kept as a teaching artifact (outside the Tensor stack).

Each :class:`Value` holds one float, its gradient, and how it was made. ``backward()`` orders the
graph topologically (iteratively, so deep graphs work) and applies the chain rule in reverse.
Every op sits next to its derivative; derived ops (``-``, ``/``, ``sub``) are one-liners over the
primitives. It computes exactly what the Tensor engine computes, one number at a time.

Example::

    a, b = Value(2.0), Value(-3.0)
    c = (a * b + a.exp()).tanh()
    c.backward()
    a.grad, b.grad
"""

from __future__ import annotations

import math
from typing import Callable, Iterable


class Value:
    """A scalar that remembers how it was computed."""

    __slots__ = ("data", "grad", "_parents", "_backward", "op")

    def __init__(self, data: float, _parents: tuple[Value, ...] = (), op: str = "") -> None:
        self.data = float(data)
        self.grad = 0.0
        self._parents = _parents
        self._backward: Callable[[], None] = lambda: None
        self.op = op

    def __repr__(self) -> str:
        return f"Value(data={self.data:.6g}, grad={self.grad:.6g})"

    # -- primitives: each forward with its local derivative --------------------------------------
    def __add__(self, other: Value | float) -> Value:
        other = _lift(other)
        out = Value(self.data + other.data, (self, other), "+")

        def backward() -> None:
            self.grad += out.grad
            other.grad += out.grad

        out._backward = backward
        return out

    def __mul__(self, other: Value | float) -> Value:
        other = _lift(other)
        out = Value(self.data * other.data, (self, other), "*")

        def backward() -> None:
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = backward
        return out

    def __pow__(self, exponent: float) -> Value:
        if not isinstance(exponent, (int, float)):
            raise TypeError("Value ** supports constant int/float exponents only")
        out = Value(self.data**exponent, (self,), f"**{exponent}")

        def backward() -> None:
            self.grad += exponent * self.data ** (exponent - 1) * out.grad

        out._backward = backward
        return out

    def exp(self) -> Value:
        out = Value(math.exp(self.data), (self,), "exp")

        def backward() -> None:
            self.grad += out.data * out.grad

        out._backward = backward
        return out

    def log(self) -> Value:
        out = Value(math.log(self.data), (self,), "log")

        def backward() -> None:
            self.grad += out.grad / self.data

        out._backward = backward
        return out

    def tanh(self) -> Value:
        out = Value(math.tanh(self.data), (self,), "tanh")

        def backward() -> None:
            self.grad += (1.0 - out.data * out.data) * out.grad

        out._backward = backward
        return out

    def relu(self) -> Value:
        out = Value(self.data if self.data > 0 else 0.0, (self,), "relu")

        def backward() -> None:
            self.grad += (out.data > 0) * out.grad

        out._backward = backward
        return out

    # -- derived ops ---------------------------------------------------------------------------
    def __neg__(self) -> Value:
        return self * -1.0

    def __sub__(self, other: Value | float) -> Value:
        return self + (-_lift(other))

    def __truediv__(self, other: Value | float) -> Value:
        return self * _lift(other) ** -1

    def __radd__(self, other: float) -> Value:
        return self + other

    def __rmul__(self, other: float) -> Value:
        return self * other

    def __rsub__(self, other: float) -> Value:
        return _lift(other) - self

    def __rtruediv__(self, other: float) -> Value:
        return _lift(other) / self

    # -- the engine ----------------------------------------------------------------------------
    def backward(self) -> None:
        """Set ``grad`` of every Value this one depends on (d self / d value)."""
        order: list[Value] = []
        seen: set[int] = set()
        stack: list[tuple[Value, bool]] = [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
            elif id(node) not in seen:
                seen.add(id(node))
                stack.append((node, True))
                stack.extend((p, False) for p in node._parents)
        self.grad = 1.0
        for node in reversed(order):
            node._backward()


def _lift(x: Value | float) -> Value:
    return x if isinstance(x, Value) else Value(x)


class Neuron:
    """``act(w . x + b)`` over Values (tanh or linear)."""

    def __init__(self, weights: Iterable[float], bias: float, nonlinear: bool = True) -> None:
        self.w = [Value(w) for w in weights]
        self.b = Value(bias)
        self.nonlinear = nonlinear

    def __call__(self, x: list[Value]) -> Value:
        act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)
        return act.tanh() if self.nonlinear else act

    def parameters(self) -> list[Value]:
        return self.w + [self.b]
