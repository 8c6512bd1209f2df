"""Shape and type rules of every op: ``infer(op, operand types, attrs) -> result types``.

The frontend calls these while it builds (so errors point at the user's line) and the
verifier calls them again after each pass. A rule that refuses raises ``RuleError`` with a
message and a hint of what to write instead.
"""

from __future__ import annotations

from .core import Type
from .dtypes import DType, bool_, float32, float64, int32, int64
from .ops import BINARY, COMPARE, MATH, Op


class RuleError(Exception):
    """A shape or type rule refused its operands."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint


def is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def check_tile_shape(shape: tuple[int, ...]) -> None:
    for dim in shape:
        if not is_pow2(dim):
            raise RuleError(
                f"tile shape {shape} has a dimension of {dim}, which is not a power of two",
                f"round it up to {1 << max(0, dim - 1).bit_length()} and mask the extra "
                "elements (e.g. `mask = offs < n`)",
            )


def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy broadcasting of two static shapes; RuleError if they do not broadcast."""
    if a == b or not b:
        return a
    if not a:
        return b
    rank = max(len(a), len(b))
    pa, pb = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    out = []
    for da, db in zip(pa, pb):
        if da != db and 1 not in (da, db):
            raise RuleError(
                f"shapes {a} and {b} do not broadcast (dimension {da} against {db})",
                "make the tiles the same shape, or insert a size-1 axis with `x[:, None]` / "
                "`x[None, :]` so they broadcast",
            )
        out.append(max(da, db))
    return tuple(out)


def _elementwise_shape(types: list[Type]) -> tuple[int, ...]:
    """Operands of elementwise ops are scalars or tiles of one shape (the builder broadcasts)."""
    shapes = {t.shape for t in types if t.shape}
    if len(shapes) > 1:
        raise RuleError(f"elementwise operands have shapes {sorted(shapes)}; broadcast them first")
    return shapes.pop() if shapes else ()


def _bitcast(t: Type, dtype: DType) -> Type:
    """``x.to(dtype, bitcast=True)``: the same bits, so the same width; bools have no bits
    to reinterpret and pointers no dtype of theirs to change."""
    if t.is_ptr:
        raise RuleError("pointers cannot be bitcast",
                        "bitcast the loaded values instead: `cube.load(p).to(dtype, bitcast=True)`")
    if t.dtype.is_bool or dtype.is_bool:
        raise RuleError(f"cannot bitcast {t.dtype.name} to {dtype.name}: bool has no bit "
                        "pattern to reinterpret", "convert with `x.to(dtype)` instead")
    if t.dtype.bits != dtype.bits:
        raise RuleError(f"cannot bitcast {t.dtype.name} ({t.dtype.bits} bits) to {dtype.name} "
                        f"({dtype.bits} bits): a bitcast keeps the width",
                        "bitcast to a type of the same width (float32 <-> int32 or uint32, "
                        "float16 or bfloat16 <-> int16, float64 <-> int64, int8 <-> uint8), "
                        "then convert with `.to(dtype)`")
    return Type(dtype, t.shape)


def _same_dtype(op: Op, types: list[Type]) -> DType:
    dtypes = {t.dtype for t in types}
    if len(dtypes) != 1:
        names = ", ".join(sorted(d.name for d in dtypes))
        raise RuleError(f"{op.value} needs operands of one dtype, got {names}",
                        "cast one side with `x.to(cube.float32)`")
    return dtypes.pop()


def reduce_dtype(dtype: DType) -> DType:
    """Sums, cumulative sums and products of small integers (and bool) accumulate in int32."""
    if dtype.is_bool or (dtype.is_int and dtype.bits < 32):
        return int32
    return dtype


def dot_dtype(a: DType) -> DType:
    if a.is_float:
        return float64 if a == float64 else float32
    if a.is_int:
        return int64 if a.bits == 64 else int32
    raise RuleError("dot needs integer or floating tiles, not bool")


def _binary(op: Op, types: list[Type]) -> Type:
    if any(t.is_ptr for t in types):
        raise RuleError(f"{op.value} is not defined on pointers",
                        "only `pointer + integer offsets` is; compute on the offsets instead")
    dtype = _same_dtype(op, types)
    shape = _elementwise_shape(types)
    if op in COMPARE:
        return Type(bool_, shape)
    if op is Op.DIV and not dtype.is_float:
        raise RuleError("true division needs floating operands", "use `//` for integers")
    if op in (Op.AND, Op.OR, Op.XOR) and dtype.is_float:
        raise RuleError(f"bitwise {op.value} is not defined on {dtype.name}",
                        "use it on integer or bool tiles, e.g. `(a > 0) & (b > 0)`")
    if op in (Op.SHL, Op.SHR) and not dtype.is_int:
        raise RuleError(f"shift is not defined on {dtype.name}", "shift integer tiles only")
    if op in (Op.FLOORDIV, Op.MOD, Op.POW, Op.SUB, Op.ADD, Op.MUL) and dtype.is_bool:
        raise RuleError(f"{op.value} is not defined on bool",
                        "cast first: `x.to(cube.int32)`")
    return Type(dtype, shape)


