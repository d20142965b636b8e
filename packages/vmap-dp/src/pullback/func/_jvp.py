"""Forward mode as a transform level: ``DualTensor`` (a primal and its tangent), the mode that
pushes tangents through each op's ``"jvp"`` rule, :func:`jvp` and :func:`linearize`.

The primal is computed once, by the op itself; the tangent by the op's jvp rule from the
primals, the tangents and the output. A tangent that an enclosing vmap batches (``jacfwd``)
makes one batched tangent computation per op: one pass for every input direction.
"""

from __future__ import annotations

from typing import Any, Callable

import pullback
from pullback.dispatch import DispatchMode, apply, tensor_namespace
from pullback.registry import Op
from pullback.tensor import Tensor

from ._errors import FuncError
from ._jvp_rules import jvp_rule
from ._levels import Level, WrapperTensor, new_level, run_at_level, split_args
from ._pytree import tree_flatten, tree_unflatten

_FLOAT_KINDS = "fcV"


class DualTensor(WrapperTensor):
    """A primal value (``_value``) with its tangent (``_tangent``) at one jvp level."""

    __slots__ = ("_tangent",)

    _tangent: Tensor

    @property
    def array(self) -> Any:  # type: ignore[override]
        return self._value.array

    def detach(self) -> Tensor:
        return self._value.detach()

    def __repr__(self) -> str:
        return (f"DualTensor(level={self._level.index}, primal={self._value!r}, "
                f"tangent={self._tangent!r})")

    def _assign(self, result: Any, name: str) -> Tensor:
        if tuple(result.shape) != self._shape:
            raise FuncError(f"{name}: the result has shape {tuple(result.shape)} but the tensor "
                            f"written in place has shape {self._shape}")
        if isinstance(result, DualTensor) and result._level is self._level:
            primal, tangent = result._value, result._tangent
        else:
            primal, tangent = result, pullback.zeros_like(result)
        self._value = primal if primal.dtype == self.dtype else primal.to(self.dtype)
        self._tangent = tangent if tangent.dtype == self.dtype else tangent.to(self.dtype)
        return self


def make_dual(primal: Tensor, tangent: Tensor, level: Level) -> DualTensor:
    t = DualTensor.__new__(DualTensor)
    t._init_wrapper(primal, level, tuple(primal.shape))
    t._tangent = tangent
    return t


class JvpMode(DispatchMode):
    """Pushes the tangents of one jvp level through every op that touches its dual tensors."""

    def __init__(self, level: Level) -> None:
        self.level = level

    def dispatch(self, op: Op, args: tuple[Any, ...], attrs: dict[str, Any]) -> Any:
        level = self.level
        primals, tangents = split_args(args, DualTensor, level, "_tangent")
        if primals is None:
            return apply(op, *args, **attrs)
        out = apply(op, *primals, **attrs)
        if not op.differentiable or out.__class__ is tuple or out.dtype.kind not in _FLOAT_KINDS:
            return out  # piecewise constant, integer or boolean results carry no tangent
        tangent = jvp_rule(op)(tensor_namespace, tuple(tangents), out, *primals, **attrs)
        if tangent is None:
            return out
        return make_dual(out, _fit(tangent, out), level)

    def on_function_node(self, node: Any) -> None:
        if any(isinstance(a, DualTensor) and a._level is self.level for a in node.args):
            raise FuncError(f"jvp: the custom autograd.Function {node.name} has no forward-mode "
                            "rule; write it with registered ops instead")


def _fit(tangent: Any, out: Tensor) -> Any:
    """A tangent with its output's shape and dtype (rules may return broadcastable ones)."""
    if not isinstance(tangent, Tensor):
        tangent = pullback.full(tuple(out.shape), tangent, dtype=out.dtype, device=out.device)
    if tuple(tangent.shape) != tuple(out.shape):
        tangent = pullback.broadcast_to(tangent, tuple(out.shape))
    if tangent.dtype != out.dtype:
        tangent = tangent.to(out.dtype)
    return tangent


def _check_tangent(p: Any, t: Any, k: int, where: str) -> None:
    if not isinstance(t, Tensor) or tuple(t.shape) != tuple(p.shape):
        shape = tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__
        raise FuncError(f"{where}: tangent {k} ({shape}) must be a tensor of the primal's shape "
                        f"{tuple(p.shape)}")


