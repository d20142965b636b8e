"""pullback.avyaya: reversible (invertible) blocks whose activation memory does not grow with
depth.

A :class:`ReversibleSequential` of couplings keeps only its final output in forward and
rebuilds every block's input from its output in backward (RevNet, Gomez et al. 2017; the
reversible layers of Reformer). :class:`ReversibleBlock` is RevNet's additive coupling,
:class:`AffineCoupling` RealNVP's affine one (with a per-sample log-determinant, for flows).
"""

from .__about__ import __version__
from ._additive import ReversibleBlock
from ._affine import AffineCoupling
from ._branches import residual_mlp
from ._coupling import Coupling
from ._sequential import (
    DEFAULT_TOLERANCE, ReconstructionError, ReversibleSequential, relative_error,
)

#: The couplings by name (the tests run every one of them through every check).
COUPLINGS: dict[str, type[Coupling]] = {"additive": ReversibleBlock, "affine": AffineCoupling}

__all__ = [
    "COUPLINGS", "DEFAULT_TOLERANCE", "AffineCoupling", "Coupling", "ReconstructionError",
    "ReversibleBlock", "ReversibleSequential", "__version__", "relative_error", "residual_mlp",
]