def _unary(op: Op, types: list[Type]) -> Type:
    (t,) = types
    if t.is_ptr:
        raise RuleError(f"{op.value} is not defined on pointers")
    if op in MATH and not t.dtype.is_float:
        raise RuleError(f"{op.value} needs a floating operand, got {t.dtype.name}",
                        "cast first: `x.to(cube.float32)`")
    if op in (Op.FLOOR, Op.CEIL) and not t.dtype.is_float:
        raise RuleError(f"{op.value} needs a floating operand, got {t.dtype.name}")
    if op is Op.NOT and t.dtype.is_float:
        raise RuleError("~ is not defined on floating values", "use `x == 0` or `-x`")
    if op is Op.NEG and t.dtype.is_bool:
        raise RuleError("unary - is not defined on bool", "use `~x` or `x == False`")
    return Type(t.dtype, t.shape)


def _block_load(types: list[Type], attrs: dict) -> Type:
    fallback, base, *scalars = types
    if not base.is_ptr or base.shape or len(scalars) != 5 or any(
            t.is_ptr or t.shape or not t.dtype.is_int for t in scalars):
        raise RuleError("block_load: operands are the fallback tile, a base pointer and five "
                        "integer scalars")
    if fallback.is_ptr or fallback.shape != tuple(attrs["block"]) or \
            fallback.dtype != base.dtype:
        raise RuleError(f"block_load: fallback {fallback} does not match block "
                        f"{attrs['block']} of {base.dtype.name}")
    return fallback


def _block_store(types: list[Type], attrs: dict) -> list[Type]:
    if len(types) != 9:
        raise RuleError("block_store: operands are a pointer tile, a value, a mask, a base "
                        "pointer and five integer scalars")
    ptr, _, _, base, *scalars = types
    _memory(Op.STORE, types[:3], attrs)
    if not base.is_ptr or base.shape or base.dtype != ptr.dtype or any(
            t.is_ptr or t.shape or not t.dtype.is_int for t in scalars):
        raise RuleError("block_store: the base must be a scalar pointer of the tile's dtype "
                        "and the view five integer scalars")
    if ptr.shape != tuple(attrs["block"]):
        raise RuleError(f"block_store: pointer tile {ptr.shape} does not match block "
                        f"{attrs['block']}")
    return []


def _memory(op: Op, types: list[Type], attrs: dict) -> list[Type]:
    ptr = types[0]
    if not ptr.is_ptr:
        raise RuleError(f"{op.value} needs a pointer (an array argument plus offsets), got {ptr}",
                        "write `cube.load(x + offsets)` where `x` is an array argument")
    rest = types[1:]
    if op is Op.LOAD:
        mask = rest[0] if rest else None
        other = rest[1] if len(rest) > 1 else None
        if mask is not None:
            _check_mask(mask, ptr)
        if other is not None and (other.dtype != ptr.dtype or other.shape not in ((), ptr.shape)):
            raise RuleError(f"load's `other` is {other}; it must be a {ptr.dtype.name} scalar "
                            f"or a tile of shape {ptr.shape}")
        return [Type(ptr.dtype, ptr.shape)]
    values = rest[:2] if op is Op.ATOMIC_CAS else rest[:1]
    for value in values:
        if value.is_ptr or value.dtype != ptr.dtype or value.shape not in ((), ptr.shape):
            raise RuleError(
                f"{op.value} of {value} through {ptr}: value and pointer disagree",
                f"store a {ptr.dtype.name} tile of shape {ptr.shape} (cast with "
                f"`.to(cube.{ptr.dtype.name})`)",
            )
    masks = rest[len(values):]
    if masks:
        _check_mask(masks[0], ptr)
    if op is Op.STORE:
        return []
    if op is Op.ATOMIC and attrs["kind"] == "add" and ptr.dtype.is_bool:
        raise RuleError("atomic_add is not defined on bool")
    if op is Op.ATOMIC and attrs["kind"] in ("and", "or", "xor") and not ptr.dtype.is_int:
        raise RuleError(f"atomic_{attrs['kind']} needs an integer array, got {ptr.dtype.name}",
                        "use it on int32, uint32 or int64 arrays (for float bits, keep them in "
                        "an int array and bitcast)")
    return [Type(ptr.dtype, ptr.shape)]


def _check_mask(mask: Type, ptr: Type) -> None:
    if mask.dtype != bool_ or mask.shape not in ((), ptr.shape):
        raise RuleError(f"mask is {mask}; it must be bool with shape {ptr.shape}",
                        "build it from a comparison, e.g. `mask = offs < n`")


