"""``compile``: a callable that traces once per kind of input, then replays the optimized graph.

A trace is specialised to what it saw; the *guards* say what that was: the structure of the
arguments and, per Tensor, its shape, dtype, device, ``requires_grad`` and whether it has a
``.grad``; grad mode; the same for every parameter and buffer of the modules (and optimizers)
the function reaches, their ``training`` flags, and the keys of each optimizer's state. A call
whose guards match a cached entry replays it; otherwise the function is traced again (counted in
``traces`` and said in ``trace_log``, and to ``log``), up to ``cache_limit`` entries, after which
new kinds of input run eagerly (with one :class:`RecompileWarning`).
"""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from pullback.dispatch import state
from pullback.tensor import Tensor

from ._aot import AotProgram, partition
from ._capture import Trace, run_traced
from ._discover import Discovered, discover
from ._executor import Program, lower
from ._frozen import FrozenPrograms
from ._gemm import provider
from ._ir import Graph
from ._pytree import flatten, static_key, unflatten
from .errors import GraphBreakWarning, RecompileWarning

logger = logging.getLogger("pullback.compiler")

_GUARD_PARTS = ("argument structure", "argument tensors", "grad mode", "parameters and buffers",
                "training flags", "optimizer state")


@dataclass(eq=False)
class CompiledEntry:
    """One specialisation: its graphs before and after the passes, and the replay program."""

    trace: Trace
    graph: Graph  # after the passes
    program: Program | None
    report: list[dict[str, Any]] = field(default_factory=list)
    times: dict[str, float] = field(default_factory=dict)
    aot: AotProgram | None = None  # outputs differentiated later: forward and backward
    # the call of a pure function of arrays (see _plain_call), False where there is none
    plain: Callable[[list[Tensor]], Any] | bool | None = None

    @property
    def traced_graph(self) -> Graph:
        return self.trace.graph

    def current(self) -> bool:
        """Whether the optimizer states the graph updates are still the arrays it traced."""
        for ph in self.graph.placeholders:
            if ph.path is not None:
                owner, param, key = ph.path
                t = owner.state.get(param, {}).get(key)
                if t is None or t.array is not ph.source:
                    return False
        return True

    def read_inputs(self, flat: list[Tensor]) -> list[Any]:
        """What each placeholder reads now (runtime scalars from the optimizers' Python)."""
        graph = self.graph
        inputs = []
        for ph in graph.placeholders:
            kind, source = ph.kind, ph.source
            if kind == "input":
                inputs.append(flat[ph.position].array)  # type: ignore[index]
            elif kind == "array" or kind == "scalar":
                inputs.append(source)  # scalars are filled in below
            elif kind == "grad":
                inputs.append(source.grad.array)
            else:
                inputs.append(source.array)
        if self.trace.regions:
            scalars = _run_regions(self.trace.regions)
            for i, ph in enumerate(graph.placeholders):
                if ph.kind == "scalar":
                    inputs[i] = scalars[ph.source]
        return inputs

    def call(self, flat: list[Tensor]) -> Any:
        if self.plain is None:
            self.plain = _plain_call(self) or False
        if self.plain:
            return self.plain(flat)
        inputs = self.read_inputs(flat)
        aot = self.aot
        if aot is None:
            results = self.program.run(inputs)  # type: ignore[union-attr]
            return unflatten(self.graph.output_tree, self._write_results(flat, results))
        joint = aot.joint
        leaves = [flat[ph.position] if ph.kind == "input" else ph.source  # type: ignore[index]
                  for ph in joint.leaves]
        n = len(aot.partition.saved)
        outputs = [v for v in self.graph.outputs[:aot.partition.n_outputs]]

        def write(results: list[Any]) -> tuple[list[Any], list[Any]]:
            k = sum(v is not None for v in outputs)
            saved = results[k:k + n]
            return self._write_results(flat, results[:k] + results[k + n:], outputs), saved

        device = flat[0].device if flat else _device_of(self.graph)
        return unflatten(self.graph.output_tree, list(aot.run(leaves, inputs, device, write)))

    def _write_results(self, flat: list[Tensor], results: list[Any],
                       outputs: list[Any] | None = None) -> list[Any]:
        """The output Tensors (flat), after writing mutations back and setting ``.grad``."""
        graph = self.graph
        device = flat[0].device if flat else _device_of(graph)
        k = 0
        outs = []
        for v in graph.outputs if outputs is None else outputs:
            outs.append(None if v is None else Tensor._wrap(results[k], device))
            k += v is not None
        for ph, _ in graph.mutations:
            target = _tensor_of(ph, flat)
            array = ph.source if target is None else target.array
            if results[k] is not array:
                np.copyto(array, results[k]) if isinstance(array, np.ndarray) else \
                    array.__setitem__(Ellipsis, results[k])
            if target is not None:
                target._version[0] += 1
            k += 1
        handed: set[int] = set()
        for ph, v in graph.grads:
            target = _tensor_of(ph, flat)
            if v is None:
                target.grad = None
                continue
            g = results[k]
            k += 1
            # each .grad owns its memory (optimizers and zero_grad write into it), as in eager
            if id(g) in handed or getattr(g, "base", None) is not None:
                g = g.copy()
            handed.add(id(g))
            target.grad = Tensor._wrap(g, target.device)
        return outs


