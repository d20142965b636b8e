"""``Resize`` (and the older ``Upsample``), ``GridSample`` and ``AffineGrid``.

Resize is separable: each resized axis is a matrix product with an (output x input)
interpolation matrix built from ONNX's definitions (the coordinate transformation mode, then
the nearest, linear or cubic weights of the neighbours, antialiased when asked, the neighbours
clamped to the edge or dropped with ``exclude_outside``). The matrices depend only on sizes,
so the data's path is pullback's matmul: an imported Resize trains.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

import pullback as pb
import pullback.nn.functional as F
from pullback.tensor import Tensor

from . import NodeContext, converter, floats, ints, optional, text


def _nearest(mode: str) -> Callable[[float, float], np.ndarray]:
    def weights(ratio: float, scale: float) -> np.ndarray:
        if ratio == 1.0:  # an integer source coordinate: itself
            return np.array([0.0, 1.0])
        pick_high = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5,
                     "floor": False, "ceil": True}[mode]
        return np.array([0.0, 1.0]) if pick_high else np.array([1.0, 0.0])
    return weights


def _linear(antialias: bool) -> Callable[[float, float], np.ndarray]:
    def weights(ratio: float, scale: float) -> np.ndarray:
        if not antialias:
            return np.array([1 - ratio, ratio])
        scale = min(scale, 1.0)  # a wider triangle when shrinking
        start = int(math.floor(-1 / scale) + 1)
        taps = (np.arange(start, 2 - start) - ratio) * scale
        w = np.clip(1 - np.abs(taps), 0, 1)
        return w / w.sum()
    return weights


def _cubic(a: float, antialias: bool) -> Callable[[float, float], np.ndarray]:
    def kernel(x: np.ndarray) -> np.ndarray:
        x = np.abs(x)
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return np.where(x <= 1, near, np.where(x < 2, far, 0.0))

    def weights(ratio: float, scale: float) -> np.ndarray:
        if not antialias:
            return kernel(np.array([ratio + 1, ratio, 1 - ratio, 2 - ratio]))
        scale = min(scale, 1.0)
        start = int(math.floor(-2 / scale) + 1)
        w = kernel(scale * (np.arange(start, 2 - start) - ratio))
        return w / w.sum()
    return weights


def _source_coordinates(mode: str, out: int, size: int, scale: float,
                        roi: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Each output position's coordinate in the input, and (tf_crop_and_resize) which ones
    fall outside it."""
    y = np.arange(out, dtype=np.float64)
    width = scale * size
    if mode == "align_corners":
        return (np.zeros(out) if width == 1 else y * (size - 1) / (width - 1)), None
    if mode == "asymmetric":
        return y / scale, None
    if mode == "tf_crop_and_resize":
        start, end = roi if roi is not None else (0.0, 1.0)
        x = np.full(out, (end - start) * (size - 1) / 2) if width == 1 else \
            y * (end - start) * (size - 1) / (width - 1)
        x = x + start * (size - 1)
        return x, (x < 0) | (x > size - 1)
    if mode == "pytorch_half_pixel":
        return (np.full(out, -0.5) if width == 1 else (y + 0.5) / scale - 0.5), None
    if mode == "half_pixel":
        return (y + 0.5) / scale - 0.5, None
    if mode == "half_pixel_symmetric":
        offset = size / 2 * (1 - out / width)
        return offset + (y + 0.5) / scale - 0.5, None
    raise NotImplementedError(f"coordinate_transformation_mode {mode!r}")


