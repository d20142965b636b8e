"""Core ops and the public functions over them (re-exported as ``pullback.<name>``)."""

from __future__ import annotations

from typing import Any

from ..dispatch import apply
from ..errors import ShapeError
from .conversion import clone, contiguous, to
from .bitwise import (
    bitwise_and, bitwise_left_shift, bitwise_not, bitwise_or, bitwise_right_shift, bitwise_xor,
)
from .elementwise import (
    abs, add, clamp, clip, cos, eq, erf, exp, expm1, ge, gelu, gt, isfinite, isinf, isnan, le,
    leaky_relu, log, log1p, logical_and, logical_not, logical_or, logical_xor, lt, maximum,
    minimum, mul, ne, neg, pow, reciprocal, relu, rsqrt, sigmoid, silu, sin, softplus, sqrt,
    square, sub, tanh, where,
)
from .like import (
    expand_as, is_floating_point, new_empty, new_full, new_ones, new_tensor, new_zeros,
    reshape_as, type_as, view_as,
)
from .rounding import ceil, div, floor, floor_divide, fmod, frac, remainder, round, sign, trunc
from .index import (
    gather, getitem, index_select, masked_fill, one_hot, scatter_add, take_along_axis,
)
from .linalg import SWAPAXES, dot, einsum, matmul, outer
from .mutation import copy_, fill_, fill_random_, inplace, setitem
from .reduce import (
    all, amax, amin, any, argmax, argmin, cumsum, logsumexp, max, mean, min, norm, prod, std,
    sum, sum_to, var,
)
from . import products, scans, scatter as scattering, shape_extra, sort as sorting
from . import decompositions, sampling, special_elementwise
from . import inplace_variants
from .sampling import (
    bernoulli, bernoulli_, exponential_, multinomial, poisson, rand_like, randint_like,
    randn_like,
)
from .scatter import (
    index_add, index_copy, index_fill, masked_scatter, put, scatter, scatter_reduce, take,
)
from .shape_extra import (
    atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_tensors, cartesian_prod, diag,
    diag_embed, diagonal, hsplit, meshgrid, movedim, narrow, repeat_interleave, rot90,
    tensor_split, unflatten, unfold, vsplit,
)
from .scans import (
    aminmax, count_nonzero, cummax, cummin, cumprod, logcumsumexp, nanmean, nansum, std_mean,
    var_mean,
)
from .sort import (
    argsort, argwhere, bucketize, kthvalue, masked_select, median, mode, nanmedian, nonzero,
    quantile, searchsorted, sort, topk, unique,
)
from .products import (
    addcdiv, addcmul, addmm, addmv, baddbmm, bmm, cross, inner, kron, mm, mv, tensordot,
)
from .special_elementwise import (
    acos, acosh, allclose, arccos, arcsin, arctan, arctan2, asin, asinh, atan, atan2, atanh,
    copysign, cosh, exp2, hypot, isclose, isneginf, isposinf, lerp, log10, log2, logaddexp,
    logaddexp2, nan_to_num, sinc, sinh, tan, xlogy,
)
from .shape import (
    broadcast_to, cat, chunk, concatenate, expand, flatten, flip, pad, permute, repeat, reshape,
    roll, split, squeeze, stack, swapaxes, t, tile, transpose, tril, triu, unbind, unsqueeze,
)


def matrix_transpose(x: Any) -> Any:
    """Swap the last two axes (``x.mT``)."""
    if x.ndim < 2:
        raise ShapeError(f"mT needs at least 2 dims, got shape {tuple(x.shape)}")
    return apply(SWAPAXES, x, a=-1, b=-2)


def view(x: Any, *shape: Any) -> Any:
    """PyTorch's ``view``: the same memory in a new shape; a ShapeError where the layout
    allows no view (use :func:`reshape`)."""
    from .shape import view as _view

    return _view(x, *shape)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Any:
    from ..creation import as_tensor as _as_tensor

    return _as_tensor(data, dtype=dtype, device=device)


def masked_fill_(x: Any, mask: Any, value: Any) -> Any:
    return inplace(x, masked_fill, mask, value)


globals().update(inplace_variants.VARIANTS)  # x.scatter_(...) and the other in-place variants

# Functions that are also Tensor methods (``x.sum(axis=0)`` is ``sum(x, axis=0)``).
TENSOR_METHODS = (
    "abs", "add", "sub", "mul", "div", "pow", "neg", "exp", "log", "log1p", "expm1", "sqrt",
    "rsqrt", "square", "reciprocal", "sin", "cos", "tanh", "sigmoid", "relu", "leaky_relu",
    "gelu", "silu", "softplus", "erf", "clamp", "clip", "maximum", "minimum", "sign", "floor",
    "ceil", "round", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
    "logical_not", "logical_xor", "isnan", "isinf", "isfinite", "sum", "mean", "prod", "max",
    "min", "amax", "amin", "argmax", "argmin", "var", "std", "logsumexp", "norm", "cumsum", "all",
    "any", "reshape", "view", "flatten", "permute", "transpose", "swapaxes", "squeeze",
    "unsqueeze", "expand", "broadcast_to", "split", "chunk", "unbind", "flip", "roll", "repeat",
    "tile", "tril", "triu", "gather", "scatter_add", "index_select", "masked_fill",
    "take_along_axis", "matmul", "dot", "outer", "sum_to", "floor_divide", "remainder", "fmod",
    "trunc", "frac", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "bitwise_left_shift", "bitwise_right_shift", "type_as", "new_zeros", "new_ones", "new_full",
    "new_empty", "new_tensor", "is_floating_point", "t", "expand_as", "view_as", "reshape_as",
    # The ops ported code needs beyond these, each module listing its own.
    *special_elementwise.METHODS, *products.METHODS, *scans.METHODS, *sorting.METHODS,
    *shape_extra.METHODS, *scattering.METHODS, *sampling.METHODS, *inplace_variants.METHODS,
)
