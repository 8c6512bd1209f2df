"""Kernel fusion: ``burn.Fusion(inner)`` records elementwise ops and runs each run of them as
one cubepy kernel generated at run time (``backend``, ``graph``, ``codegen``).

Example:
    >>> fusion = burn.Fusion(burn.Cpu())
    >>> y = (burn.tensor([1.0, 2.0], backend=fusion) * 2).exp().log()
    >>> y.tolist(), fusion.stats.launches
    ([2.0, 4.0], 1)
"""

from .backend import Fusion, FusionStats

__all__ = ["Fusion", "FusionStats"]
