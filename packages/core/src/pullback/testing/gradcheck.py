"""Finite-difference checks of gradients: :func:`gradcheck` (first order) and
:func:`gradgradcheck` (second order), with PyTorch's semantics and defaults.

Both build the full Jacobian twice, once by central differences in float64 and once from
:func:`pullback.autograd.grad` (one backward per output element), and compare every entry with
``|analytical - numerical| <= atol + rtol * |numerical|``. A failure names the input, the output
and the worst entry. Inputs are small in practice (a few dozen elements): the cost is one forward
per input element and one backward per output element.

Example::

    import pullback as pb
    from pullback.testing import gradcheck, gradgradcheck

    x = pb.randn(3, 4, dtype=pb.float64, requires_grad=True)
    assert gradcheck(lambda t: (t * t).sum(axis=1), (x,))
    assert gradgradcheck(lambda t: t.tanh(), (x,))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..autograd import grad
from ..dtypes import is_floating
from ..errors import DTypeError, PullbackError
from ..tensor import Tensor

Inputs = Tensor | Sequence[Any]


class GradcheckError(PullbackError, AssertionError):
    """Analytical and numerical derivatives disagree (or the function cannot be checked)."""


@dataclass(frozen=True)
class JacobianComparison:
    """The outcome of comparing one analytical Jacobian with its finite-difference estimate.

    Attributes:
        passed: every entry is within ``atol + rtol * |numerical|``.
        relative_error: ``max |analytical - numerical| / (|numerical| + atol / rtol)`` over all
            entries (the comparison passes when this is at most ``rtol``; 0 without entries).
        message: which entry is worst, where, and by how much (empty when there is none).
    """

    passed: bool
    relative_error: float
    message: str


def _as_tuple(inputs: Inputs) -> tuple[Any, ...]:
    return (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)


def _flatten(out: Any) -> list[Tensor]:
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flatten(o)]
    raise TypeError(f"gradcheck: the function must return Tensors, got {type(out).__name__}")


def _host(t: Tensor) -> np.ndarray:
    return np.asarray(t.device.backend.to_host(t.array), dtype=np.float64)


def _differentiable_outputs(outs: list[Tensor]) -> list[int]:
    return [i for i, o in enumerate(outs) if is_floating(o.dtype)]


def _evaluate(fn: Callable[..., Any], inputs: tuple[Any, ...], which: int, values: np.ndarray,
              selected: list[int]) -> np.ndarray:
    """The selected outputs, flattened into one float64 vector, with input ``which`` replaced
    by a fresh tensor holding ``values`` (same device and requires_grad; the function may
    itself differentiate, as gradgradcheck's does)."""
    from ..creation import tensor

    x = inputs[which]
    fresh = tensor(values, dtype=x.dtype, device=x.device)
    fresh.requires_grad_(x.requires_grad)
    args = inputs[:which] + (fresh,) + inputs[which + 1:]
    outs = _flatten(fn(*args))
    return np.concatenate([_host(outs[i]).ravel() for i in selected] or [np.zeros(0)])


def _numerical_jacobian(fn: Callable[..., Any], inputs: tuple[Any, ...], which: int,
                        selected: list[int], n_out: int, eps: float) -> np.ndarray:
    """Rows: elements of input ``which``; columns: elements of the selected outputs."""
    base = _host(inputs[which]).copy()
    flat = base.reshape(-1)
    jac = np.zeros((flat.size, n_out))
    for k in range(flat.size):
        orig = flat[k]
        flat[k] = orig + eps
        plus = _evaluate(fn, inputs, which, base, selected)
        flat[k] = orig - eps
        minus = _evaluate(fn, inputs, which, base, selected)
        flat[k] = orig
        jac[k] = (plus - minus) / (2 * eps)
    return jac


def _analytical_jacobians(outs: list[Tensor], selected: list[int], inputs: tuple[Any, ...],
                          wrt: list[int]) -> list[np.ndarray]:
    """One Jacobian per input in ``wrt``, built from one backward per output element."""
    from ..creation import tensor

    n_out = sum(outs[i].array.size for i in selected)
    jacs = [np.zeros((inputs[j].array.size, n_out)) for j in wrt]
    col = 0
    for i in selected:
        out = outs[i]
        for k in range(out.array.size):
            if out.requires_grad:
                onehot = np.zeros(out.array.size)
                onehot[k] = 1
                seed = tensor(onehot.reshape(out.shape), dtype=out.dtype, device=out.device)
                grads = grad([out], [inputs[j] for j in wrt], grad_outputs=[seed],
                             retain_graph=True, allow_unused=True)
                for jac, j, g in zip(jacs, wrt, grads):
                    if g is None:
                        continue
                    _check_gradient(g, inputs[j], j)
                    jac[:, col] = _host(g).ravel()
            col += 1
    return jacs


def _check_gradient(g: Tensor, x: Tensor, index: int) -> None:
    if tuple(g.shape) != tuple(x.shape) or g.dtype != x.dtype:
        raise GradcheckError(
            f"gradcheck: the gradient of input {index} has shape {tuple(g.shape)} and dtype "
            f"{g.dtype}, but the input has shape {tuple(x.shape)} and dtype {x.dtype}"
        )


def _unravel(index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(index, shape)) if shape else ()


def _locate(col: int, outs: list[Tensor], selected: list[int]) -> tuple[int, tuple[int, ...]]:
    for i in selected:
        size = outs[i].array.size
        if col < size:
            return i, _unravel(col, tuple(outs[i].shape))
        col -= size
    raise IndexError(col)


def compare_jacobians(fn: Callable[..., Any], inputs: Inputs, *, eps: float = 1e-6,
                      atol: float = 1e-5, rtol: float = 1e-3,
                      names: Sequence[str] | None = None) -> JacobianComparison:
    """Compare the analytical and numerical Jacobians of ``fn`` at ``inputs``.

    Every floating Tensor input with ``requires_grad=True`` is checked; it must be float64.
    Outputs of other dtypes (indices, masks) are ignored. ``names`` labels the inputs in the
    message (default ``"input 0"``, ``"input 1"``...).
    """
    if not rtol > 0:
        raise ValueError(f"gradcheck: rtol must be positive, got {rtol}")
    inputs = _as_tuple(inputs)
    wrt = [j for j, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not wrt:
        raise GradcheckError("gradcheck: no input requires grad; nothing to check")
    for j in wrt:
        if inputs[j].dtype != np.float64:
            raise DTypeError(
                f"gradcheck: input {j} is {inputs[j].dtype}; finite differences need float64 "
                "inputs (cast with .double())"
            )
    labels = list(names) if names is not None else [f"input {j}" for j in range(len(inputs))]
    outs = _flatten(fn(*inputs))
    selected = _differentiable_outputs(outs)
    for i in selected:
        if outs[i].dtype != np.float64:
            raise DTypeError(f"gradcheck: output {i} is {outs[i].dtype}; finite differences "
                             "need float64 outputs")
    n_out = sum(outs[i].array.size for i in selected)
    analytical = _analytical_jacobians(outs, selected, inputs, wrt)
    worst, message = 0.0, ""
    for j, ana in zip(wrt, analytical):
        num = _numerical_jacobian(fn, inputs, j, selected, n_out, eps)
        if num.size == 0:
            continue
        diff = np.abs(ana - num)
        # The allclose test as one number: an entry passes when err <= rtol. NaN fails.
        err = diff / (np.abs(num) + atol / rtol)
        err = np.where(np.isnan(err), np.inf, err)
        r, c = np.unravel_index(int(np.argmax(err)), err.shape)
        if message and err[r, c] <= worst:
            continue
        worst = float(err[r, c])
        out_index, out_elem = _locate(int(c), outs, selected)
        message = (
            f"{labels[j]} (shape {tuple(inputs[j].shape)}) element "
            f"{_unravel(int(r), tuple(inputs[j].shape))} -> output {out_index} element "
            f"{out_elem}: analytical {float(ana[r, c])!r} vs numerical {float(num[r, c])!r} "
            f"(|diff| {diff[r, c]:.3g}, allowed {atol + rtol * abs(num[r, c]):.3g}; "
            f"{int((err > rtol).sum())} of {err.size} entries of this Jacobian disagree)"
        )
    return JacobianComparison(worst <= rtol, worst, message)


def gradcheck(fn: Callable[..., Any], inputs: Inputs, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True) -> bool:
    """Check the gradients of ``fn`` at ``inputs`` against central finite differences.

    Args:
        fn: takes the inputs positionally and returns a Tensor or a sequence of Tensors.
        inputs: a Tensor or a sequence; float64 Tensors with ``requires_grad=True`` are checked
            (other arguments are passed through unchanged).
        eps: the finite-difference step.
        atol, rtol: an entry passes when ``|analytical - numerical| <= atol + rtol * |numerical|``.
        raise_exception: raise :class:`GradcheckError` on failure (else return ``False``).

    Returns:
        ``True`` when every Jacobian entry agrees.
    """
    result = compare_jacobians(fn, inputs, eps=eps, atol=atol, rtol=rtol)
    if not result.passed and raise_exception:
        raise GradcheckError("gradcheck failed: " + result.message)
    return result.passed


def vector_jacobian_product(fn: Callable[..., Any], inputs: Inputs,
                            grad_outputs: Sequence[Tensor] | None = None, seed: int = 0
                            ) -> tuple[Callable[..., Any], tuple[Any, ...], list[str]]:
    """The vector-Jacobian product of ``fn`` as a function to gradcheck (second order).

    Returns ``(vjp, vjp_inputs, names)``: ``vjp(*inputs, *grad_outputs)`` gives the gradients
    of ``fn``'s floating outputs, weighted by ``grad_outputs``, with respect to the inputs that
    require grad (built with ``create_graph=True``, so it is differentiable in both). Missing
    ``grad_outputs`` are drawn from a normal distribution seeded with ``seed``.
    """
    from ..creation import tensor, zeros

    inputs = _as_tuple(inputs)
    n = len(inputs)
    wrt = [j for j, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    outs = _flatten(fn(*inputs))
    selected = _differentiable_outputs(outs)
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = [
            tensor(rng.standard_normal(tuple(outs[i].shape)), dtype=outs[i].dtype,
                   device=outs[i].device, requires_grad=True)
            for i in selected
        ]
    grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(selected):
        raise GradcheckError(f"gradgradcheck: {len(grad_outputs)} grad_outputs for "
                             f"{len(selected)} floating outputs")

    def vjp(*args: Any) -> tuple[Tensor, ...]:
        xs, vs = args[:n], args[n:]
        outs = _flatten(fn(*xs))
        pairs = [(outs[i], v) for i, v in zip(_differentiable_outputs(outs), vs)
                 if outs[i].requires_grad]
        targets = [xs[j] for j in wrt]
        if pairs:
            grads = grad([o for o, _ in pairs], targets, grad_outputs=[v for _, v in pairs],
                         create_graph=True, allow_unused=True)
        else:
            grads = (None,) * len(targets)
        return tuple(
            g if g is not None else zeros(tuple(x.shape), dtype=x.dtype, device=x.device)
            for g, x in zip(grads, targets)
        )

    names = [f"input {j}" for j in range(n)] + [f"grad_outputs[{k}]" for k in range(len(grad_outputs))]
    return vjp, inputs + tuple(grad_outputs), names


def gradgradcheck(fn: Callable[..., Any], inputs: Inputs,
                  grad_outputs: Sequence[Tensor] | None = None, *, eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-3, seed: int = 0,
                  raise_exception: bool = True) -> bool:
    """Check second derivatives: gradcheck of ``fn``'s vector-Jacobian product.

    The product ``v -> J(x)^T v`` is built with ``create_graph=True`` and checked with respect
    to the inputs and to ``v`` (``grad_outputs``; random, seeded by ``seed``, when not given).
    Arguments are those of :func:`gradcheck`.
    """
    vjp, vjp_inputs, names = vector_jacobian_product(fn, inputs, grad_outputs, seed)
    result = compare_jacobians(vjp, vjp_inputs, eps=eps, atol=atol, rtol=rtol, names=names)
    if not result.passed and raise_exception:
        raise GradcheckError("gradgradcheck failed: " + result.message)
    return result.passed
