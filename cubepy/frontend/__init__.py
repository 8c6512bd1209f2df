"""Python source → IR (an allow-listed AST visitor)."""

from .visitor import build_kernel

__all__ = ["build_kernel"]