def _plain_call(entry: CompiledEntry) -> Callable[[list[Tensor]], Any] | None:
    """A shorter call for a graph that is a function of arrays (inference): no optimizer's
    numbers to gather, nothing written back, no ``.grad`` set, no later backward. It reads the
    placeholders' arrays, runs the program and wraps its results, and nothing else."""
    graph = entry.graph
    if entry.aot is not None or entry.trace.regions or graph.mutations or graph.grads or \
            entry.program is None or any(v is None for v in graph.outputs):
        return None
    sources: list[tuple[int, Any]] = []  # (argument position, or -1 and the tensor read)
    for ph in graph.placeholders:
        if ph.kind == "input":
            sources.append((ph.position, None))
        elif ph.kind in ("param", "buffer", "captured") and isinstance(ph.source, Tensor):
            sources.append((-1, ph.source))
        else:
            return None
    run, tree, default = entry.program.run, graph.output_tree, _device_of(graph)
    wrap = Tensor._wrap

    def call(flat: list[Tensor]) -> Any:
        results = run([flat[i].array if i >= 0 else t.array for i, t in sources])
        device = flat[0].device if flat else default
        if tree == ("tensor",):
            return wrap(results[0], device)
        return unflatten(tree, [wrap(r, device) for r in results])

    return call


def _tensor_guards(tensors: list[Tensor]) -> tuple[Any, ...]:
    """Per tensor what a trace depends on: shape, dtype, device (by identity: devices are
    unique objects, and hashing one runs Python), ``requires_grad``, whether it has a
    ``.grad``."""
    return tuple([(t.array.shape, t.array.dtype, id(t.device), t._requires_grad, t.grad is None)
                  for t in tensors])


def _device_of(graph: Graph) -> Any:
    from pullback import device

    return device(graph.device)


def _tensor_of(ph: Any, flat: list[Tensor]) -> Any:
    if ph.kind == "input":
        return flat[ph.position]
    return ph.source if isinstance(ph.source, Tensor) else None


def _run_regions(regions: list[Any]) -> list[Any]:
    """Re-run each array update's Python (with the .grad it saw when traced) for its numbers."""
    scalars: list[Any] = []
    for region in regions:
        for t, v in region.grad_state:
            t.grad = None if v is None else Tensor._wrap(np.empty(v.shape, v.dtype), t.device)
        scalars += region.collect_scalars()
    return scalars


