"""JIT, specialization cache, targets and launch."""

from .jit import Kernel, kernel
from .targets import available_targets, cuda_available, get_backend, target_info

__all__ = ["Kernel", "kernel", "available_targets", "cuda_available", "get_backend",
           "target_info"]
