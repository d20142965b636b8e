"""pullback: a deep-learning framework from first principles on NumPy (and CuPy).

Reverse-mode autodiff over a dynamic graph, an N-d Tensor with NumPy semantics, one op registry
that plugins extend, and a device registry. Optional parts are separate distributions that
contribute subpackages (``pullback.nn``, ``pullback.optim``, ...).
"""

# Other distributions contribute pullback.<name> subpackages without a pullback/__init__.py of
# their own: extend the package path over every "pullback" folder on sys.path (pkgutil style, in
# the exact form tools recognize without running it: the docs' API collector reads it so).
import warnings as _warnings
from typing import Any

__path__ = __import__("pkgutil").extend_path(__path__, __name__)

from .__about__ import __version__  # noqa: E402
from . import autograd, dtypes  # noqa: E402
from ._ops import (  # noqa: E402
    abs, add, all, amax, amin, any, argmax, argmin, bitwise_and, bitwise_left_shift,
    bitwise_not, bitwise_or, bitwise_right_shift, bitwise_xor, broadcast_to, cat, ceil, chunk,
    clamp, clip, clone, concatenate, contiguous, cos, cumsum, div, dot, einsum, eq, erf, exp,
    expand, expm1, flatten, flip, floor, floor_divide, fmod, frac, gather, ge, gelu, getitem,
    gt, index_select, is_floating_point, isfinite, isinf, isnan, le, leaky_relu, log, log1p,
    logical_and, logical_not, logical_or, logical_xor, logsumexp, lt, masked_fill, matmul, max,
    maximum, mean, min, minimum, mul, ne, neg, norm, one_hot, outer, pad, permute, pow, prod,
    reciprocal, relu, remainder, repeat, reshape, roll, round, rsqrt, scatter_add, sigmoid,
    sign, silu, sin, softplus, split, sqrt, square, squeeze, stack, std, sub, sum, sum_to,
    swapaxes, t, take_along_axis, tanh, tile, transpose, tril, triu, trunc, unbind, unsqueeze,
    var, view, where,
)
from ._ops import (  # noqa: E402 - the ops ported PyTorch code needs
    acos, acosh, addcdiv, addcmul, addmm, addmv, allclose, aminmax, arccos, arcsin, arctan,
    arctan2, argsort, argwhere, asin, asinh, atan, atan2, atanh, atleast_1d, atleast_2d,
    atleast_3d, baddbmm, bmm, broadcast_tensors, bucketize, copysign, cosh, count_nonzero, cross,
    cummax, cummin, cumprod, diag, diagonal, exp2, hsplit, hypot, inner, isclose, isneginf,
    isposinf, kron, kthvalue, lerp, log10, log2, logaddexp, logaddexp2, logcumsumexp,
    masked_select, median, mm, mode, movedim, mv, nan_to_num, nanmean, nanmedian, nansum, narrow,
    nonzero, quantile, repeat_interleave, rot90, searchsorted, sinc, sinh, sort, std_mean, tan,
    tensor_split, tensordot, topk, unflatten, unique, var_mean, vsplit, xlogy,
    index_add, index_copy, index_fill, masked_scatter, put, scatter, scatter_reduce, take,
    block_diag, cartesian_prod, diag_embed, meshgrid,
    bernoulli, multinomial, poisson, rand_like, randint_like, randn_like,
)
from . import linalg  # noqa: E402 - pullback.linalg, as torch.linalg
from .autograd import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: E402
from .autograd import is_grad_enabled  # noqa: E402
from .autograd import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: E402
from .creation import (  # noqa: E402
    arange, as_tensor, empty, empty_like, eye, from_dlpack, from_numpy, full, full_like,
    linspace, manual_seed, normal, ones, ones_like, rand, randint, randn, randperm, tensor,
    uniform, zeros, zeros_like,
)
from .backends import Backend, Device, devices, is_available, synchronize  # noqa: E402

device = Device  # pullback.device("cuda:0"), as torch.device
from .dispatch import DispatchMode, apply  # noqa: E402
from .dtypes import (  # noqa: E402
    bool_, can_cast, double, float16, float32, float64, get_default_dtype, half, int8,
    int16, int32, int64, long, promote_types, result_type, set_default_dtype, uint8,
)
from .errors import (  # noqa: E402
    ArgumentError, AutogradError, AxisError, DeviceError, DTypeError, IndexOutOfRangeError,
    PullbackError, ShapeError, UnsupportedDTypeError, UnsupportedError,
)
from .registry import Op, get_op  # noqa: E402
from .tensor import Tensor  # noqa: E402
from .serialization import load, save  # noqa: E402
from ._sparse import sparse_coo_tensor, spmm  # noqa: E402 - computed densely
from . import accelerator  # noqa: E402
from .random_generator import Generator  # noqa: E402
from ._cpu_parallel import get_num_threads, set_num_threads  # noqa: E402
from ._compile import compile  # noqa: E402, A004 - pullback.compile, as torch.compile
from ._introspection import (  # noqa: E402
    Size, dtype, finfo, get_rng_state, iinfo, is_tensor, numel, set_rng_state,
)
from ._legacy_tensors import (  # noqa: E402
    BoolTensor, ByteTensor, DoubleTensor, FloatTensor, IntTensor, LongTensor,
)
from .plugins import register_builtin as _register_builtin  # noqa: E402
from ._install_hint import SUBPACKAGES as _SUBPACKAGES  # noqa: E402
from .errors import MissingPackageError as _MissingPackageError  # noqa: E402
from ._install_hint import install_missing_subpackage_finder as _install_finder  # noqa: E402

bool = bool_  # noqa: A001 - pullback.bool, as torch.bool
float = float32  # noqa: A001
int = int32  # noqa: A001

_register_builtin()  # the other plugins load on first need (pullback.plugins)
_install_finder()

from . import amp  # noqa: E402 - pullback.amp, as torch.amp (its casts need core's ops loaded)
from .amp import (  # noqa: E402 - torch.autocast and its queries
    autocast, get_autocast_dtype, is_autocast_enabled,
)

# NumPy warns where PyTorch is silent (log(0) is -inf, 0/0 is nan, exp overflows to inf): ignore
# those warnings when they come from pullback's own kernels, and only there. A user's filter
# (``-W error``) still comes first.
_warnings.filterwarnings(
    "ignore", message=r"(divide by zero|invalid value|overflow|underflow) encountered",
    category=RuntimeWarning, module=r"pullback(\.|$)")

# Subpackages that ``import pullback as torch`` code reaches as attributes (``torch.optim.SGD``,
# ``torch.utils.data.DataLoader``) without importing them: imported on first use.
_LAZY_SUBPACKAGES = frozenset({"utils", "onnx", "testing", "debug", "random", "distributions",
                               "multiprocessing", *_SUBPACKAGES})


def __getattr__(name: str) -> Any:
    if name == "bfloat16":  # ml_dtypes is imported on first use (see pullback.dtypes)
        return dtypes._bfloat16()
    if name in _LAZY_SUBPACKAGES:
        import importlib

        try:
            return importlib.import_module(f"{__name__}.{name}")
        except _MissingPackageError as exc:  # hasattr(pullback, "sutra") stays a plain False
            raise AttributeError(str(exc)) from None
    raise AttributeError(f"module 'pullback' has no attribute '{name}'")
