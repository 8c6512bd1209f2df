"""Element types of cubepy and the one place where type promotion is written down.

Promotion (also in docs/language.md):

1. Same dtype: unchanged.
2. Kinds rank bool < integer < floating: the higher kind wins; within a kind the wider wins.
   ``float16`` with ``bfloat16`` gives ``float32``.
3. Signed with unsigned integers: the unsigned one wins when it is at least as wide, else the
   signed one.
4. Python literals are weak: an ``int`` literal takes the other operand's dtype; a ``float``
   literal takes the other operand's dtype if it is floating, else ``float32``.

Example:
    >>> from cubepy.ir.dtypes import promote, int32, float16
    >>> promote(int32, float16).name
    'float16'
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

try:  # bfloat16 arrays on the host come from ml_dtypes; cubepy works without it
    import ml_dtypes

    _BF16_NUMPY = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the environment
    _BF16_NUMPY = None


@dataclass(frozen=True)
class DType:
    """An element type: ``name`` as NumPy spells it, ``kind`` b/i/u/f, ``bits``."""

    name: str
    kind: str
    bits: int
    short: str

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def is_signed(self) -> bool:
        return self.kind in "if"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    @property
    def numpy(self) -> np.dtype:
        """The NumPy dtype of host arrays of this type (bfloat16 needs ml_dtypes)."""
        if self.name == "bfloat16":
            if _BF16_NUMPY is None:
                raise TypeError("bfloat16 host arrays need the ml_dtypes package")
            return _BF16_NUMPY
        return np.dtype(self.name if self.name != "bool" else np.bool_)

    def __repr__(self) -> str:
        return f"cube.{self.name}"

    def __str__(self) -> str:
        return self.short


bool_ = DType("bool", "b", 1, "i1")
int8 = DType("int8", "i", 8, "i8")
int16 = DType("int16", "i", 16, "i16")
int32 = DType("int32", "i", 32, "i32")
int64 = DType("int64", "i", 64, "i64")
uint8 = DType("uint8", "u", 8, "u8")
uint32 = DType("uint32", "u", 32, "u32")
float16 = DType("float16", "f", 16, "f16")
bfloat16 = DType("bfloat16", "f", 16, "bf16")
float32 = DType("float32", "f", 32, "f32")
float64 = DType("float64", "f", 64, "f64")

ALL: tuple[DType, ...] = (
    bool_, int8, int16, int32, int64, uint8, uint32, float16, bfloat16, float32, float64,
)
BY_NAME: dict[str, DType] = {d.name: d for d in ALL} | {d.short: d for d in ALL}

_KIND_RANK = {"b": 0, "i": 1, "u": 1, "f": 2}


def from_name(name: str) -> DType:
    """The dtype called ``name`` (``"float32"`` or ``"f32"``)."""
    try:
        return BY_NAME[name]
    except KeyError:
        names = ", ".join(d.name for d in ALL)
        raise TypeError(f"unknown dtype {name!r}; cubepy has {names}") from None


def from_numpy(dtype: np.dtype) -> DType:
    """The cubepy dtype of a NumPy dtype, or TypeError naming the supported ones."""
    dtype = np.dtype(dtype)
    if _BF16_NUMPY is not None and dtype == _BF16_NUMPY:
        return bfloat16
    name = "bool" if dtype == np.bool_ else dtype.name
    if name not in BY_NAME:
        raise TypeError(
            f"dtype {dtype} is not supported; cubepy has {', '.join(d.name for d in ALL)}"
        )
    return BY_NAME[name]


def promote(a: DType, b: DType) -> DType:
    """The dtype two operands of ``a`` and ``b`` are computed in (rules 1-3 above)."""
    if a == b:
        return a
    ra, rb = _KIND_RANK[a.kind], _KIND_RANK[b.kind]
    if ra != rb:
        return a if ra > rb else b
    if a.is_float:
        if a.bits == b.bits:  # float16 with bfloat16
            return float32
        return a if a.bits > b.bits else b
    if a.kind == b.kind:
        return a if a.bits > b.bits else b
    unsigned, signed = (a, b) if a.kind == "u" else (b, a)
    return unsigned if unsigned.bits >= signed.bits else signed


def promote_literal(other: DType, literal: object) -> DType:
    """The dtype of ``other <op> literal`` for a Python literal (rule 4)."""
    if isinstance(literal, bool):
        return other
    if isinstance(literal, int):
        return int32 if other.is_bool else other
    if isinstance(literal, float):
        return other if other.is_float else float32
    raise TypeError(f"not a literal: {literal!r}")


def literal_dtype(value: object) -> DType:
    """The dtype a Python value takes on its own: bool, int32 (int64 if too big), float32."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, np.generic):
        return from_numpy(value.dtype)
    if isinstance(value, int):
        return int32 if -(2**31) <= value < 2**31 else int64
    if isinstance(value, float):
        return float32
    raise TypeError(f"{type(value).__name__} is not a scalar type cubepy knows")


def math_dtype(dtype: DType) -> DType:
    """The dtype of a math function (exp, sin, ...) applied to ``dtype``."""
    return dtype if dtype.is_float else float32
