"""2-d convolutions as one GEMM per image (``_csrc/im2col.c``'s ``conv_*_f32``): each image's
columns are built, multiplied and dropped while they sit in the core's cache, where the batched
im2col of ``conv.py`` writes the whole batch's columns to memory and reads them back.

Measured on the project's 2-core Xeon, one thread, CPU time (``pytorch/examples``' mnist conv2,
32 -> 64 channels, 3x3, 26x26, batch 64): the batched im2col alone took 8.2 ms of the forward's
19 ms (PyTorch: 10.5 ms).

Covered: float32 NumPy arrays, groups 1, MKL the GEMM provider (the kernels call its
``cblas_sgemm``: the products are MKL's, as every product of the process), a C compiler. Each
function returns ``NotImplemented`` otherwise and the op's batched im2col kernel runs. The
batch is split into one chunk of images per thread; the weight gradient adds each chunk's images
into one product in order, then the chunks' products.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import pullback
from pullback import _gemm, native
from pullback._memo import remembered

from . import _native
from .geometry import PaddingNd, Sizes

_CBLAS_INT_MAX = 2**31 - 1


def _sgemm() -> int | None:
    """The address of the provider's ``cblas_sgemm``, or ``None`` (NumPy is the provider)."""
    lib = _gemm.mkl()
    return None if lib is None else lib.gemm["float32"][0]


def _chunks(n: int) -> int:
    """How many chunks of images a batch of ``n`` is split into: one per thread."""
    return max(1, min(pullback.get_num_threads(), n))


# Each kernel's pointer arguments after the row range: the GEMM, its arrays (the forward's
# bias among them), the failure flags and the dims array.
_POINTERS = {"conv_forward_f32": 7, "conv_input_grad_f32": 6, "conv_weight_grad_f32": 6}


def _kernel(name: str) -> Any:
    """im2col.c's ctypes function ``name``, or ``None`` without a C compiler."""
    return _native._function(name, _POINTERS[name], 0, source="im2col")


class _Plan(NamedTuple):
    """One geometry's call of a kernel: the ctypes function, the address of ``cblas_sgemm``,
    the ``dims`` array im2col.c takes (n, chunks, c, o, h, w, then the window sizes), the
    chunks and the work of one chunk (for run_rows)."""

    kernel: Any
    gemm: int
    dims: np.ndarray
    chunks: int
    work: int


