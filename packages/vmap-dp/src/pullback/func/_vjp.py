"""Reverse mode as a transform level: ``TrackedTensor``, the tape its mode records, and
:func:`vjp`.

Each call of vjp (and of grad, jacrev...) opens a level with a tape of its own. Its mode records
every differentiable op that touches the level's tracked tensors (the op, its inputs one level
below, its attributes, its output), and the backward pass runs each op's ``"grad"`` rule from
the registry on those values with the ops of the levels below. So the backward pass is itself
batched by an enclosing vmap (per-sample gradients), differentiated by an enclosing vjp or jvp
(Hessians), and never mixed with the gradients of another level (``grad(grad(f))``).
pullback's own tape (``Tensor.backward``) is the level below all of them and is not involved.
"""

from __future__ import annotations

from typing import Any, Callable

import pullback
from pullback.dispatch import DispatchMode, TensorNamespace, apply, state, tensor_namespace
from pullback.errors import AutogradError
from pullback.registry import Op
from pullback.tensor import Tensor

from ._errors import FuncError
from ._levels import Level, WrapperTensor, new_level, run_at_level, split_args
from ._pytree import tree_flatten, tree_unflatten

_GRAD_KINDS = "fcV"


class _FirstOrderNamespace(TensorNamespace):
    """Tensor ops for grad rules whose result is not differentiated again: rules then take
    their first-order paths (fused backward ops such as ``nn.softmax_backward``)."""

    differentiable = False


first_order_namespace = _FirstOrderNamespace()


class TrackedTensor(WrapperTensor):
    """A value that a vjp level differentiates (``_id`` names it on the level's tape; ``None``
    once an in-place op replaced it by a constant)."""

    __slots__ = ("_id", "_input")

    _id: int | None
    _input: bool

    @property
    def array(self) -> Any:  # type: ignore[override]
        return self._value.array

    @property
    def requires_grad(self) -> bool:  # type: ignore[override]
        return self._id is not None

    def detach(self) -> Tensor:
        return self._value.detach()

    def __repr__(self) -> str:
        return f"TrackedTensor(level={self._level.index}, value={self._value!r})"

    def _assign(self, result: Any, name: str) -> Tensor:
        if self._input:
            raise FuncError(f"{name}: an input of vjp/grad cannot be modified in place (it is "
                            "what the gradient is taken with respect to); use the out-of-place op")
        if tuple(result.shape) != self._shape:
            raise FuncError(f"{name}: the result has shape {tuple(result.shape)} but the tensor "
                            f"written in place has shape {self._shape}")
        mine = isinstance(result, TrackedTensor) and result._level is self._level
        value = result._value if mine else result
        self._value = value if value.dtype == self.dtype else value.to(self.dtype)
        self._id = result._id if mine else None
        return self


def make_tracked(value: Tensor, level: Level, ident: int | None, is_input: bool = False
                 ) -> TrackedTensor:
    t = TrackedTensor.__new__(TrackedTensor)
    t._init_wrapper(value, level, tuple(value.shape))
    t._id = ident
    t._input = is_input
    t._requires_grad = True  # a custom Function called on it records, and the mode refuses it
    return t


class Tape:
    """The ops one vjp level recorded, in the order they ran."""

    __slots__ = ("entries", "count")

    def __init__(self) -> None:
        self.entries: list[tuple[Op, tuple[Any, ...], dict[str, Any], Tensor, tuple[Any, ...],
                                 int]] = []
        self.count = 0

    def new_id(self) -> int:
        self.count += 1
        return self.count


class VjpMode(DispatchMode):
    """Records the differentiable ops on the tracked tensors of one vjp level."""

    def __init__(self, level: Level, tape: Tape) -> None:
        self.level = level
        self.tape = tape

    def dispatch(self, op: Op, args: tuple[Any, ...], attrs: dict[str, Any]) -> Any:
        level = self.level
        values, ids = split_args(args, TrackedTensor, level, "_id")
        if values is None:
            return apply(op, *args, **attrs)
        out = apply(op, *values, **attrs)
        if (not op.differentiable or not state.grad_enabled or out.__class__ is tuple
                or out.dtype.kind not in _GRAD_KINDS or not any(i is not None for i in ids)):
            return out
        ident = self.tape.new_id()
        self.tape.entries.append((op, tuple(values), attrs, out, tuple(ids), ident))
        return make_tracked(out, level, ident)

    def on_function_node(self, node: Any) -> None:
        if any(isinstance(a, TrackedTensor) and a._level is self.level for a in node.args):
            raise FuncError(
                f"pullback.func: the custom autograd.Function {node.name} was called inside a "
                "function transform (grad, vjp, jacrev...); its backward is not used by the "
                "transforms: write it with registered ops instead"
            )


def _differentiated_again(g: Any, values: tuple[Any, ...]) -> bool:
    """Whether a backward step's ops may be differentiated (an enclosing transform, or
    pullback's own tape), so that grad rules must take their differentiable paths."""
    from ._jvp import JvpMode

    for mode in state.modes:
        if isinstance(mode, (VjpMode, JvpMode)):
            return True
    if getattr(g, "_requires_grad", False):
        return True
    return any(isinstance(v, Tensor) and v._requires_grad for v in values)


