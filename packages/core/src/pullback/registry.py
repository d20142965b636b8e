"""The op registry: the one table that every package extends.

An :class:`Op` is declared once, with a name. Rules are attached to it by key:

* a forward *kernel* per backend (``op.kernels["cpu"]``), or a *generic kernel factory* that
  builds a kernel from any NumPy-compatible array namespace (NumPy, CuPy, a third party's);
* a backward rule under ``"grad"``, written once against a namespace ``F`` so that it runs on raw
  arrays for first-order backward and on Tensors (building a graph) when ``create_graph=True``;
* transform rules added by plugins (``"batch"`` for vmap, ``"c99"`` and ``"onnx"`` for export...).

Plugins add ops, kernels and rules through the hooks in :mod:`pullback.hookspecs`; nothing else
edits these tables.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from .errors import RegistryError

KernelFactory = Callable[[Any], Callable[..., Any]]


class Op:
    """A primitive (or deliberately fused) operation.

    Args:
        name: unique name, e.g. ``"mul"`` or ``"nn.conv2d"``.
        generic: builds the forward kernel from an array namespace ``xp``; used for every backend
            that declares itself NumPy-compatible and has no kernel of its own for this op.
        differentiable: ``False`` for ops whose outputs never carry a gradient (comparisons,
            argmax, floor...); no graph node is recorded for them.
        save_inputs: whether the grad rule reads the *values* of the inputs (and therefore
            whether modifying an input in place before backward is an error).
        save_output: whether the grad rule reads the output (``out``); otherwise it gets ``None``.
        view: the output shares memory with the first input (reshape, slicing...); it shares the
            input's version counter so that in-place changes through either are detected.
        may_copy: a view op whose kernel copies for some inputs (reshape of a non-contiguous
            array): the output is a view only when it really shares the input's memory, else
            it gets a version counter of its own.
        aux: the kernel returns ``(output, saved)``; ``saved`` is a tuple of raw arrays handed to
            the grad rule as the keyword ``saved`` (first-order backward only).
        promotion: how the inputs are brought to one dtype before the kernel runs (a
            :class:`pullback.promotion.Promotion`: ``COMMON``, ``FLOAT``, ``SAME``), as PyTorch
            promotes; ``None`` (the default) hands the kernel the inputs as they are.
        family: the op's family (``"elementwise"``, ``"reduce"``, ``"shape"``, ``"index"``,
            ``"linalg"``, ...), so that one rule can cover many ops (backends parallelize
            elementwise kernels, the compiler fuses them, vmap batches them alike).
        doc: one line for the generated reports.

    The backward rule is attached afterwards with :meth:`def_grad`; an op without one has no
    gradient.
    """

    __slots__ = (
        "name", "generic", "kernels", "rules", "differentiable", "save_inputs", "save_output",
        "view", "may_copy", "aux", "promotion", "family", "doc", "_grad", "_grad_wants_needs",
        "_accumulate_into",
        "__weakref__",
    )

    def __init__(
        self,
        name: str,
        generic: KernelFactory | None = None,
        *,
        differentiable: bool = True,
        save_inputs: bool = True,
        save_output: bool = False,
        view: bool = False,
        may_copy: bool = False,
        aux: bool = False,
        promotion: Any = None,
        family: str = "other",
        doc: str = "",
    ) -> None:
        self.name = name
        self.generic = generic
        self.kernels: dict[str, Callable[..., Any]] = {}
        self.rules: dict[str, Any] = {}
        self.differentiable = differentiable
        self.save_inputs = save_inputs
        self.save_output = save_output
        self.view = view
        self.may_copy = may_copy
        self.aux = aux
        self.promotion = promotion
        self.family = family
        self.doc = doc
        self._grad: Callable[..., Any] | None = None
        self._grad_wants_needs = False
        self._accumulate_into: Callable[..., Any] | None = None

    def __repr__(self) -> str:
        return f"Op({self.name!r})"

    # -- rules -------------------------------------------------------------------------------
    def def_grad(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """Attach the backward rule (usable as a decorator).

        The rule is called as ``rule(F, g, out, *inputs, **attrs)`` and returns one gradient (or
        ``None``) per input. ``F`` is an op namespace (``F.exp``, ``F.sum``...): raw arrays for a
        first-order backward, differentiable Tensors under ``create_graph=True``. Python operators
        (``g * x``) work on both. A rule that declares a ``needs`` parameter receives a tuple of
        booleans saying which inputs want a gradient, so that it can skip expensive ones. The
        engine sums gradients down to each input's shape, so rules may return broadcast shapes.
        """
        self.set_rule("grad", rule)
        return rule

    def set_rule(self, key: str, rule: Any) -> None:
        """Attach a rule under ``key`` (``"grad"``, ``"batch"``, ``"c99"``...)."""
        self.rules[key] = rule
        # The rules the backward engine asks of every node, kept in slots (cheaper to read).
        if key == "grad":
            self._grad = rule
            self._grad_wants_needs = "needs" in inspect.signature(rule).parameters
        elif key == "accumulate_into":
            self._accumulate_into = rule

    def rule(self, key: str) -> Any:
        """The rule registered under ``key``; a :class:`RegistryError` names the op if missing."""
        try:
            return self.rules[key]
        except KeyError:
            if _load_plugins_once():  # an installed plugin not loaded yet may provide it
                return self.rule(key)
            raise RegistryError(f"op '{self.name}' has no '{key}' rule") from None

    def kernel_for(self, backend_name: str) -> Callable[..., Any]:
        """Resolve (and cache) the forward kernel of this op for a backend."""
        kernel = self.kernels.get(backend_name)
        if kernel is not None:
            return kernel
        from .backends import get_backend

        backend = get_backend(backend_name)
        if self.generic is None or not backend.array_api:
            raise RegistryError(
                f"op '{self.name}' has no kernel for backend '{backend_name}' "
                f"(kernels: {sorted(self.kernels) or 'none'})"
            )
        kernel = backend.adapt_kernel(self, self.generic(backend.xp))
        self.kernels[backend_name] = kernel
        return kernel


# The table itself, with the distribution that registered each entry (for errors and reports).
OPS: dict[str, Op] = {}
OP_OWNERS: dict[str, str] = {}
_pending_kernels: dict[str, list[tuple[str, Callable[..., Any], str]]] = {}
_pending_rules: dict[str, list[tuple[str, Any, str]]] = {}
RULE_OWNERS: dict[tuple[str, str], str] = {}


def register_op(op: Op, owner: str = "pullback") -> Op:
    """Add an op to the table; a second op of the same name is an error naming both owners."""
    existing = OPS.get(op.name)
    if existing is not None and existing is not op:
        raise RegistryError(
            f"op '{op.name}' registered twice: by {OP_OWNERS[op.name]} and by {owner}"
        )
    OPS[op.name] = op
    OP_OWNERS[op.name] = owner
    for backend, kernel, kowner in _pending_kernels.pop(op.name, []):
        register_kernel(op.name, backend, kernel, kowner)
    for key, rule, rowner in _pending_rules.pop(op.name, []):
        register_rule(op.name, key, rule, rowner)
    return op


def register_kernel(op_name: str, backend: str, kernel: Callable[..., Any], owner: str) -> None:
    """Attach a backend kernel to an op (kept pending until the op itself is registered)."""
    op = OPS.get(op_name)
    if op is None:
        _pending_kernels.setdefault(op_name, []).append((backend, kernel, owner))
        return
    key = ("kernel:" + backend, op_name)
    if key in RULE_OWNERS and RULE_OWNERS[key] != owner:
        raise RegistryError(
            f"kernel for op '{op_name}' on backend '{backend}' registered twice: "
            f"by {RULE_OWNERS[key]} and by {owner}"
        )
    RULE_OWNERS[key] = owner
    op.kernels[backend] = kernel


def register_rule(op_name: str, key: str, rule: Any, owner: str) -> None:
    """Attach a transform rule to an op (kept pending until the op itself is registered)."""
    op = OPS.get(op_name)
    if op is None:
        _pending_rules.setdefault(op_name, []).append((key, rule, owner))
        return
    rkey = (key, op_name)
    # A rule attached where the op was declared (core's "grad" rules) belongs to the op's owner.
    existing = RULE_OWNERS.get(rkey) or (OP_OWNERS[op_name] if key in op.rules else None)
    if existing is not None and existing != owner:
        raise RegistryError(
            f"rule '{key}' for op '{op_name}' registered twice: by {existing} and by {owner}"
        )
    RULE_OWNERS[rkey] = owner
    op.set_rule(key, rule)


def get_op(name: str) -> Op:
    """Look an op up by name; the error lists near names."""
    try:
        return OPS[name]
    except KeyError:
        if _load_plugins_once():  # an installed plugin not loaded yet may declare it
            return get_op(name)
        import difflib

        close = difflib.get_close_matches(name, OPS, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise RegistryError(f"no op named '{name}'{hint}") from None


def _load_plugins_once() -> bool:
    """Load every entry-point plugin if that has not happened yet; True when it just did (so
    that a failed look-up is worth retrying)."""
    from . import plugins

    if plugins.plugins_loaded():
        return False
    plugins.load_plugins()
    return True
