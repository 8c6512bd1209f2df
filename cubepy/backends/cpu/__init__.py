"""The ``cpu`` target (Numba), with a debug mode that runs the same code as plain Python."""

from .backend import CpuBackend, CpuKernel

__all__ = ["CpuBackend", "CpuKernel"]