def jvp(func: Callable[..., Any], primals: Any, tangents: Any, *, has_aux: bool = False) -> Any:
    """``func(*primals)`` and its directional derivative along ``tangents`` (forward mode).

    Args:
        func: a function of tensors (pytrees of them) returning tensors.
        primals: a tuple of arguments (pytrees of tensors).
        tangents: a tuple of the same structure: one tangent per floating primal.
        has_aux: ``func`` returns ``(output, aux)``.

    Returns:
        ``(output, tangent_out)`` (and ``aux`` when ``has_aux``), ``tangent_out`` shaped like
        the output (zeros where it does not depend on the primals).

    Example:
        >>> import pullback as pb
        >>> from pullback.func import jvp
        >>> x = pb.tensor([0.0, 1.0])
        >>> out, t = jvp(pb.sin, (x,), (pb.ones(2),))
        >>> t.tolist() == pb.cos(x).tolist()
        True
    """
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise FuncError("jvp: primals and tangents must be tuples (one entry per argument)")
    flat_p, spec = tree_flatten(primals)
    flat_t, tspec = tree_flatten(tangents)
    if tspec.num_leaves != spec.num_leaves:
        raise FuncError(f"jvp: tangents {tspec!r} do not match the primals {spec!r}")
    level = new_level("jvp")
    wrapped = []
    for k, (p, t) in enumerate(zip(flat_p, flat_t)):
        if isinstance(p, Tensor) and p.dtype.kind in _FLOAT_KINDS:
            _check_tangent(p, t, k, "jvp")
            wrapped.append(make_dual(p, t, level))
        else:
            wrapped.append(p)
    out = run_at_level(level, JvpMode(level), func, *tree_unflatten(wrapped, spec))
    aux = None
    if has_aux:
        out, aux = out
        aux = _split(aux, level)[0]
    primal_out, tangent_out = _split(out, level)
    return (primal_out, tangent_out, aux) if has_aux else (primal_out, tangent_out)


def _split(tree: Any, level: Level) -> tuple[Any, Any]:
    leaves, spec = tree_flatten(tree)
    primals, tangents = [], []
    for x in leaves:
        if isinstance(x, DualTensor) and x._level is level:
            primals.append(x._value)
            tangents.append(x._tangent)
        else:
            primals.append(x)
            tangents.append(pullback.zeros_like(x) if isinstance(x, Tensor) else None)
    return tree_unflatten(primals, spec), tree_unflatten(tangents, spec)


def linearize(func: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """``func(*primals)`` and ``jvp_fn(*tangents)``, its derivative at ``primals``.

    ``func`` runs once: its ops are recorded (as vjp records them), and each call of
    ``jvp_fn`` pushes tangents through the recorded ops' jvp rules, without computing the
    primal values again (JAX's ``linearize``).
    """
    from ._vjp import Recording

    rec = Recording(func, primals, False, "linearize")

    def jvp_fn(*tangents: Any) -> Any:
        flat_t, tspec = tree_flatten(tangents)
        if tspec.num_leaves != len(rec.primals):
            raise FuncError(f"linearize: jvp_fn takes one tangent per primal ({rec.in_spec!r}), "
                            f"got {tspec!r}")
        pushed: dict[int, Any] = {}
        for k, (p, t, ident) in enumerate(zip(rec.primals, flat_t, rec.in_ids)):
            if ident is not None:
                _check_tangent(p, t, k, "linearize")
                pushed[ident] = t
        for op, values, attrs, out, ids, ident in rec.tape.entries:
            ts = tuple(None if i is None else pushed.get(i) for i in ids)
            if any(t is not None for t in ts):
                tangent = jvp_rule(op)(tensor_namespace, ts, out, *values, **attrs)
                if tangent is not None:
                    pushed[ident] = _fit(tangent, out)
        outs = tree_flatten(rec.out)[0]
        result = [pushed.get(i) if i is not None and i in pushed else pullback.zeros_like(o)
                  for o, i in zip(outs, rec.out_ids)]
        return tree_unflatten(result, rec.out_spec)

    return rec.out, jvp_fn
