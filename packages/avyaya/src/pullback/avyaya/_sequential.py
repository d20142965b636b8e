"""``ReversibleSequential``: a stack of couplings whose backward rebuilds each block's input
from its output, so that the forward pass keeps only the stack's final output."""

from __future__ import annotations

from typing import Any, Iterable, Iterator

import numpy as np

import pullback as pb
import pullback.nn as nn
from pullback import Tensor
from pullback.autograd import Function, FunctionCtx
from pullback.errors import AutogradError, PullbackError

from ._coupling import Coupling
from ._rng import RngTape

# Debug mode's default tolerance on the relative reconstruction error of a block's input (the
# largest absolute difference over the largest magnitude of the stored input). About 1e4 ulps
# of one: a chain of invertible blocks in these dtypes stays far below it (docs/avyaya.md
# reports the errors measured at depth 500), a block whose f or g swamps the other half
# (no longer invertible in that dtype) is far above.
DEFAULT_TOLERANCE = {"float64": 1e-10, "float32": 1e-3, "float16": 1e-1, "bfloat16": 1e-1}


class ReconstructionError(PullbackError, ArithmeticError):
    """A block's input, rebuilt from its output in backward, differs from the stored one by
    more than the tolerance: the block is not invertible in this dtype (debug mode only)."""


def relative_error(rebuilt: Tensor, reference: Tensor) -> float:
    """``max |rebuilt - reference| / max |reference|`` (absolute when the reference is 0)."""
    diff = float((rebuilt - reference).abs().max().item())
    scale = float(reference.abs().max().item())
    return diff / scale if scale > 0 else diff


