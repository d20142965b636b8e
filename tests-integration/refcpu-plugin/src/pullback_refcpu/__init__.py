"""pullback-refcpu: a reference NumPy backend named ``refcpu`` that counts its kernel calls."""

from .backend import RefCPUBackend, kernel_calls, reset_kernel_calls

__all__ = ["RefCPUBackend", "kernel_calls", "reset_kernel_calls"]