def _layout(op: Op, t: Type, attrs: dict) -> Type:
    shape = t.shape
    if op is Op.BROADCAST:
        target = tuple(attrs["shape"])
        if broadcast_shapes(shape, target) != target:
            raise RuleError(f"cannot broadcast {shape} to {target}")
        check_tile_shape(target)
        return t.with_shape(target)
    if op is Op.EXPAND_DIMS:
        axis = attrs["axis"]
        if not -len(shape) - 1 <= axis <= len(shape):
            raise RuleError(f"expand_dims axis {axis} is out of range for shape {shape}")
        axis %= len(shape) + 1
        return t.with_shape(shape[:axis] + (1,) + shape[axis:])
    if op is Op.RESHAPE:
        target = tuple(attrs["shape"])
        check_tile_shape(target)
        if Type(t.dtype, target).numel != t.numel:
            raise RuleError(f"cannot reshape {shape} ({t.numel} elements) to {target}")
        return t.with_shape(target)
    dims = tuple(attrs["dims"])
    if sorted(dims) != list(range(len(shape))):
        raise RuleError(f"permute dims {dims} are not a permutation of the {len(shape)} axes")
    return t.with_shape(tuple(shape[d] for d in dims))


def _reduction(op: Op, t: Type, attrs: dict) -> Type:
    axis = attrs["axis"]
    if not t.shape:
        raise RuleError(f"{attrs['kind']} needs a tile, got the scalar {t}")
    if not 0 <= axis < len(t.shape):
        raise RuleError(f"axis {axis} is out of range for a tile of shape {t.shape}")
    if t.is_ptr:
        raise RuleError(f"{attrs['kind']} is not defined on pointers")
    if op is Op.SCAN:
        return Type(reduce_dtype(t.dtype), t.shape)
    shape = t.shape[:axis] + t.shape[axis + 1:]
    if op is Op.ARGREDUCE:
        return Type(int32, shape)
    dtype = reduce_dtype(t.dtype) if attrs["kind"] == "sum" else t.dtype
    return Type(dtype, shape)


def _combined(op: Op, types: list[Type], axis: int) -> list[Type]:
    shape = types[0].shape
    if not shape or any(t.shape != shape or t.is_ptr for t in types):
        raise RuleError(f"{op.value} combines tiles of one shape, got "
                        f"{', '.join(map(str, types))}")
    if not 0 <= axis < len(shape):
        raise RuleError(f"axis {axis} is out of range for a tile of shape {shape}")
    if op is Op.SCAN_FN:
        return list(types)
    return [Type(t.dtype, shape[:axis] + shape[axis + 1:]) for t in types]


def _gather(types: list[Type], axis: int) -> Type:
    src, index = types
    if src.is_ptr or index.is_ptr or not index.dtype.is_int:
        raise RuleError(f"gather reads values at integer indices, got {src} at {index}")
    rank = len(src.shape)
    if len(index.shape) != rank or not 0 <= axis < rank or any(
            a != b for d, (a, b) in enumerate(zip(src.shape, index.shape)) if d != axis):
        raise RuleError(f"gather along axis {axis} of a tile of shape {src.shape} needs "
                        f"indices of its shape but along that axis, got {index.shape}")
    return Type(src.dtype, index.shape)


def _dot(types: list[Type]) -> Type:
    a, b, acc = types
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise RuleError(f"dot needs 2-D tiles, got {a.shape} and {b.shape}",
                        "reshape to 2-D, or loop over the batch axis")
    if a.shape[1] != b.shape[0]:
        raise RuleError(f"dot of {a.shape} and {b.shape}: inner dimensions differ")
    if a.dtype != b.dtype:
        raise RuleError(f"dot of {a.dtype.name} and {b.dtype.name}",
                        "cast both operands to one dtype")
    out = (a.shape[0], b.shape[1])
    if acc.shape != out:
        raise RuleError(f"dot accumulator has shape {acc.shape}, expected {out}")
    return Type(acc.dtype, out)


HINT_KINDS = ("multiple_of", "max_contiguous", "max_constancy")


def _hint(t: Type, attrs: dict) -> Type:
    if attrs["kind"] not in HINT_KINDS:
        raise RuleError(f"unknown hint {attrs['kind']!r}; hints: {', '.join(HINT_KINDS)}")
    values = attrs["values"]
    axes = max(1, len(t.shape))
    if len(values) != axes:
        raise RuleError(f"{attrs['kind']} needs {axes} value{'s' if axes > 1 else ''} (one per "
                        f"axis of the {t.shape} tile), got {len(values)}",
                        f"pass a tuple of {axes} compile-time ints")
    if not t.is_ptr and not t.dtype.is_int:
        raise RuleError(f"{attrs['kind']} applies to integers and pointers, not {t.dtype.name}",
                        "hint the integer offsets, before they are added to the array")
    return t


