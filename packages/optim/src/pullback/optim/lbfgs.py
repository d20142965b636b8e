"""L-BFGS: quasi-Newton steps from a short history of gradient differences, optionally with a
strong-Wolfe line search."""

from __future__ import annotations

from numbers import Integral
from typing import Any, Callable

from pullback import Tensor, enable_grad

from . import _state_dict
from ._line_search import strong_wolfe
from .errors import HyperparameterError, ParamGroupError
from .optimizer import OPTIMIZERS, Optimizer, ParamsT, mark_modified, require_non_negative


@OPTIMIZERS.register("lbfgs")
class LBFGS(Optimizer):
    """L-BFGS (``torch.optim.LBFGS``'s algorithm, options and defaults; Nocedal and Wright,
    algorithm 7.4, with minFunc's tolerances).

    All parameters are optimized as one flat vector, so there is one parameter group, and
    :meth:`step` needs a closure that clears the gradients, computes the loss, calls
    ``backward()`` and returns the loss: one step runs up to ``max_iter`` iterations and
    ``max_eval`` closure calls.

    Args:
        params: Tensors (one group).
        lr: the step along each quasi-Newton direction (the line search's first trial).
        max_iter: iterations per :meth:`step`.
        max_eval: closure calls per :meth:`step` (default ``max_iter * 5 // 4``).
        tolerance_grad: stop when the gradient's largest entry is at most this.
        tolerance_change: stop when the loss or the parameters change less than this.
        history_size: the number of curvature pairs kept.
        line_search_fn: ``None`` (fixed steps) or ``"strong_wolfe"``.

    Example:
        >>> import pullback, pullback.optim
        >>> w = pullback.tensor([3.0, -2.0], requires_grad=True, dtype=pullback.float64)
        >>> opt = pullback.optim.LBFGS([w], line_search_fn="strong_wolfe")
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = ((w - 1.0) ** 2).sum()
        ...     loss.backward()
        ...     return loss
        >>> _ = opt.step(closure)
        >>> [round(v, 6) for v in w.tolist()]
        [1.0, 1.0]
    """

    supports_param_groups = False
    requires_closure = True

    def __init__(self, params: ParamsT, lr: float = 1.0, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        if max_eval is None and isinstance(max_iter, Integral):
            max_eval = max_iter * 5 // 4
        super().__init__(params, {
            "lr": lr, "max_iter": max_iter, "max_eval": max_eval,
            "tolerance_grad": tolerance_grad, "tolerance_change": tolerance_change,
            "history_size": history_size, "line_search_fn": line_search_fn,
        })

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        if self.param_groups:
            raise ParamGroupError("LBFGS optimizes all its parameters as one vector: it takes "
                                  "one parameter group (no per-parameter options)")
        super().add_param_group(param_group)

    def _check_group(self, group: dict[str, Any]) -> None:
        require_non_negative(group, "lr", "tolerance_grad", "tolerance_change")
        for name in ("max_iter", "max_eval", "history_size"):
            value = group[name]
            if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
                raise HyperparameterError(f"invalid {name}: {value!r} (a positive integer)")
        if group["line_search_fn"] not in (None, "strong_wolfe"):
            raise HyperparameterError(f"invalid line_search_fn: {group['line_search_fn']!r} "
                                      "(None or 'strong_wolfe')")

    # -- the flat vector of all parameters --------------------------------------------------------
    @property
    def _params(self) -> list[Tensor]:
        return self.param_groups[0]["params"]

    def _xp(self) -> Any:
        return self._params[0].device.backend.xp

    def _flat_grad(self) -> Any:
        xp = self._xp()
        return xp.concatenate([
            p.grad.array.reshape(-1) if p.grad is not None else xp.zeros(p.array.size, p.dtype)
            for p in self._params])

    def _move(self, step: float, direction: Any) -> None:
        """``params += step * direction``."""
        offset = 0
        for p in self._params:
            n = p.array.size
            p.array += step * direction[offset:offset + n].reshape(p.array.shape)
            offset += n
            mark_modified(p)

    def _restore(self, saved: list[Any]) -> None:
        for p, array in zip(self._params, saved):
            self._xp().copyto(p.array, array)
            mark_modified(p)

    # -- the step ------------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Run up to ``max_iter`` L-BFGS iterations; return the loss at the start.

        Args:
            closure: clears the gradients, computes the loss, calls ``backward()`` and returns
                the loss (run with grad enabled, maybe several times).
        """
        if closure is None:
            raise TypeError("LBFGS.step needs a closure that re-evaluates the loss (it calls it "
                            "several times per step)")
        self._opt_called = True
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        xp = self._xp()

        def evaluate() -> float:
            with enable_grad():
                return float(closure())

        state = self.state.setdefault(self._params[0], {"func_evals": 0, "n_iter": 0})
        first_loss = _call(closure)
        loss = float(first_loss)
        evaluations = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if float(xp.abs(flat_grad).max()) <= tolerance_grad:
            return first_loss
        memory = _Memory.from_state(state, xp)
        iteration = 0
        while iteration < max_iter:
            iteration += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                memory.reset()
                d = -flat_grad
            else:
                memory.update(flat_grad - memory.prev_flat_grad, memory.d * memory.t,
                              group["history_size"])
                d = memory.direction(flat_grad)
            memory.prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            t = (min(1.0, 1.0 / float(xp.abs(flat_grad).sum())) * lr if state["n_iter"] == 1
                 else lr)
            gtd = float(flat_grad @ d)
            if gtd > -tolerance_change:  # not a descent direction: nothing more to gain
                memory.d, memory.t = d, t
                break
            spent = 0
            if group["line_search_fn"] == "strong_wolfe":
                start = [p.array.copy() for p in self._params]

                def along(step: float, d: Any = d, start: list[Any] = start
                          ) -> tuple[float, Any]:
                    self._move(step, d)
                    value = evaluate()
                    gradient = self._flat_grad()
                    self._restore(start)
                    return value, gradient

                def slope(g: Any, d: Any = d) -> float:
                    return float(g @ d)

                loss, flat_grad, t, spent = strong_wolfe(
                    along, slope, float(xp.abs(d).max()), t, loss, flat_grad,
                    gtd, tolerance_change=tolerance_change, max_ls=max_eval - evaluations)
                self._move(t, d)
                converged = float(xp.abs(flat_grad).max()) <= tolerance_grad
            else:
                self._move(t, d)
                converged = False
                if iteration != max_iter:
                    loss = evaluate()
                    flat_grad = self._flat_grad()
                    converged = float(xp.abs(flat_grad).max()) <= tolerance_grad
                    spent = 1
            memory.d, memory.t = d, t
            evaluations += spent
            state["func_evals"] += spent
            if (iteration == max_iter or evaluations >= max_eval or converged
                    or float(xp.abs(d * t).max()) <= tolerance_change
                    or abs(loss - prev_loss) < tolerance_change):
                break
        memory.prev_loss = prev_loss
        memory.to_state(state, self._params[0].device)
        return first_loss

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict` (the history is flat vectors, not parameter-shaped)."""
        _state_dict.unpack(self, {**state_dict, "state": {}})
        saved = state_dict["state"]
        if saved:
            values = next(iter(saved.values()))
            device = self._params[0].device
            self.state = {self._params[0]: {k: _moved(v, device) for k, v in values.items()}}


def _call(closure: Callable[[], Any]) -> Any:
    with enable_grad():
        return closure()


def _moved(value: Any, device: Any) -> Any:
    if isinstance(value, Tensor):
        return Tensor._wrap(value.to(device).array.copy(), device)
    if isinstance(value, list):
        return [_moved(v, device) for v in value]
    return value


class _Memory:
    """The L-BFGS history (curvature pairs and the last direction), as arrays while stepping
    and as Tensors in the optimizer's state."""

    def __init__(self, xp: Any) -> None:
        self.xp = xp
        self.d: Any = None
        self.t: float = 0.0
        self.prev_flat_grad: Any = None
        self.prev_loss: float | None = None
        self.reset()

    def reset(self) -> None:
        self.old_dirs: list[Any] = []  # gradient differences y
        self.old_stps: list[Any] = []  # steps s
        self.ro: list[float] = []  # 1 / (y . s)
        self.h_diag = 1.0

    def update(self, y: Any, s: Any, history_size: int) -> None:
        """Keep the pair (y, s) when it has positive curvature."""
        ys = float(y @ s)
        if ys > 1e-10:
            if len(self.old_dirs) == history_size:
                self.old_dirs.pop(0)
                self.old_stps.pop(0)
                self.ro.pop(0)
            self.old_dirs.append(y)
            self.old_stps.append(s)
            self.ro.append(1.0 / ys)
            self.h_diag = ys / float(y @ y)

    def direction(self, flat_grad: Any) -> Any:
        """The two-loop recursion: minus the inverse Hessian estimate times the gradient."""
        alphas = [0.0] * len(self.old_dirs)
        q = -flat_grad
        for i in range(len(self.old_dirs) - 1, -1, -1):
            alphas[i] = float(self.old_stps[i] @ q) * self.ro[i]
            q += -alphas[i] * self.old_dirs[i]
        r = q * self.h_diag
        for i in range(len(self.old_dirs)):
            beta = float(self.old_dirs[i] @ r) * self.ro[i]
            r += (alphas[i] - beta) * self.old_stps[i]
        return r

    @classmethod
    def from_state(cls, state: dict[str, Any], xp: Any) -> _Memory:
        memory = cls(xp)
        if "d" in state:
            memory.d = state["d"].array
            memory.t = state["t"]
            memory.old_dirs = [v.array for v in state["old_dirs"]]
            memory.old_stps = [v.array for v in state["old_stps"]]
            memory.ro = list(state["ro"])
            memory.h_diag = state["H_diag"]
            memory.prev_flat_grad = state["prev_flat_grad"].array
            memory.prev_loss = state["prev_loss"]
        return memory

    def to_state(self, state: dict[str, Any], device: Any) -> None:
        def wrap(a: Any) -> Tensor:
            return Tensor._wrap(a, device)

        state.update({
            "d": wrap(self.d), "t": float(self.t), "old_dirs": [wrap(v) for v in self.old_dirs],
            "old_stps": [wrap(v) for v in self.old_stps], "ro": list(self.ro),
            "H_diag": float(self.h_diag), "prev_flat_grad": wrap(self.prev_flat_grad),
            "prev_loss": self.prev_loss,
        })
