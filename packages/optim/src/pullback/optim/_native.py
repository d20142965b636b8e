"""Native (C) versions of the update helpers of :mod:`._kernels`, on float32 NumPy arrays.

Why: an SGD step over a 784 x 256 weight ran ``target += alpha * source`` as two NumPy passes
(the product into a scratch array, then the add), 4 MB of memory traffic per 800 KB parameter;
one C pass moves 2.4 MB and shares the elements over pullback's threads
(:func:`pullback.native.run_rows`). The results are NumPy's two passes' bits (see
``_csrc/updates.c``). Without a C compiler, or for arrays this does not cover, the helpers run
their NumPy passes.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np

from pullback import native

_SOURCE = Path(__file__).parent / "_csrc" / "updates.c"


@lru_cache(maxsize=None)
def _kernel(name: str, n_pointers: int, n_floats: int,
            n_sizes: int = 0) -> Callable[..., None] | None:
    library = native.load("optim_updates", _SOURCE)
    return None if library is None else native.declare(library, name, n_pointers, n_sizes,
                                                       n_floats)


def _covered(arrays: tuple[Any, ...]) -> bool:
    """Whether a kernel taking the array it updates first, then the one it only reads (a
    gradient, ``add_scaled``'s source), then state arrays covers these: C-contiguous float32
    NumPy arrays of one shape, large enough for a C call to pay, all but the second writable,
    no two overlapping."""
    first = arrays[0]
    return (all(a.__class__ is np.ndarray and a.dtype == np.float32 and a.flags.c_contiguous
                and a.shape == first.shape for a in arrays)
            and first.size >= native.MIN_NATIVE_ELEMENTS
            and all(a.flags.writeable for i, a in enumerate(arrays) if i != 1)
            and not any(np.may_share_memory(a, b) for i, a in enumerate(arrays)
                        for b in arrays[i + 1:]))


def add_scaled(target: Any, source: Any, alpha: float) -> bool:
    """``target += alpha * source`` in one pass, and ``True``; ``False`` (nothing done) unless
    both are C-contiguous float32 NumPy arrays of one shape, large enough for a C call to pay
    (:data:`pullback.native.MIN_NATIVE_ELEMENTS`), not overlapping, and the kernel built."""
    if not _covered((target, source)):
        return False
    kernel = _kernel("add_scaled_f32", 2, 1)
    if kernel is None:
        return False
    native.run_rows(kernel, target.size, 1, native.address(target), native.address(source),
                    alpha)
    return True


def adadelta(param: Any, grad: Any, square_avg: Any, acc_delta: Any, rho: float, eps: float,
             lr: float) -> bool:
    """Adadelta's update of one parameter in one pass (see ``_csrc/updates.c``), and ``True``;
    ``False`` (nothing done) unless all four are C-contiguous float32 NumPy arrays of one
    shape, large enough, the state arrays writable and not overlapping the others."""
    arrays = (param, grad, square_avg, acc_delta)
    if not _covered(arrays):
        return False
    kernel = _kernel("adadelta_f32", 4, 4)
    if kernel is None:
        return False
    native.run_rows(kernel, param.size, 8, *(native.address(a) for a in arrays),
                    rho, 1.0 - rho, eps, -lr)
    return True


def adam(param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any, *, decay: float | None,
         l2: float | None, one_minus_beta1: float, one_minus_beta2: float, bias2_sqrt: float,
         eps: float, neg_step_size: float) -> bool:
    """Adam's update of one parameter without AMSGrad in one pass (see ``_csrc/updates.c``;
    ``decay``: AdamW's factor, ``l2``: Adam's coupled decay, ``None`` where the group has
    none), and ``True``; ``False`` (nothing done) unless all four are C-contiguous float32 NumPy
    arrays of one shape, large enough, the updated ones writable and none overlapping."""
    arrays = (param, grad, exp_avg, exp_avg_sq)
    if not _covered(arrays):
        return False
    kernel = _kernel("adam_f32", 4, 7, 2)
    if kernel is None:
        return False
    native.run_rows(kernel, param.size, 16, *(native.address(a) for a in arrays),
                    decay is not None, l2 is not None, 1.0 if decay is None else decay,
                    0.0 if l2 is None else l2, one_minus_beta1, one_minus_beta2, bias2_sqrt,
                    eps, neg_step_size)
    return True
