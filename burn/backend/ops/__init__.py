"""The op protocol every backend implements, one abstract class per op family.

Ops take and return ``kernels.layout.View`` values; inputs of elementwise ops already share
one shape (broadcast axes have stride 0) and result dtypes are decided by ``burn.tensor``
before a backend sees them, so backends only compute. ``BackendOps`` is the whole protocol.
"""

from .creation import CreationOps
from .elementwise import ElementwiseOps
from .index import IndexOps
from .linalg import LinalgOps
from .optim import OptimOps
from .random import RandomOps
from .reduce import ReduceOps


class BackendOps(ElementwiseOps, CreationOps, ReduceOps, IndexOps, LinalgOps, RandomOps,
                 OptimOps):
    """Every op family."""


__all__ = ["BackendOps", "CreationOps", "ElementwiseOps", "IndexOps", "LinalgOps", "OptimOps",
           "RandomOps", "ReduceOps"]
