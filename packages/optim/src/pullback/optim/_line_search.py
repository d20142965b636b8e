"""The strong-Wolfe line search of L-BFGS, on one search direction of the flat parameters.

The same algorithm as PyTorch's ``torch.optim.lbfgs._strong_wolfe`` (itself Mark Schmidt's
minFunc, by way of Lua torch): bracket a step satisfying the strong Wolfe conditions by cubic
extrapolation, then zoom into the bracket by safeguarded cubic interpolation. Every branch and
every tolerance follows it, so that trajectories agree with PyTorch's to rounding.
"""

from __future__ import annotations

import math
from typing import Any, Callable

Evaluate = Callable[[float], tuple[float, Any]]  # step -> (loss, flat gradient) at x + step*d


def cubic_minimizer(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                    bounds: tuple[float, float] | None = None) -> float:
    """The minimizer of the cubic through (x1, f1, slope g1) and (x2, f2, slope g2), clamped
    to ``bounds`` (by default the interval between x1 and x2); the bounds' midpoint when the
    cubic has no real minimizer."""
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        minimizer = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        minimizer = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(minimizer, low), high)


def strong_wolfe(evaluate: Evaluate, dot: Callable[[Any], float], d_norm: float, t: float,
                 f: float, g: Any, gtd: float, c1: float = 1e-4, c2: float = 0.9,
                 tolerance_change: float = 1e-9, max_ls: int = 25
                 ) -> tuple[float, Any, float, int]:
    """A step ``t`` along the direction with sufficient decrease (``c1``) and curvature
    (``c2``), from loss ``f``, gradient ``g`` and slope ``gtd`` at step 0.

    Args:
        evaluate: the loss and flat gradient at a step (restoring the parameters afterwards).
        dot: the slope along the direction of a flat gradient.
        d_norm: the direction's largest absolute entry (for the bracket's tolerance).
        max_ls: the most evaluations.

    Returns:
        ``(loss, gradient, step, evaluations)`` at the step chosen.
    """
    f_new, g_new = evaluate(t)
    evaluations = 1
    gtd_new = dot(g_new)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    iteration = 0
    bracket: list[float] = []
    bracket_f: list[float] = []
    bracket_g: list[Any] = []
    bracket_gtd: list[float] = []
    # Bracketing: grow the step until it overshoots the decrease or the slope turns.
    while iteration < max_ls:
        if f_new > f + c1 * t * gtd or (iteration > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        previous = t
        t = cubic_minimizer(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                            bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = previous, f_new, g_new.copy(), gtd_new
        f_new, g_new = evaluate(t)
        evaluations += 1
        gtd_new = dot(g_new)
        iteration += 1
    if iteration == max_ls:
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]
    # Zoom: shrink the bracket until a point satisfies both conditions.
    insufficient_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and iteration < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = cubic_minimizer(bracket[0], bracket_f[0], bracket_gtd[0],
                            bracket[1], bracket_f[1], bracket_gtd[1])
        # Safeguard: a trial too close to an end of the bracket moves a tenth inside it.
        margin = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < margin:
            if insufficient_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - margin if abs(t - max(bracket)) < abs(t - min(bracket)) \
                    else min(bracket) + margin
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        f_new, g_new = evaluate(t)
        evaluations += 1
        gtd_new = dot(g_new)
        iteration += 1
        if f_new > f + c1 * t * gtd or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high] = t, f_new
            bracket_g[high], bracket_gtd[high] = g_new.copy(), gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low] = t, f_new
            bracket_g[low], bracket_gtd[low] = g_new.copy(), gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evaluations