class ReversibleSequential(nn.Module):
    """Couplings applied one after the other, in activation memory that does not grow with
    depth.

    The forward pass runs without a graph and keeps only the final output; backward walks the
    blocks from the last, rebuilding each block's input from its output and pulling the
    gradient through that block's local graph (one custom :class:`pullback.autograd.Function`
    over the whole stack). Gradients equal ordinary backpropagation through the same blocks up
    to the rounding of the reconstruction. Random numbers drawn inside ``f``/``g`` (dropout) are
    replayed, so the rebuilt blocks see the masks of the forward pass.

    The networks' trainable tensors must be their parameters (a tensor captured from outside
    gets no gradient), and layers that update state in forward (batch norm's running
    statistics) update it again when their block is rebuilt. ``backward(create_graph=True)`` is
    not supported.

    Args:
        blocks: the couplings (:class:`ReversibleBlock`, :class:`AffineCoupling`).
        debug: keep every block's input as an ordinary network does (memory grows with depth
            again) and, in backward, raise :class:`ReconstructionError` when a rebuilt input
            differs from the stored one by more than ``tolerance``.
        tolerance: the largest relative reconstruction error debug mode accepts (default: per
            dtype, ``DEFAULT_TOLERANCE``).

    Example:
        >>> import pullback as pb
        >>> from pullback import nn
        >>> from pullback.avyaya import ReversibleBlock, ReversibleSequential
        >>> def mlp():
        ...     return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
        >>> stack = ReversibleSequential([ReversibleBlock(mlp(), mlp()) for _ in range(100)])
        >>> x = pb.randn(4, 16, requires_grad=True)
        >>> stack(x).sum().backward()
        >>> tuple(x.grad.shape)
        (4, 16)
    """

    def __init__(self, blocks: Iterable[Coupling], debug: bool = False,
                 tolerance: float | None = None) -> None:
        super().__init__()
        blocks = list(blocks)
        for i, block in enumerate(blocks):
            if not isinstance(block, Coupling):
                raise TypeError(f"ReversibleSequential: block {i} is a {type(block).__name__}, "
                                "not a coupling (ReversibleBlock, AffineCoupling)")
        self.blocks = nn.ModuleList(blocks)
        self.debug = debug
        self.tolerance = tolerance

    def __len__(self) -> int:
        return len(self.blocks)

    def __iter__(self) -> Iterator[Coupling]:
        return iter(self.blocks)

    def __getitem__(self, index: int) -> Coupling:
        return self.blocks[index]

    def forward(self, x: Tensor) -> Tensor:
        """The output of the last block (no activations kept)."""
        return _Stack.apply(self, False, x, *self._trainable())

    def forward_with_log_det(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """The output and ``log |det dy/dx|`` per sample (the sum of the blocks'; additive
        blocks preserve volume and add zero)."""
        y, log_det = _Stack.apply(self, True, x, *self._trainable())
        return y, log_det

    def inverse(self, y: Tensor) -> Tensor:
        """The input that gives ``y``: every block's inverse, from the last."""
        for block in reversed(self.blocks):
            y = block.inverse(y)
        return y

    def reconstruction_error(self, x: Tensor) -> float:
        """The relative error of ``inverse(forward(x))`` against ``x`` (see
        :func:`relative_error`), computed without a graph."""
        with pb.no_grad():
            return relative_error(self.inverse(self(x)), x)

    def _trainable(self) -> list[nn.Parameter]:
        return [p for p in self.parameters() if p.requires_grad]

    def _tolerance(self, dtype: Any) -> float:
        if self.tolerance is not None:
            return self.tolerance
        return DEFAULT_TOLERANCE.get(np.dtype(dtype).name, DEFAULT_TOLERANCE["float32"])

    def _check(self, index: int, rebuilt: Tensor, stored: Tensor) -> None:
        err, tol = relative_error(rebuilt, stored), self._tolerance(stored.dtype)
        if not err <= tol:
            block = self.blocks[index]
            raise ReconstructionError(
                f"ReversibleSequential: the input of block {index} ({type(block).__name__}), "
                f"rebuilt from its output, differs from the stored input by {err:.3g} "
                f"(relative), over the tolerance {tol:.3g} for {np.dtype(stored.dtype).name}: "
                "the blocks are not invertible in this dtype (a network's output swamps the "
                "half it is added to, or a scale overflows); use a wider dtype or smaller "
                "outputs"
            )


class _Stack(Function):
    """The whole stack as one graph node: keeps the final output, rebuilds the rest."""

    @staticmethod
    def forward(ctx: FunctionCtx, stack: ReversibleSequential, with_log_det: bool, x: Tensor,
                *params: nn.Parameter) -> Any:
        tape = RngTape(x.device.backend)
        stored: list[Tensor] = []
        log_det = None
        for i, block in enumerate(stack.blocks):
            if stack.debug:
                stored.append(x)
            x, block_log_det = block._couple(x, tape.recorder(i))
            if block_log_det is not None:
                log_det = block_log_det if log_det is None else log_det + block_log_det
        ctx.stack, ctx.tape, ctx.stored, ctx.params = stack, tape, stored, params
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x)
        if not with_log_det:
            return x
        if log_det is None:
            log_det = pb.zeros(x.shape[0], dtype=x.dtype, device=x.device)
        return x, log_det

    @staticmethod
    def backward(ctx: FunctionCtx, grad_y: Tensor | None,
                 grad_log_det: Tensor | None = None) -> tuple[Any, ...]:
        if pb.is_grad_enabled():
            raise AutogradError("ReversibleSequential: backward(create_graph=True) is not "
                                "supported (the blocks' graphs are rebuilt one at a time)")
        stack, tape = ctx.stack, ctx.tape
        (saved,) = ctx.saved_tensors
        assert saved is not None  # forward saved its output
        y = saved.detach()
        grad = pb.zeros_like(y) if grad_y is None else grad_y
        index = {id(p): i for i, p in enumerate(ctx.params)}
        param_grads: list[Any] = [None] * len(ctx.params)
        resume = tape.backend.get_rng_state()  # the stream goes on after backward as before
        try:
            for i in reversed(range(len(stack.blocks))):
                y, grad, pairs = stack.blocks[i]._pullback(y, grad, grad_log_det,
                                                            tape.replayer(i))
                if ctx.stored:
                    stack._check(i, y, ctx.stored[i])
                for p, g in pairs:
                    k = index[id(p)]
                    param_grads[k] = g if param_grads[k] is None else param_grads[k] + g
        finally:
            tape.backend.set_rng_state(resume)
        return (None, None, grad, *param_grads)
