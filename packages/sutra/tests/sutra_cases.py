"""What the sutra tests share: the solvers grouped as the registry says, the options that make
each accurate enough for a closed-form check, and problems written twice (pullback and PyTorch)
so torchdiffeq can solve the same thing."""

from __future__ import annotations

from typing import Any

import numpy as np

import pullback
from pullback.sutra import SOLVERS
from pullback.sutra._solvers import AdaptiveRungeKutta, FixedGridSolver

METHODS = sorted(SOLVERS)
ADAPTIVE = [m for m in METHODS if issubclass(SOLVERS[m], AdaptiveRungeKutta)]
FIXED = [m for m in METHODS if issubclass(SOLVERS[m], FixedGridSolver)]
assert sorted(ADAPTIVE + FIXED) == METHODS  # every solver is one or the other

# Each fixed-grid method's step for the closed-form tests, and the error allowed there (about
# ten times what the method makes on them; the convergence tests check how errors shrink).
FIXED_STEP = {"euler": (1e-3, 5e-2), "midpoint": (1e-2, 3e-3), "heun2": (1e-2, 3e-3),
              "heun3": (2e-2, 2e-3), "rk4": (5e-2, 1e-4), "explicit_adams": (2e-2, 5e-4),
              "implicit_adams": (5e-2, 1e-5), "fixed_adams": (5e-2, 1e-5)}
assert set(FIXED_STEP) == set(FIXED)
# Each adaptive method's rtol there (atol is a hundredth of it), and the error allowed. bosh3 and
# dopri8 need tight tolerances: between steps their interpolation (torchdiffeq's quartic through
# a mid-step estimate of low order) is off by about 3e-5 at the defaults, in torchdiffeq as here.
ADAPTIVE_RTOL = {"adaptive_heun": 1e-6, "fehlberg2": 1e-8, "bosh3": 1e-10, "dopri5": 1e-8,
                 "tsit5": 1e-8, "dopri8": 1e-10}
assert set(ADAPTIVE_RTOL) == set(ADAPTIVE)
ADAPTIVE_ERROR = 1e-5


def accurate(method: str) -> dict[str, Any]:
    """odeint's keywords for ``method`` on the closed-form problems (see :func:`allowed_error`)."""
    if method in FIXED:
        options = {"step_size": FIXED_STEP[method][0]}
        if method == "explicit_adams":
            # At its default max_order (12) the explicit method diverges on these problems,
            # in torchdiffeq as here; order 5 is stable.
            options["max_order"] = 5
        return {"method": method, "options": options}
    return {"method": method, "rtol": ADAPTIVE_RTOL[method], "atol": ADAPTIVE_RTOL[method] / 100}


def allowed_error(method: str) -> float:
    """The error allowed on the closed-form problems under :func:`accurate`."""
    return FIXED_STEP[method][1] if method in FIXED else ADAPTIVE_ERROR


def tensor(values: Any, requires_grad: bool = False) -> pullback.Tensor:
    return pullback.tensor(np.asarray(values, dtype=np.float64), dtype=pullback.float64,
                           requires_grad=requires_grad)


def parity_kwargs(method: str) -> dict[str, Any]:
    """odeint's keywords for ``method`` when comparing with torchdiffeq (the same for both)."""
    if method not in FIXED:
        # The second-order pairs take thousands of steps at the default tolerances (torchdiffeq
        # about 2 ms a step): looser ones test the same rules.
        return {"rtol": 1e-5, "atol": 1e-7} if SOLVERS[method].order <= 2 else {}
    options: dict[str, Any] = {"step_size": 0.05}
    if method == "explicit_adams":
        options["max_order"] = 5  # at 12 it diverges here, in torchdiffeq too
    return {"options": options}



# Solvers that interpolate between steps with the cubic Hermite polynomial, where torchdiffeq's
# quartic goes through a mid-step estimate of too low an order: they take torchdiffeq's steps
# but differ from it (by its interpolation error) at output times inside a step.
OWN_DENSE_OUTPUT = ("bosh3", "adaptive_heun")

# Tsitouras 5(4), for the reference: torchdiffeq 0.2.5 has no tsit5, so the reference runs its
# adaptive Runge-Kutta machinery with this tableau (high-precision values from diffrax, typed
# here independently of pullback.sutra's table) and the mid-step weights of Tsitouras's dense
# output, evaluated from the paper's factored polynomials.
TSIT5_C = [0.161, 0.327, 0.9, 0.9800255409045096857298102862870245954942137979563024768854764293221,
           1.0, 1.0]
