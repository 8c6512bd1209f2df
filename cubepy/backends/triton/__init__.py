"""The ``triton`` target: cubepy IR rendered as Triton source, run on NVIDIA/AMD GPUs or on
Triton's CPU interpreter. See ``backend`` (the target), ``codegen`` (IR to source) and the
runtime layer: ``loader``, ``arrays``, ``adapter``, ``aot``.
"""

from .backend import TritonBackend, available, gpu_available, make_backend, why_unavailable

__all__ = ["TritonBackend", "available", "gpu_available", "make_backend", "why_unavailable"]
