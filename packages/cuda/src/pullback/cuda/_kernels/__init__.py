"""Hand-written CUDA kernels and the ops they serve.

Each ``.cu`` file here has a Python module of the same name that plans its launches and calls
it. :data:`OP_KERNELS` lists the ops that get a cuda kernel through the ``register_kernels``
hook; each is wrapped in a :class:`CustomKernel`, which runs the hand-written kernel when its
switch is on and it covers the inputs, and the op's generic (CuPy) kernel otherwise.
"""

from __future__ import annotations

from typing import Any, Callable

from .._switches import enabled
from . import layer_norm, matmul, softmax


def _linear(x: Any, w: Any, b: Any) -> Any:
    """``x @ w.T + b`` with the custom matmul (it reads ``w.T`` without a copy)."""
    y = matmul.matmul(x, w.T)
    if y is NotImplemented:
        return y
    if b is not None:
        y += b
    return y


# (op, switch, kernel): the kernel returns NotImplemented for inputs it does not cover.
OP_KERNELS: tuple[tuple[str, str, Callable[..., Any]], ...] = (
    ("matmul", "matmul", matmul.matmul),
    ("nn.linear", "matmul", _linear),
    ("nn.softmax", "softmax", softmax.softmax),
    ("nn.softmax_backward", "softmax", softmax.softmax_backward),
    ("nn.layer_norm", "layer_norm", layer_norm.layer_norm),
    ("nn.layer_norm_backward", "layer_norm", layer_norm.layer_norm_backward),
)


class CustomKernel:
    """The cuda kernel of one op: ``run`` when switch ``switch`` is on and ``run`` does not
    return ``NotImplemented``, else the op's generic kernel built on CuPy.

    The generic kernel is built on first call (the op may be registered after this kernel, and
    CuPy is only imported where a GPU is used).
    """

    def __init__(self, op_name: str, switch: str, run: Callable[..., Any],
                 backend: str = "cuda") -> None:
        self.op_name = op_name
        self.switch = switch
        self.run = run
        self.backend = backend
        self._impl: Callable[..., Any] | None = None

    def __repr__(self) -> str:
        return f"CustomKernel({self.op_name!r}, switch={self.switch!r})"

    def __call__(self, *arrays: Any, **attrs: Any) -> Any:
        impl = self._impl
        if impl is None:
            impl = self._impl = self._build()
        return impl(*arrays, **attrs)

    def _build(self) -> Callable[..., Any]:
        from pullback.backends import get_backend
        from pullback.registry import get_op

        backend = get_backend(self.backend)
        op = get_op(self.op_name)
        assert op.generic is not None, f"op '{op.name}' has no generic kernel to fall back to"
        generic = op.generic(backend.xp)
        run, switch = self.run, self.switch

        def kernel(*arrays: Any, **attrs: Any) -> Any:
            if enabled(switch):
                out = run(*arrays, **attrs)
                if out is not NotImplemented:
                    return out
            return generic(*arrays, **attrs)

        return backend.adapt_kernel(op, kernel)
