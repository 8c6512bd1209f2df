"""Python source → IR (an allow-listed AST visitor)."""

# the modules that register builtins' lowerings beside builtins.py: loaded with the package
from . import block_pointers, combine, ported, precise, random, reductions, sorting  # noqa: F401
from .visitor import build_kernel

__all__ = ["build_kernel"]