def _matrix(out: int, size: int, scale: float, coordinates: np.ndarray,
            weights: Callable[[float, float], np.ndarray], exclude_outside: bool) -> np.ndarray:
    """The (out, size) interpolation matrix of one axis."""
    base = np.floor(coordinates)
    ratios = np.where(coordinates == base, 1.0, coordinates - base)
    coeffs = np.stack([weights(float(r), scale) for r in ratios]) if out else \
        np.zeros((0, 2))
    n = coeffs.shape[1]
    pad = int(math.ceil(n / 2))  # the neighbours: n positions around the coordinate
    shifted = coordinates + pad
    floor = np.floor(shifted)
    frac = shifted - floor
    if n % 2 == 0:
        offset = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        offset = np.where(frac <= 0.5, -((n - 1) // 2), -((n - 1) // 2) + 1)
    neighbours = (floor + offset).astype(np.int64)[:, None] + np.arange(n)[None, :] - pad
    if exclude_outside:
        coeffs = np.where((neighbours < 0) | (neighbours >= size), 0.0, coeffs)
        total = coeffs.sum(axis=1, keepdims=True)
        coeffs = coeffs / np.where(total == 0, 1.0, total)
    matrix = np.zeros((out, size))
    rows = np.repeat(np.arange(out), n)
    np.add.at(matrix, (rows, np.clip(neighbours, 0, size - 1).reshape(-1)), coeffs.reshape(-1))
    return matrix


def _sizes_and_scales(x: Tensor, ins: list[Any], attrs: dict[str, Any]
                      ) -> tuple[list[int], list[float], list[int]]:
    axes = [a % x.ndim for a in attrs.get("axes", range(x.ndim))]
    scales_in, sizes_in = optional(ins, 2), optional(ins, 3)
    if sizes_in is not None and sizes_in.shape[0]:
        wanted = ints(sizes_in)
        scales = [wanted[i] / x.shape[a] for i, a in enumerate(axes)]
        policy = text(attrs.get("keep_aspect_ratio_policy", "stretch"))
        if policy != "stretch":
            scale = min(scales) if policy == "not_larger" else max(scales)
            scales = [scale] * len(axes)
            wanted = [int(scale * x.shape[a] + 0.5) for a in axes]
        return axes, scales, wanted
    if scales_in is None or not scales_in.shape[0]:
        raise ValueError("Resize needs scales or sizes")
    scales = floats(scales_in)
    return axes, scales, [int(s * x.shape[a]) for s, a in zip(scales, axes)]


def resize(x: Tensor, ins: list[Any], attrs: dict[str, Any]) -> Tensor:
    mode = text(attrs.get("mode", "nearest"))
    antialias = bool(attrs.get("antialias", 0))
    weights = {"nearest": lambda: _nearest(text(attrs.get("nearest_mode", "round_prefer_floor"))),
               "linear": lambda: _linear(antialias),
               "cubic": lambda: _cubic(float(attrs.get("cubic_coeff_a", -0.75)), antialias)
               }[mode]()
    transform = text(attrs.get("coordinate_transformation_mode", "half_pixel"))
    axes, scales, sizes = _sizes_and_scales(x, ins, attrs)
    roi_values = floats(ins[1]) if optional(ins, 1) is not None and ins[1].shape[0] else None
    dtype = x.dtype
    y = x if dtype.kind == "f" else x.to(np.float64)
    outside = None
    for i, (axis, scale, out) in enumerate(zip(axes, scales, sizes)):
        size = x.shape[axis]
        roi = (roi_values[i], roi_values[i + len(axes)]) if roi_values is not None else None
        if math.isclose(scale, 1.0) and out == size and roi in (None, (0.0, 1.0)):
            continue
        coordinates, extrapolated = _source_coordinates(transform, out, size, scale, roi)
        matrix = _matrix(out, size, scale, coordinates, weights,
                         bool(attrs.get("exclude_outside", 0)))
        y = (y.movedim(axis, -1) @ pb.tensor(matrix.T.astype(y.dtype))).movedim(-1, axis)
        if extrapolated is not None:
            mask = pb.tensor(extrapolated.reshape(
                tuple(out if d == axis else 1 for d in range(x.ndim))))
            outside = mask if outside is None else pb.logical_or(outside, mask)
    if outside is not None:
        y = pb.where(outside, float(attrs.get("extrapolation_value", 0.0)), y)
    if dtype.kind in "iu":  # the reference rounds half to even and saturates
        info = np.iinfo(dtype)
        y = pb.clamp(pb.round(y), info.min, info.max)
    return y.to(dtype)


@converter("Resize")
def _resize(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    if node.opset < 11:  # Resize-10: scales as the second input, asymmetric coordinates
        attrs = {"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor", **attrs}
        ins = [ins[0], None, ins[1]]
    return [resize(ins[0], ins, attrs)]


@converter("Upsample")
def _upsample(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    scales = ins[1] if optional(ins, 1) is not None else pb.tensor(np.array(attrs["scales"]))
    mode = text(attrs.get("mode", "nearest"))
    return [resize(ins[0], [ins[0], None, scales],
                   {"mode": mode, "coordinate_transformation_mode": "asymmetric",
                    "nearest_mode": "floor"})]


@converter("GridSample")
def _grid_sample(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    mode = text(attrs.get("mode", "linear" if node.opset >= 20 else "bilinear"))
    mode = {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode)
    return [F.grid_sample(ins[0], ins[1], mode=mode,
                          padding_mode=text(attrs.get("padding_mode", "zeros")),
                          align_corners=bool(attrs.get("align_corners", 0)))]


@converter("AffineGrid")
def _affine_grid(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [F.affine_grid(ins[0], ints(ins[1]),
                          align_corners=bool(attrs.get("align_corners", 0)))]
