"""Object detection: ``NonMaxSuppression``. Its output is a list of indices, computed in
NumPy from the boxes' and scores' values (nothing to differentiate)."""

from __future__ import annotations

from typing import Any

import numpy as np

import pullback as pb

from . import NodeContext, converter, optional, scalar


def _corners(box: np.ndarray, center_point: bool) -> tuple[float, float, float, float]:
    """(y_min, x_min, y_max, x_max) of a box given by two corners in any order, or by its
    center and size."""
    if center_point:
        x, y, w, h = box
        return y - h / 2, x - w / 2, y + h / 2, x + w / 2
    y1, x1, y2, x2 = box
    return min(y1, y2), min(x1, x2), max(y1, y2), max(x1, x2)


def _overlaps(a: np.ndarray, b: np.ndarray, center_point: bool, threshold: float) -> bool:
    ay0, ax0, ay1, ax1 = _corners(a, center_point)
    by0, bx0, by1, bx1 = _corners(b, center_point)
    width, height = min(ax1, bx1) - max(ax0, bx0), min(ay1, by1) - max(ay0, by0)
    if width <= 0 or height <= 0:
        return False
    inter = width * height
    area_a, area_b = (ax1 - ax0) * (ay1 - ay0), (bx1 - bx0) * (by1 - by0)
    union = area_a + area_b - inter
    if area_a <= 0 or area_b <= 0 or union <= 0:
        return False
    return inter / union > threshold


@converter("NonMaxSuppression")
def _non_max_suppression(ins: list[Any], attrs: dict[str, Any], node: NodeContext
                         ) -> list[Any]:
    """Per batch and class, the boxes by descending score (the lower index first among equal
    scores) that overlap no box kept before by more than ``iou_threshold``."""
    boxes = ins[0].detach().numpy().astype(np.float64)
    scores = ins[1].detach().numpy().astype(np.float64)
    limit = optional(ins, 2)
    limit = int(scalar(limit)) if limit is not None and limit.numel() else 0
    iou = optional(ins, 3)
    iou = float(scalar(iou)) if iou is not None and iou.numel() else 0.0
    floor = optional(ins, 4)
    floor = float(scalar(floor)) if floor is not None and floor.numel() else None
    center_point = bool(attrs.get("center_point_box", 0))
    selected = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            candidates = [i for i in range(scores.shape[2])
                          if floor is None or scores[b, c, i] > floor]
            candidates.sort(key=lambda i: (-scores[b, c, i], i))
            kept: list[int] = []
            for i in candidates:
                if len(kept) >= limit:
                    break
                if not any(_overlaps(boxes[b, i], boxes[b, k], center_point, iou) for k in kept):
                    kept.append(i)
                    selected.append((b, c, i))
    return [pb.tensor(np.array(selected, np.int64).reshape(-1, 3))]