def infer(op: Op, types: list[Type], attrs: dict) -> list[Type]:
    """The result types of ``op`` on operands of ``types``; RuleError if it is ill-typed."""
    if op in BINARY or op in COMPARE:
        return [_binary(op, types)]
    if op in MATH or op in (Op.NEG, Op.NOT, Op.ABS, Op.FLOOR, Op.CEIL):
        return [_unary(op, types)]
    if op is Op.CONST:
        return [Type(attrs["dtype"])]
    if op in (Op.CUBE_POS, Op.CUBE_COUNT):
        return [Type(int32)]
    if op is Op.ARANGE:
        n = attrs["end"] - attrs["start"]
        check_tile_shape((n,))
        return [Type(int32, (n,))]
    if op is Op.FULL:
        shape = tuple(attrs["shape"])
        check_tile_shape(shape)
        return [Type(types[0].dtype, shape)]
    if op is Op.UMULHI:
        dtype = _same_dtype(op, types)
        if dtype.name not in ("int32", "uint32"):
            raise RuleError(f"umulhi takes int32 or uint32 operands, got {dtype.name}",
                            "cast the operands with .to(cube.uint32)")
        return [Type(dtype, _elementwise_shape(types))]
    if op is Op.FMA:
        dtype = _same_dtype(op, types)
        if not dtype.is_float:
            raise RuleError("fma needs floating operands")
        return [Type(dtype, _elementwise_shape(types))]
    if op is Op.WHERE:
        cond, a, b = types
        if cond.dtype != bool_:
            raise RuleError(f"where's condition is {cond.dtype.name}, not bool",
                            "compare first: `cube.where(x > 0, a, b)`")
        if a.ptr_base != b.ptr_base:
            raise RuleError("where between pointers into different arrays")
        dtype = _same_dtype(op, [a, b])
        return [Type(dtype, _elementwise_shape(types), a.ptr_base)]
    if op is Op.CAST:
        (t,) = types
        if t.is_ptr:
            raise RuleError("pointers cannot be cast", "cast the loaded values instead")
        return [Type(attrs["dtype"], t.shape)]
    if op is Op.BITCAST:
        return [_bitcast(types[0], attrs["dtype"])]
    if op is Op.PTR_ADD:
        ptr, offset = types
        if not ptr.is_ptr or offset.is_ptr or not offset.dtype.is_int:
            raise RuleError(f"pointer arithmetic needs a pointer plus integer offsets, "
                            f"got {ptr} + {offset}", "offsets must be integer tiles")
        return [Type(ptr.dtype, _elementwise_shape(types), ptr.ptr_base)]
    if op in (Op.LOAD, Op.STORE, Op.ATOMIC, Op.ATOMIC_CAS):
        return _memory(op, types, attrs)
    if op is Op.BLOCK_LOAD:
        return [_block_load(types, attrs)]
    if op is Op.BLOCK_STORE:
        return _block_store(types, attrs)
    if op in (Op.BROADCAST, Op.EXPAND_DIMS, Op.RESHAPE, Op.PERMUTE):
        return [_layout(op, types[0], attrs)]
    if op is Op.FLIP:
        if types[0].is_ptr:
            raise RuleError("pointer tiles cannot be flipped",
                            "flip the offsets before adding them, or the loaded values")
        if not 0 <= attrs["axis"] < len(types[0].shape):
            raise RuleError(f"flip axis {attrs['axis']} is out of range for shape "
                            f"{types[0].shape}")
        return [types[0]]
    if op in (Op.REDUCE, Op.ARGREDUCE, Op.SCAN):
        return [_reduction(op, types[0], attrs)]
    if op in (Op.REDUCE_FN, Op.SCAN_FN):
        return _combined(op, types, attrs["axis"])
    if op is Op.GATHER:
        return [_gather(types, attrs["axis"])]
    if op is Op.SORT:
        if not types[0].shape or types[0].is_ptr or not types[0].dtype.is_int:
            raise RuleError(f"sort orders integer tiles (floats become keys first), got "
                            f"{types[0]}")
        return [types[0]]
    if op is Op.DOT:
        return [_dot(types)]
    if op is Op.HINT:
        return [_hint(types[0], attrs)]
    if op in (Op.ASSERT, Op.ASSUME):
        if any(not t.dtype.is_bool or t.is_ptr for t in types):
            raise RuleError(f"{op.value} needs bool conditions, got {', '.join(map(str, types))}")
        return []
    if op in (Op.PRINT, Op.YIELD, Op.BARRIER):
        return []
    raise RuleError(f"no type rule for {op.value}")  # control flow is typed by its regions


__all__ = ["RuleError", "infer", "broadcast_shapes", "check_tile_shape", "is_pow2",
           "reduce_dtype", "dot_dtype"]
