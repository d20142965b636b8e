"""A seeded generator with NumPy's ``Generator`` methods over a Philox4x32-10 stream.

CuPy's own generators keep their state on the GPU in a form that cannot be read back, so a
checkpoint could not resume them. This one, like PyTorch's CUDA generator, is counter based:
its whole state is ``{"seed", "offset"}`` (offset counted in 128-bit Philox blocks), plain JSON.
The raw blocks come from a function passed in (the CUDA kernel in :mod:`._kernels.philox`; the
tests pass a NumPy implementation and check that both give the same bits); the methods below turn
them into samples with array operations of any NumPy-compatible namespace ``xp``.

The methods that pullback's packages call are provided: ``random``, ``standard_normal``,
``integers`` and ``permutation`` (:mod:`pullback.creation`), ``uniform`` and ``normal``
(``pullback.nn.init``), with NumPy's signatures and defaults.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Callable, ContextManager

import numpy as np

BlocksFn = Callable[[int, int, int], Any]  # (blocks, seed, offset) -> 4*blocks uint32 words

_MASK64 = (1 << 64) - 1


def _shape(size: Any) -> tuple[int, ...]:
    if size is None:
        return ()
    if isinstance(size, (int, np.integer)):
        return (int(size),)
    return tuple(int(s) for s in size)


class PhiloxGenerator:
    """Samples from the Philox4x32-10 stream of ``seed``, starting at block ``offset``.

    Args:
        xp: the array namespace samples are built with (CuPy on the GPU).
        blocks: ``blocks(n, seed, offset)`` returns ``4 * n`` uint32 words, blocks
            ``offset .. offset + n - 1`` of the stream.
        seed: the stream's key (taken modulo 2**64, so negative seeds work as in PyTorch).
        scope: a context manager factory entered around each draw (the CUDA device of the
            generator), or ``None``.
    """

    def __init__(self, xp: Any, blocks: BlocksFn, seed: int = 0,
                 scope: Callable[[], ContextManager[Any]] | None = None) -> None:
        self._xp = xp
        self._blocks = blocks
        self._scope = scope or contextlib.nullcontext
        self.seed = int(seed) & _MASK64
        self.offset = 0

    # -- state ----------------------------------------------------------------------------------
    def get_state(self) -> dict[str, int]:
        """``{"seed": int, "offset": int}``: everything needed to resume the stream."""
        return {"seed": self.seed, "offset": self.offset}

    def set_state(self, state: dict[str, Any]) -> None:
        """Resume from a :meth:`get_state` snapshot."""
        try:
            seed, offset = int(state["seed"]), int(state["offset"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"a Philox generator state is {{'seed': int, 'offset': int}}, "
                             f"got {state!r}") from None
        if not 0 <= seed <= _MASK64 or not 0 <= offset <= _MASK64:
            raise ValueError(f"Philox seed and offset must be in [0, 2**64), got {state!r}")
        self.seed, self.offset = seed, offset

    # -- raw words ------------------------------------------------------------------------------
    def _words(self, n: int) -> Any:
        """The next ``n`` 32-bit words (whole blocks are consumed, as cuRAND does)."""
        blocks = -(-n // 4)
        words = self._blocks(blocks, self.seed, self.offset)
        self.offset = (self.offset + blocks) & _MASK64
        return words[:n]

    def _uint64(self, n: int) -> Any:
        xp = self._xp
        w = self._words(2 * n).astype(xp.uint64)
        return (w[0::2] << xp.uint64(32)) | w[1::2]

    # -- samples --------------------------------------------------------------------------------
    def random(self, size: Any = None, dtype: Any = np.float64) -> Any:
        """Uniform floats in [0, 1) with every representable multiple of 2**-24 (float32) or
        2**-53 (float64) equally likely, as NumPy's generators make them."""
        shape, dt = _shape(size), np.dtype(dtype)
        with self._scope():
            return self._uniform(math.prod(shape), dt).reshape(shape)

    def _uniform(self, n: int, dt: np.dtype) -> Any:
        xp = self._xp
        if dt == np.float32:
            w = self._words(n)
            return (w >> xp.uint32(8)).astype(xp.float32) * xp.float32(2.0**-24)
        if dt == np.float64:
            w = self._words(2 * n)
            high = (w[0::2] >> xp.uint32(5)).astype(xp.float64)  # 27 bits
            low = (w[1::2] >> xp.uint32(6)).astype(xp.float64)   # 26 bits
            return (high * 67108864.0 + low) * (2.0**-53)
        raise TypeError(f"random: unsupported dtype {dt} (float32 or float64)")

    def standard_normal(self, size: Any = None, dtype: Any = np.float64) -> Any:
        """Standard normal floats (Box-Muller: each pair of uniforms gives two samples)."""
        shape, dt = _shape(size), np.dtype(dtype)
        xp = self._xp
        n = math.prod(shape)
        with self._scope():
            pairs = -(-n // 2)
            u = self._uniform(2 * pairs, dt)
            radius = xp.sqrt(dt.type(-2.0) * xp.log(dt.type(1.0) - u[0::2]))  # 1 - u in (0, 1]
            angle = dt.type(2.0 * math.pi) * u[1::2]
            z = xp.concatenate([radius * xp.cos(angle), radius * xp.sin(angle)])
            return z[:n].reshape(shape)

    def uniform(self, low: float = 0.0, high: float = 1.0, size: Any = None) -> Any:
        """Floats (float64, as NumPy's) uniform in ``[low, high)``."""
        return self.random(size, np.float64) * (high - low) + low

    def normal(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> Any:
        """Floats (float64, as NumPy's) from N(loc, scale**2)."""
        return self.standard_normal(size, np.float64) * scale + loc

    def integers(self, low: int, high: int | None = None, size: Any = None,
                 dtype: Any = np.int64, endpoint: bool = False) -> Any:
        """Integers in ``[low, high)`` (``[low, high]`` with ``endpoint``); ``integers(n)`` is
        ``[0, n)``. A 64-bit word modulo the range: the bias is below range / 2**64."""
        if high is None:
            low, high = 0, low
        low, high = int(low), int(high)
        span = high - low + (1 if endpoint else 0)
        if span <= 0:
            raise ValueError(f"integers: low >= high ({low}, {high})")
        if span > 1 << 63:
            raise ValueError(f"integers: ranges wider than 2**63 are not supported ({low}, {high})")
        dt = np.dtype(dtype)
        if dt.kind not in "iu":
            raise TypeError(f"integers: dtype must be an integer type, got {dt}")
        info = np.iinfo(dt)
        if low < info.min or high - (0 if endpoint else 1) > info.max:
            raise ValueError(f"integers: [{low}, {high}) does not fit {dt}")
        shape = _shape(size)
        xp = self._xp
        with self._scope():
            offset = self._uint64(math.prod(shape)) % xp.uint64(span)
            return (offset.astype(xp.int64) + low).astype(dt).reshape(shape)

    def permutation(self, x: Any) -> Any:
        """A random permutation of ``range(x)`` (int64), or of ``x``'s first axis."""
        xp = self._xp
        with self._scope():
            n = int(x) if isinstance(x, (int, np.integer)) else len(x)
            order = xp.argsort(self._uint64(n)).astype(xp.int64)
            return order if isinstance(x, (int, np.integer)) else x[order]
