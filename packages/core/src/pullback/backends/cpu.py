"""``torch.backends.cpu``: what vector instructions the CPU kernels can use."""

from __future__ import annotations


def get_cpu_capability() -> str:
    """``"AVX512"``, ``"AVX2"`` or ``"DEFAULT"``, from what NumPy found on this CPU (PyTorch's
    names)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # another NumPy layout: say nothing specific
        return "DEFAULT"
    if features.get("AVX512F") and features.get("AVX512BW"):
        return "AVX512"
    return "AVX2" if features.get("AVX2") else "DEFAULT"