class CompiledFunction:
    """What :func:`pullback.compiler.compile` returns. See the module docstring.

    Attributes:
        traces: how many times the function was traced.
        trace_log: one line per trace: why it was traced.
        entries: the cached specialisations (``entries[-1].graph`` is the latest graph).
        gemm: the library its programs' matrix products run on (``"numpy"`` or ``"mkl"``):
            the process's GEMM provider, eager's too.
        frozen: with ``freeze=True``, the frozen C programs of inference calls
            (:class:`pullback.compiler._frozen.FrozenPrograms`; ``frozen.builds`` counts them),
            else ``None``.
    """

    def __init__(self, fn: Callable[..., Any], *, fullgraph: bool = False,
                 passes: Any = None, cache_limit: int = 8, gemm: str = "auto",
                 log: bool | Callable[[str], None] = False, freeze: bool = False) -> None:
        if cache_limit < 1:
            raise ValueError(f"compile: cache_limit must be at least 1, got {cache_limit}")
        self._fn = fn
        self.fullgraph = fullgraph
        self.passes = passes
        self.gemm = provider(gemm)
        self.cache_limit = cache_limit
        self._log = log
        self._cache: dict[Any, CompiledEntry | None] = {}
        self._keys: list[Any] = []
        self._found: Discovered | None = None
        self._warned: set[str] = set()
        self._plain_keys: dict[int, Any] = {}
        self.traces = 0
        self.trace_log: list[str] = []
        self.frozen = FrozenPrograms(fn, cache_limit, self._say, self._warn_once) if freeze \
            else None
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self.__doc__ = getattr(fn, "__doc__", None)

    def __getattr__(self, name: str) -> Any:
        # a compiled Module still answers for its parameters, state_dict, train()... (as
        # torch.compile's OptimizedModule does)
        if name.startswith("__") or "_fn" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["_fn"], name)

    @property
    def entries(self) -> list[CompiledEntry]:
        return [e for e in self._cache.values() if e is not None]

    def _guard_key(self, flat: list[Tensor], spec_key: Any) -> tuple[Any, ...]:
        found = self._found
        assert found is not None
        return (
            spec_key,
            _tensor_guards(flat),
            (state.grad_enabled, state.inference),
            _tensor_guards([t for _, _, t in found.tensors.values()]),
            found.training_flags(),
            found.optimizer_structure(),
        )

    def _arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Tensor], Any]:
        """The argument Tensors, flat, and the key of the arguments' structure. Tensors passed
        by position alone (a model's call) skip the general flattening."""
        if not kwargs and all(isinstance(a, Tensor) for a in args):
            key = self._plain_keys.get(len(args))
            if key is None:  # the key flatten's spec of (args, {}) gives, made once
                key = static_key((tuple, None, ((tuple, None, (("tensor",),) * len(args)),
                                                (dict, (), ()))))
                self._plain_keys[len(args)] = key
            return list(args), key
        flat, spec = flatten((args, kwargs))
        return flat, static_key(spec)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.frozen is not None:
            result = self.frozen(args, kwargs)
            if result is not NotImplemented:
                return result
        if self._found is None:
            self._found = discover(self._fn)
        flat, spec_key = self._arguments(args, kwargs)
        key = self._guard_key(flat, spec_key)
        try:
            entry = self._cache[key]
        except KeyError:
            return self._trace(key, args, kwargs)
        except TypeError:  # an unhashable static argument: nothing to cache it under
            return self._fn(*args, **kwargs)
        if entry is None:  # this kind of input runs eagerly (a graph break)
            return self._fn(*args, **kwargs)
        if entry.trace.regions and not entry.current():
            del self._cache[key]
            self._say(f"{self.__name__}: an optimizer's state was replaced (load_state_dict?)")
            return self._trace(key, args, kwargs)
        return entry.call(flat)

    def _trace(self, key: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if len(self._cache) >= self.cache_limit:
            self._warn_once("limit", RecompileWarning(
                f"compiled {self.__name__} reached its cache limit of {self.cache_limit} "
                f"specialisations; calls with new kinds of input run eagerly "
                f"({self._reason(key)})"))
            return self._fn(*args, **kwargs)
        self._found = discover(self._fn)
        self._say(f"tracing {self.__name__} ({self._reason(key)})")
        key = self._guard_key(*self._arguments(args, kwargs))  # discovery may have found more
        start = time.perf_counter()
        trace = run_traced(self._fn, args, kwargs, self._found, self.fullgraph, self.__name__)
        traced = time.perf_counter()
        self.traces += 1
        self._keys.append(key)
        if trace.broken is not None:
            self._cache[key] = None
            self._warn_once("break", GraphBreakWarning(
                f"compiled {self.__name__} runs eagerly for these inputs: {trace.broken}"))
            return trace.result
        from .passes import optimize

        aot = None
        if trace.joint is not None:
            cut = partition(trace.graph, trace.joint)
            graph, report = optimize(cut.forward, self.passes)
            backward, backward_report = optimize(cut.backward, self.passes)
            report += [{**r, "graph": "backward"} for r in backward_report]
            optimized = time.perf_counter()
            program = lower(graph, gemm=self.gemm)
            aot = AotProgram(cut, trace.joint, program, lower(backward, gemm=self.gemm), backward)
        else:
            graph, report = optimize(trace.graph, self.passes)
            optimized = time.perf_counter()
            program = lower(graph, gemm=self.gemm)
        done = time.perf_counter()
        self._cache[key] = CompiledEntry(trace, graph, program, report, {
            "trace_s": traced - start, "optimize_s": optimized - traced, "lower_s": done - optimized},
            aot)
        return trace.result

    def _reason(self, key: Any) -> str:
        if not self._keys:
            return "first call"
        previous = self._keys[-1]
        changed = [name for name, a, b in zip(_GUARD_PARTS, key, previous) if a != b]
        return "changed: " + (", ".join(changed) or "modules or optimizers found")

    def _say(self, message: str) -> None:
        self.trace_log.append(message)
        if callable(self._log):
            self._log(message)
        elif self._log:
            logger.info(message)

    def _warn_once(self, what: str, warning: Warning) -> None:
        self._say(str(warning))
        if what not in self._warned:
            self._warned.add(what)
            warnings.warn(warning, stacklevel=3)


def compile(fn: Callable[..., Any], *, fullgraph: bool = False, passes: Any = None,  # noqa: A001
            cache_limit: int = 8, log: bool | Callable[[str], None] = False,
            gemm: str = "auto", freeze: bool = False) -> CompiledFunction:
    """Compile a function or Module: trace it on its first call, replay the optimized graph after.

    The first call with a new kind of input runs the function eagerly while tracing it (its
    result is the eager one); later calls with matching guards replay the optimized graph with no
    per-op Python dispatch. Inference, a loss with ``backward()`` inside (gradients land in
    ``.grad``), a whole training step with an optimizer's ``step()``, and a forward whose outputs
    are differentiated later (a compiled Module in an eager training loop) all compile.

    Example::

        >>> import pullback as pb, pullback.compiler as pc
        >>> f = pc.compile(lambda x: pb.tanh(x) * 2.0 + 1.0)
        >>> x = pb.tensor([0.0, 1.0])
        >>> f(x)  # traced (and run eagerly)
        tensor([1.    , 2.5232])
        >>> f(x)  # replayed: one fused loop
        tensor([1.    , 2.5232])
        >>> f.traces
        1

    Args:
        fn: a function or Module.
        fullgraph: raise on anything that cannot be captured (data-dependent Python control
            flow, random numbers); with ``False`` such a call runs eagerly, with one warning.
        passes: the pass pipeline: ``None`` for the default one, a list of registered pass
            names or callables, or ``[]`` for none.
        cache_limit: how many specialisations to keep before running new ones eagerly.
        log: ``True`` to log each trace to the ``pullback.compiler`` logger, or a callable
            taking the message.
        gemm: the library of the replayed matrix products: ``"auto"``, the process's GEMM
            provider, which eager's products run on too (MKL where the ``mkl`` wheel is
            installed, else NumPy's; ``$PULLBACK_GEMM`` chooses, see :mod:`pullback._gemm`), so
            that compiled results are eager's. ``"mkl"`` or ``"numpy"`` checks that it is the
            process's provider (``ValueError`` otherwise; ``ImportError`` for ``"mkl"`` where
            MKL is missing).
        freeze: run a Module's inference calls (the Module and its children in eval mode,
            gradients off: ``no_grad`` or ``inference_mode``; positional CPU Tensors) as one
            native C function with the weights frozen into it, written by
            :func:`export_c`'s code generator and compiled for this machine: the fastest
            small-batch inference (a batch-1 MLP or small CNN within 1.5x of onnxruntime).
            Its results agree with eager's to float32 rounding, not bit for bit; a frozen
            parameter or buffer that changes (another array, or a new version: in-place ops,
            optimizer steps, ``load_state_dict``) rebuilds the program. Other calls, and
            models with an op the C writer lacks or more than 16 MiB of weights (one
            ``RuntimeWarning``), run the compiled Python program as without ``freeze``.

    Returns:
        A :class:`CompiledFunction`.
    """
    return CompiledFunction(fn, fullgraph=fullgraph, passes=passes, cache_limit=cache_limit,
                            log=log, gemm=gemm, freeze=freeze)
