"""The transforms built from vjp, jvp and vmap: grad, grad_and_value, jacrev, jacfwd, hessian."""

from __future__ import annotations

import functools
from typing import Any, Callable

import pullback
from pullback.tensor import Tensor

from ._errors import FuncError
from ._jvp import jvp
from ._pytree import tree_flatten, tree_map, tree_unflatten
from ._vjp import vjp
from ._vmap import vmap


def _argnums(argnums: Any, nargs: int, where: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums or not all(isinstance(i, int) for i in nums):
        raise FuncError(f"{where}: argnums must be an int or a non-empty tuple of ints, "
                        f"got {argnums!r}")
    for i in nums:
        if not -nargs <= i < nargs:
            raise FuncError(f"{where}: argnums {i} is out of range for {nargs} positional "
                            "arguments")
    return tuple(i % nargs for i in nums)


def _partial(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
             nums: tuple[int, ...]) -> Callable[..., Any]:
    """``func`` as a function of the arguments at ``nums`` only (the others fixed)."""

    def inner(*chosen: Any) -> Any:
        full = list(args)
        for i, v in zip(nums, chosen):
            full[i] = v
        return func(*full, **kwargs)

    return inner


def grad_and_value(func: Callable[..., Any], argnums: Any = 0, has_aux: bool = False
                   ) -> Callable[..., Any]:
    """Like :func:`grad`, returning ``(gradient, value)`` (``(gradient, (value, aux))`` with
    ``has_aux``)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums(argnums, len(args), "grad")
        result = vjp(_partial(func, args, kwargs, nums), *(args[i] for i in nums),
                     has_aux=has_aux)
        out, vjp_fn = result[0], result[1]
        if not isinstance(out, Tensor) or out.numel() != 1:
            shape = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise FuncError(f"grad: the function must return a tensor with one element, got "
                            f"{shape} (use vjp or jacrev for other outputs)")
        grads = vjp_fn(pullback.ones_like(out))
        g = grads[0] if isinstance(argnums, int) else grads
        return (g, (out, result[2])) if has_aux else (g, out)

    return wrapper


def grad(func: Callable[..., Any], argnums: Any = 0, has_aux: bool = False) -> Callable[..., Any]:
    """The gradient of a scalar-valued ``func`` with respect to the arguments at ``argnums``.

    Args:
        func: returns a one-element tensor (and aux with ``has_aux``).
        argnums: which positional argument(s) to differentiate (an int or a tuple); each may
            be a pytree of tensors (a dict of parameters), and so is its gradient.
        has_aux: ``func`` returns ``(value, aux)``; the result is then ``(gradient, aux)``.

    Returns:
        A function with ``func``'s arguments returning the gradient (a tuple for a tuple
        ``argnums``). It composes: ``vmap(grad(f))`` gives per-sample gradients,
        ``grad(grad(f))`` second derivatives.

    Example:
        >>> import pullback as pb
        >>> from pullback.func import grad
        >>> grad(lambda x: (x ** 3).sum())(pb.tensor([1.0, 2.0])).tolist()
        [3.0, 12.0]
    """
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = inner(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def _basis(leaves: list[Tensor]) -> tuple[int, list[Tensor]]:
    """Rows of one identity matrix split into tensors shaped like ``leaves`` (each with the
    total count of elements as a leading axis)."""
    total = sum(x.numel() for x in leaves)
    parts, start = [], 0
    for x in leaves:
        n = x.numel()
        eye = pullback.eye(total, dtype=x.dtype, device=x.device)[:, start:start + n]
        parts.append(pullback.reshape(eye, (total,) + tuple(x.shape)))
        start += n
    return total, parts


def jacrev(func: Callable[..., Any], argnums: Any = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable[..., Any]:
    """The Jacobian of ``func`` by reverse mode: one batched backward pass over the rows of
    the identity (``vmap(vjp_fn)``). Shape: output shape + input shape, per output and input
    (nested as the output's structure, then the argnums')."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums(argnums, len(args), "jacrev")
        result = vjp(_partial(func, args, kwargs, nums), *(args[i] for i in nums),
                     has_aux=has_aux)
        out, vjp_fn = result[0], result[1]
        outs, out_spec = tree_flatten(out)
        total, basis = _basis(outs)
        rows = vmap(lambda *cts: vjp_fn(tree_unflatten(list(cts), out_spec)),
                    chunk_size=chunk_size)(*basis)
        jac = []
        start = 0
        for o in outs:
            per_input = tree_map(functools.partial(_rows_of, start=start, out=o), rows)
            jac.append(per_input[0] if isinstance(argnums, int) else per_input)
            start += o.numel()
        jac_tree = tree_unflatten(jac, out_spec)
        return (jac_tree, result[2]) if has_aux else jac_tree

    return wrapper


def _rows_of(g: Tensor, start: int, out: Tensor) -> Tensor:
    """The rows of a stacked gradient ``g`` that belong to ``out``, shaped out + input."""
    return pullback.reshape(g[start:start + out.numel()], tuple(out.shape) + tuple(g.shape[1:]))


def jacfwd(func: Callable[..., Any], argnums: Any = 0, *, has_aux: bool = False,
           randomness: str = "error") -> Callable[..., Any]:
    """The Jacobian of ``func`` by forward mode: one batched jvp over the columns of the
    identity (``vmap(jvp)``), one pass for every input direction at once. Same layout as
    :func:`jacrev`."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums(argnums, len(args), "jacfwd")
        primals = tuple(args[i] for i in nums)
        inner = _partial(func, args, kwargs, nums)
        leaves, spec = tree_flatten(primals)
        total, basis = _basis(leaves)
        aux_box: list[Any] = []

        def push(*tangent_leaves: Any) -> Any:
            tangents = tree_unflatten(list(tangent_leaves), spec)
            result = jvp(inner, primals, tangents, has_aux=has_aux)
            if has_aux:
                aux_box.append(result[2])
            return result[1]

        columns = vmap(push, out_dims=-1, randomness=randomness)(*basis)
        outs, out_spec = tree_flatten(columns)
        jac = []
        for o in outs:
            per_leaf, start = [], 0
            for x in leaves:
                n = x.numel()
                per_leaf.append(pullback.reshape(o[..., start:start + n],
                                                 tuple(o.shape[:-1]) + tuple(x.shape)))
                start += n
            per_input = tree_unflatten(per_leaf, spec)
            jac.append(per_input[0] if isinstance(argnums, int) else per_input)
        jac_tree = tree_unflatten(jac, out_spec)
        # aux depends on the primals only, so the one jvp computed it once, unbatched.
        return (jac_tree, aux_box[0]) if has_aux else jac_tree

    return wrapper


def hessian(func: Callable[..., Any], argnums: Any = 0) -> Callable[..., Any]:
    """The Hessian of a scalar ``func``: forward over reverse, ``jacfwd(jacrev(func))``."""
    return jacfwd(jacrev(func, argnums), argnums)
