"""Autotuning: benchmark a kernel's configs per key and keep the winner on disk.

``@cube.autotune(configs=[...], key=[...])`` over a ``@cube.kernel`` (or over a host function
that launches kernels); ``cube.Config`` is one candidate. ``python -m cubepy.autotune`` lists,
shows, clears and exports the cached results.

Example:
    >>> import cubepy as cube
    >>> @cube.autotune(configs=[cube.Config(BLOCK=256), cube.Config(BLOCK=1024)], key=["n"])
    ... @cube.kernel
    ... def scale(x, out, n, s, BLOCK: cube.Comptime[int]):
    ...     offs = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    ...     cube.store(out + offs, cube.load(x + offs, offs < n) * s, offs < n)
    >>> scale[lambda meta: (cube.cdiv(n, meta["BLOCK"]),)](x, out, n, 2.0)  # doctest: +SKIP
"""

from .cache import AutotuneCacheWarning
from .config import Config
from .context import STATS, AutotuneWarning, Stats, TuneContext
from .key import TuneKey, layout_class, pow2_anchor
from .tuner import Autotuner, autotune

__all__ = ["Config", "autotune", "Autotuner", "TuneContext", "TuneKey", "Stats", "STATS",
           "AutotuneWarning", "AutotuneCacheWarning", "layout_class", "pow2_anchor"]