def backward(tape: Tape, roots: list[tuple[int, Any]], wanted: list[int]) -> list[Any]:
    """Cotangents of the ``wanted`` ids given those of the ``roots`` (``None`` where no path
    leads): each recorded op's grad rule, in reverse order, with Tensor ops."""
    cts: dict[int, Any] = {}
    for ident, ct in roots:
        cts[ident] = ct if ident not in cts else cts[ident] + ct
    for op, values, attrs, out, ids, ident in reversed(tape.entries):
        g = cts.pop(ident, None)
        if g is None:
            continue
        # An op whose grad rule needs pullback's own tape has a "vjp" rule for the transforms.
        rule = op.rules.get("vjp") or op._grad
        if rule is None:
            raise AutogradError(f"op '{op.name}' has no grad rule (it is not differentiable)")
        F = tensor_namespace if _differentiated_again(g, values) else first_order_namespace
        kwargs = attrs
        if op._grad_wants_needs:
            kwargs = {**attrs, "needs": tuple(i is not None for i in ids)}
        result = rule(F, g, out if op.save_output else None, *values, **kwargs)
        if result.__class__ is not tuple or len(result) != len(values):
            raise AutogradError(f"grad rule of op '{op.name}' must return a tuple of "
                                f"{len(values)} gradients (one per input)")
        for x, gi, i in zip(values, result, ids):
            if i is None or gi is None:
                continue
            if tuple(gi.shape) != tuple(x.shape):
                gi = F.sum_to(gi, shape=tuple(x.shape))
            if gi.dtype != x.dtype:
                gi = F.cast(gi, dtype=x.dtype)
            prev = cts.get(i)
            cts[i] = gi if prev is None else F.add(prev, gi)
    return [cts.get(i) for i in wanted]


def _is_differentiable(x: Any) -> bool:
    return isinstance(x, Tensor) and x.dtype.kind in _GRAD_KINDS


class Recording:
    """The outcome of running a function under a fresh vjp level: outputs, ids, the tape."""

    def __init__(self, func: Callable[..., Any], primals: tuple[Any, ...], has_aux: bool,
                 where: str) -> None:
        level = new_level("vjp")
        self.tape = tape = Tape()
        flat, self.in_spec = tree_flatten(primals)
        self.primals = flat
        wrapped = [make_tracked(x, level, tape.new_id(), is_input=True)
                   if _is_differentiable(x) else x for x in flat]
        self.in_ids = [w._id if isinstance(w, TrackedTensor) else None for w in wrapped]
        out = run_at_level(level, VjpMode(level, tape), func,
                           *tree_unflatten(wrapped, self.in_spec))
        self.aux = None
        if has_aux:
            if not isinstance(out, tuple) or len(out) != 2:
                raise FuncError(f"{where}: with has_aux=True the function must return a pair "
                                f"(output, aux), got {type(out).__name__}")
            out, aux = out
            self.aux = _unwrap_tree(aux, level)[0]
        self.out, self.out_ids = _unwrap_tree(out, level)
        self.out_spec = tree_flatten(out)[1]


def _unwrap_tree(tree: Any, level: Level) -> tuple[Any, list[int | None]]:
    leaves, spec = tree_flatten(tree)
    values, ids = [], []
    for x in leaves:
        if isinstance(x, TrackedTensor) and x._level is level:
            values.append(x._value)
            ids.append(x._id)
        else:
            values.append(x)
            ids.append(None)
    return tree_unflatten(values, spec), ids


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``func(*primals)`` and a function that pulls cotangents of the output back to the inputs.

    Args:
        func: a function of tensors (pytrees of them) returning tensors.
        primals: the point to differentiate at.
        has_aux: ``func`` returns ``(output, aux)``; aux is returned as is, not differentiated.

    Returns:
        ``(output, vjp_fn)`` or ``(output, vjp_fn, aux)``. ``vjp_fn(cotangents)`` takes one
        cotangent per output (same structure and shapes) and returns a tuple with one
        gradient per primal (zeros where the output does not depend on it). It may be called
        many times, and inside other transforms (``vmap(vjp_fn)`` is ``jacrev``).

    Example:
        >>> import pullback as pb
        >>> from pullback.func import vjp
        >>> out, vjp_fn = vjp(pb.sin, pb.tensor([0.0, 1.0]))
        >>> vjp_fn(pb.ones(2))[0].tolist() == pb.cos(pb.tensor([0.0, 1.0])).tolist()
        True
    """
    rec = Recording(func, primals, has_aux, "vjp")

    def vjp_fn(cotangents: Any) -> tuple[Any, ...]:
        cts, spec = tree_flatten(cotangents)
        if spec.num_leaves != rec.out_spec.num_leaves:
            raise FuncError(f"vjp_fn: expected cotangents shaped like the output "
                            f"{rec.out_spec!r}, got {spec!r}")
        outs = tree_flatten(rec.out)[0]
        roots = []
        for k, (ident, ct, o) in enumerate(zip(rec.out_ids, cts, outs)):
            if ct is None or ident is None:
                continue
            if tuple(ct.shape) != tuple(o.shape):
                raise FuncError(f"vjp_fn: cotangent {k} has shape {tuple(ct.shape)} but the "
                                f"output has shape {tuple(o.shape)}")
            roots.append((ident, ct if ct.dtype == o.dtype else ct.to(o.dtype)))
        wanted = [i for i in rec.in_ids if i is not None]
        grads = iter(backward(rec.tape, roots, wanted))
        result = []
        for x, i in zip(rec.primals, rec.in_ids):
            if i is None:
                result.append(None)
                continue
            g = next(grads)
            result.append(pullback.zeros_like(x) if g is None else g)
        return tuple(tree_unflatten(result, rec.in_spec))

    if has_aux:
        return rec.out, vjp_fn, rec.aux
    return rec.out, vjp_fn
