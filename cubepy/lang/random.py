"""The kernel language's random builtins: Triton's counter-based Philox-4x32, bit for bit
(lowered by ``cubepy/frontend/random.py``). ``seed`` is an integer scalar, ``offset`` an int32
or uint32 tile or scalar; each distinct (seed, offset) gives independent numbers. Like the
other builtins, these only have meaning inside a ``@cube.kernel`` or ``@cube.func``."""

from __future__ import annotations

from typing import Any

from .builtins import _builtin


@_builtin
def philox(seed: Any, c0: Any, c1: Any, c2: Any, c3: Any, n_rounds: int = 10) -> Any:
    """The four uint32 words Philox-4x32 makes of the counter ``(c0, c1, c2, c3)`` under the
    key ``seed`` (its low and high 32-bit words).

    Example:
        >>> w0, w1, w2, w3 = cube.philox(seed, offs, 0, 0, 0)  # doctest: +SKIP
    """


@_builtin
def randint(seed: Any, offset: Any, n_rounds: int = 10) -> Any:
    """A random uint32 per element of ``offset`` (the first word of ``randint4x``).

    Example:
        >>> bits = cube.randint(seed, offs)  # doctest: +SKIP
    """


@_builtin
def randint4x(seed: Any, offset: Any, n_rounds: int = 10) -> Any:
    """Four random uint32 tiles per ``offset``: ``philox(seed, offset, 0, 0, 0)``.

    Example:
        >>> a, b, c, d = cube.randint4x(seed, offs)  # doctest: +SKIP
    """


@_builtin
def rand(seed: Any, offset: Any, n_rounds: int = 10) -> Any:
    """A uniform float32 in [0, 1) per element of ``offset``.

    Example:
        >>> keep = cube.rand(seed, offs) > p  # dropout's mask  # doctest: +SKIP
    """


@_builtin
def rand4x(seed: Any, offset: Any, n_rounds: int = 10) -> Any:
    """Four uniform float32 tiles in [0, 1) per ``offset``, from ``randint4x``'s words.

    Example:
        >>> u1, u2, u3, u4 = cube.rand4x(seed, offs)  # doctest: +SKIP
    """


@_builtin
def randn(seed: Any, offset: Any, n_rounds: int = 10) -> Any:
    """A standard normal float32 per element of ``offset`` (Box-Muller on two words).

    Example:
        >>> noise = cube.randn(seed, offs) * sigma  # doctest: +SKIP
    """


@_builtin
def randn4x(seed: Any, offset: Any, n_rounds: int = 10) -> Any:
    """Four standard normal float32 tiles per ``offset`` (Box-Muller on each pair of words).

    Example:
        >>> n1, n2, n3, n4 = cube.randn4x(seed, offs)  # doctest: +SKIP
    """
