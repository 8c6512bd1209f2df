"""The tile IR: typed SSA values with structured control flow (see DESIGN.md)."""

from . import dtypes
from .builder import Builder
from .core import Block, Function, Loc, Operation, Param, Type, Value, walk
from .ops import Op
from .printer import print_function
from .rules import RuleError
from .verify import VerifyError, verify

__all__ = [
    "Block", "Builder", "Function", "Loc", "Op", "Operation", "Param", "RuleError", "Type",
    "Value", "VerifyError", "dtypes", "print_function", "verify", "walk",
]