def _plan(name: str, n: int, c: int, o: int, spatial: tuple[int, int],
          sizes: tuple[int, ...]) -> _Plan | None:
    """The call of ``name`` on a geometry (``None`` without a C compiler or MKL), kept per
    geometry and thread count: a batch-1 convolution's C call took about 6 us, the sixteen
    sizes passed one by one 2 us more and the look-ups around them 3 us."""
    def build() -> _Plan | None:
        kernel = _kernel(name)
        gemm = _sgemm()
        if kernel is None or gemm is None:
            return None
        chunks = _chunks(n)
        kh, kw, ho, wo = sizes[:4]
        return _Plan(kernel, gemm, np.array((n, chunks, c, o, *spatial, *sizes), np.int64),
                     chunks, (n // chunks) * o * c * kh * kw * ho * wo)

    return remembered(_PLANS, (name, n, c, o, spatial, sizes, pullback.get_num_threads()), 256,
                      build)


_PLANS: dict[tuple[Any, ...], _Plan | None] = {}


def _run(plan: _Plan | None, *arrays: Any) -> bool:
    """The plan's kernel over the batch's chunks (``False`` for no plan); MemoryError where a
    thread could not allocate its columns. ``None`` in ``arrays`` goes to C as NULL."""
    if plan is None:
        return False
    chunks = plan.chunks
    failed = np.zeros(chunks, np.int64)
    address = native.address
    native.run_rows(plan.kernel, chunks, plan.work, plan.gemm,
                    *[None if a is None else address(a) for a in arrays], address(failed),
                    address(plan.dims))
    if failed[0] or (chunks > 1 and failed.any()):
        c, kh, kw, ho, wo = plan.dims[[2, 6, 7, 8, 9]].tolist()
        raise MemoryError(f"convolution: no memory for one image's columns ({c * kh * kw} x "
                          f"{ho * wo} floats)")
    return True


def _covers(groups: int, *arrays: Any) -> list[Any] | None:
    """The arrays as C-contiguous float32 ones (``None`` entries kept), or ``None`` when these
    kernels do not apply. Small arrays are covered too: the op's batched kernel costs more in
    Python than one C call at any size (a batch-1 convolution of 1x28x28: 26 us against 9)."""
    if groups != 1 or _sgemm() is None:
        return None
    found = []
    for a in arrays:
        if a is not None:
            if (a.__class__ is not np.ndarray or a.dtype != np.float32 or a.size == 0
                    or (a.size > _CBLAS_INT_MAX and max(a.shape) > _CBLAS_INT_MAX)):
                return None  # (an empty operand has no product: MKL would refuse its sizes)
            if not a.flags.c_contiguous:
                a = np.ascontiguousarray(a)
        found.append(a)
    return found


def runs_per_image(dtype: Any, groups: int) -> bool:
    """Whether a 2-d convolution of ``dtype`` with ``groups`` runs here (one GEMM per image)
    rather than as the op's batched im2col."""
    return (np.dtype(dtype) == np.float32 and groups == 1 and _sgemm() is not None
            and _kernel("conv_forward_f32") is not None)


def conv2d(x: Any, w: Any, b: Any, stride: Sizes, padding: PaddingNd, dilation: Sizes,
           groups: int, where: str = "nn.conv2d") -> Any:
    """The convolution (N, O, Ho, Wo) of ``x`` by ``w``, plus the bias ``b`` (or ``None``), or
    ``NotImplemented``. The geometry is checked first."""
    found = _covers(groups, x, w, b)
    if found is None:
        return NotImplemented
    x, w, b = found
    key = (where, x.shape, w.shape, None if b is None else b.shape, stride, padding, dilation,
           pullback.get_num_threads())
    out_shape, plan = remembered(_FORWARD, key, 256, lambda: _forward_plan(
        where, x.shape, w.shape, None if b is None else b.shape, stride, padding, dilation))
    if out_shape is None:
        return NotImplemented
    y = np.empty(out_shape, np.float32)
    if not _run(plan, x, w, b, y):
        return NotImplemented
    return y


def _forward_plan(where: str, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                  b_shape: tuple[int, ...] | None, stride: Sizes, padding: PaddingNd,
                  dilation: Sizes) -> tuple[Any, _Plan | None]:
    """The output shape and the plan of a forward, the geometry checked; ``(None, None)``
    for shapes the op's kernel refuses (it raises their error) or CBLAS cannot take."""
    if (len(x_shape) != 4 or len(w_shape) != 4 or w_shape[1] != x_shape[1]
            or (b_shape is not None and b_shape != w_shape[:1])):
        return None, None
    (n, c, h, wd), o = x_shape, w_shape[0]
    out_hw, sizes = _native.window_sizes(where, x_shape, w_shape[2:], stride, padding, dilation)
    if c * w_shape[2] * w_shape[3] > _CBLAS_INT_MAX or out_hw[0] * out_hw[1] > _CBLAS_INT_MAX:
        return None, None
    return (n, o) + out_hw, _plan("conv_forward_f32", n, c, o, (h, wd), sizes)


# The forwards' output shapes and plans, by (where, shapes, window arguments, threads).
_FORWARD: dict[tuple[Any, ...], tuple[Any, _Plan | None]] = {}


def conv2d_input_grad(g: Any, w: Any, input_shape: tuple[int, ...], stride: Sizes,
                      padding: PaddingNd, dilation: Sizes, groups: int) -> Any:
    """The input gradient (``input_shape``) of the convolution from its output's gradient
    ``g``, or ``NotImplemented``."""
    found = _covers(groups, g, w)
    if found is None or len(input_shape) != 4:
        return NotImplemented
    g, w = found
    (n, o), (c, h, wd) = g.shape[:2], input_shape[1:]
    if g.ndim != 4 or w.ndim != 4 or w.shape[:2] != (o, c) or input_shape[0] != n:
        return NotImplemented  # the op's kernel raises its shape error
    sizes = _native._geometry("nn.conv2d_input_grad", tuple(input_shape), tuple(w.shape[2:]),
                              tuple(g.shape[2:]), stride, padding, dilation)
    if c * w.shape[2] * w.shape[3] > _CBLAS_INT_MAX:
        return NotImplemented
    dx = np.empty(tuple(input_shape), np.float32)
    if not _run(_plan("conv_input_grad_f32", n, c, o, (h, wd), sizes), g, w, dx):
        return NotImplemented
    return dx


def conv2d_weight_grad(x: Any, g: Any, weight_shape: tuple[int, ...], stride: Sizes,
                       padding: PaddingNd, dilation: Sizes, groups: int) -> Any:
    """The weight gradient (``weight_shape``) of the convolution of ``x`` from its output's
    gradient ``g``, or ``NotImplemented``."""
    found = _covers(groups, x, g)
    if found is None or len(weight_shape) != 4:
        return NotImplemented
    x, g = found
    (n, c, h, wd), o = x.shape, weight_shape[0]
    if g.ndim != 4 or g.shape[:2] != (n, o) or weight_shape[1] != c:
        return NotImplemented  # the op's kernel raises its shape error
    sizes = _native._geometry("nn.conv2d_weight_grad", tuple(x.shape), tuple(weight_shape[2:]),
                              tuple(g.shape[2:]), stride, padding, dilation)
    ckk = c * weight_shape[2] * weight_shape[3]
    if ckk > _CBLAS_INT_MAX or g.shape[2] * g.shape[3] > _CBLAS_INT_MAX:
        return NotImplemented
    parts = np.empty((_chunks(n), o, ckk), np.float32)
    if not _run(_plan("conv_weight_grad_f32", n, c, o, (h, wd), sizes), x, g, parts):
        return NotImplemented
    dw = parts[0]
    for part in parts[1:]:  # in chunk order: reproducible rounding
        dw += part
    return dw.reshape(weight_shape)