TSIT5_A = [
    [0.161],
    [-0.8480655492356988544426874250230774675121177393430391537369234245294e-2,
     0.3354806554923569885444268742502307746751211773934303915373692342452],
    [2.897153057105493432130432594192938764924887287701866490314866693455,
     -6.359448489975074843148159912383825625952700647415626703305928850207,
     4.362295432869581411017727318190886861027813359713760212991062156752],
    [5.325864828439256604428877920840511317836476253097040101202360397727,
     -11.74888356406282787774717033978577296188744178259862899288666928009,
     7.495539342889836208304604784564358155658679161518186721010132816213,
     -0.9249506636175524925650207933207191611349983406029535244034750452930e-1],
    [5.861455442946420028659251486982647890394337666164814434818157239052,
     -12.92096931784710929170611868178335939541780751955743459166312250439,
     8.159367898576158643180400794539253485181918321135053305748355423955,
     -0.7158497328140099722453054252582973869127213147363544882721139659546e-1,
     -0.2826905039406838290900305721271224146717633626879770007617876201276e-1],
]
TSIT5_B = [0.9646076681806522951816731316512876333711995238157997181903319145764e-1, 1 / 100,
           0.4798896504144995747752495322905965199130404621990332488332634944254,
           1.379008574103741893192274821856872770756462643091360525934940067397,
           -3.290069515436080679901047585711363850115683290894936158531296799594,
           2.324710524099773982415355918398765796109060233222962411944060046314]
TSIT5_B_EMBEDDED = [0.9468075576583945807478876255758922856117527357724631226139574065785e-1,
                    0.9183565540343253096776363936645313759813746240984095238905939532922e-2,
                    0.4877705284247615707855642599631228241516691959761363774365216240304,
                    1.234297566930478985655109673884237654035539930748192848315425833500,
                    -2.707712349983525454881109975059321670689605166938197378763992255714,
                    1.866628418170587035753719399566211498666255505244122593996591602841,
                    1 / 66]


def tsit5_dense_weights(theta: float) -> list[float]:
    """Tsitouras's b_i(theta), in the paper's factored form."""
    t = theta
    return [
        -1.0530884977290216 * t * (t - 1.3299890189751412) * (t * t - 1.4364028541716351 * t
                                                               + 0.7139816917074209),
        0.1017 * t * t * (t * t - 2.1966568338249754 * t + 1.2949852507374631),
        2.490627285651252793 * t * t * (t * t - 2.38535645472061657 * t + 1.57803468208092486),
        -16.54810288924490272 * (t - 1.21712927295533244) * (t - 0.61620406037800089) * t * t,
        47.37952196281928122 * (t - 1.203071208372362603) * (t - 0.658047292653547382) * t * t,
        -34.87065786149660974 * (t - 1.2) * (t - 0.666666666666666667) * t * t,
        2.5 * (t - 1) * (t - 0.6) * t * t,
    ]


def install_torch_tsit5(torch: Any, monkeypatch: Any) -> None:
    """Register a ``tsit5`` in torchdiffeq's solver table for one test (undone afterwards)."""
    import importlib

    from torchdiffeq._impl.rk_common import RKAdaptiveStepsizeODESolver, _ButcherTableau

    f64 = torch.float64
    b = TSIT5_B + [0.0]
    tableau = _ButcherTableau(
        alpha=torch.tensor(TSIT5_C, dtype=f64),
        beta=[torch.tensor(row, dtype=f64) for row in TSIT5_A] + [torch.tensor(TSIT5_B, dtype=f64)],
        c_sol=torch.tensor(b, dtype=f64),
        c_error=torch.tensor([x - e for x, e in zip(b, TSIT5_B_EMBEDDED)], dtype=f64))

    class TorchTsit5(RKAdaptiveStepsizeODESolver):
        order = 5
        mid = torch.tensor(tsit5_dense_weights(0.5), dtype=f64)

    TorchTsit5.tableau = tableau
    # (torchdiffeq._impl.odeint is shadowed by the function of that name: import the module)
    solvers = importlib.import_module("torchdiffeq._impl.odeint").SOLVERS
    monkeypatch.setitem(solvers, "tsit5", TorchTsit5)
