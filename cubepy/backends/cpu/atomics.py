"""Atomic read-modify-write for the CPU target.

With Numba, each is one LLVM ``atomicrmw``/``cmpxchg`` on the array element (the grid runs
in parallel threads, so a plain read-modify-write would lose updates), acquire-release as on
Triton: a cube's stores before an atomic are seen by a cube that reads its result after (the
split-K matmul hands its partial sums over so). In debug mode the grid runs sequentially and
the same functions are plain Python.

Float max and min follow NumPy's ``np.maximum.at``/``np.minimum.at`` (and the other targets): a
NaN value makes the slot NaN, a NaN slot stays NaN, and -0.0 counts as less than +0.0, so the
result does not depend on the order in which the grid's updates land. LLVM's ``atomicrmw
fmax``/``fmin`` are maxnum/minnum (NaN loses, the sign of a zero is unspecified), so these are
compare-exchange loops on the bits, which is also what LLVM expands ``fmax`` into on x86.
"""

from __future__ import annotations

import math

import numpy as np

OPS = ("add", "max", "min", "xchg", "and", "or", "xor")
BITWISE = {"and": "and", "or": "or", "xor": "xor"}  # LLVM's atomicrmw names: integers only


def _float_replaces(kind: str, old: float, val: float) -> bool:
    """Whether a float atomic max/min turns ``old`` into ``val`` (see the module docstring)."""
    if math.isnan(old):
        return False
    if math.isnan(val) or (val > old if kind == "max" else val < old):
        return True
    sign_old, sign_val = math.copysign(1.0, old), math.copysign(1.0, val)
    return val == old and (sign_val > sign_old if kind == "max" else sign_val < sign_old)


def py_rmw(kind: str):
    def rmw(arr, idx, val):
        old = arr[idx]
        if kind == "add":
            arr[idx] = old + val
        elif kind in ("max", "min") and isinstance(old, np.floating):
            if _float_replaces(kind, float(old), float(val)):
                arr[idx] = val
        elif kind == "max":
            arr[idx] = max(old, val)
        elif kind == "min":
            arr[idx] = min(old, val)
        elif kind == "and":
            arr[idx] = old & val
        elif kind == "or":
            arr[idx] = old | val
        elif kind == "xor":
            arr[idx] = old ^ val
        else:
            arr[idx] = val
        return old
    return rmw


def _element_pointer(context, builder, signature, args):
    """The address of ``arr[idx]`` for an intrinsic whose first two arguments are those."""
    from numba.core import cgutils, types

    arr_t, idx_t = signature.args[:2]
    ary = context.make_array(arr_t)(context, builder, args[0])
    idx_v = context.cast(builder, args[1], idx_t, types.intp)
    return cgutils.get_item_pointer(context, builder, arr_t, ary, [idx_v], wraparound=False)


def _float_minmax_loop(kind: str, builder, ptr, val):
    """LLVM IR: a compare-exchange loop that applies a float max/min to ``*ptr``; returns the
    old value. The comparisons carry no fast-math flags, so NaN compares as IEEE says."""
    from llvmlite import ir

    int_t = ir.IntType(32 if isinstance(val.type, ir.FloatType) else 64)
    sign = ir.Constant(int_t, 1 << (int_t.width - 1))
    zero = ir.Constant(int_t, 0)
    bits_ptr = builder.bitcast(ptr, int_t.as_pointer())
    val_bits = builder.bitcast(val, int_t)
    entry = builder.block
    first = builder.load_atomic(bits_ptr, "monotonic", int_t.width // 8)
    loop = builder.append_basic_block("float_minmax.loop")
    done = builder.append_basic_block("float_minmax.done")
    builder.branch(loop)
    builder.position_at_end(loop)
    cur_bits = builder.phi(int_t)
    cur_bits.add_incoming(first, entry)
    cur = builder.bitcast(cur_bits, val.type)
    beats = builder.fcmp_ordered(">" if kind == "max" else "<", val, cur)
    # -0.0 < +0.0: a max replaces -0.0 by +0.0, a min +0.0 by -0.0
    low, high = (sign, zero) if kind == "max" else (zero, sign)
    zero_tie = builder.and_(builder.icmp_unsigned("==", cur_bits, low),
                            builder.icmp_unsigned("==", val_bits, high))
    replaces = builder.or_(builder.or_(beats, zero_tie),
                           builder.fcmp_unordered("uno", val, val))
    replaces = builder.and_(replaces, builder.fcmp_ordered("ord", cur, cur))
    new_bits = builder.select(replaces, val_bits, cur_bits)
    pair = builder.cmpxchg(bits_ptr, cur_bits, new_bits, "acq_rel", "acquire")
    cur_bits.add_incoming(builder.extract_value(pair, 0), loop)
    builder.cbranch(builder.extract_value(pair, 1), done, loop)
    builder.position_at_end(done)
    return cur


def py_cas(arr, idx, cmp, val):
    old = arr[idx]
    if old == cmp:
        arr[idx] = val
    return old


def numba_rmw(kind: str):
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic
    def rmw(typingctx, arr, idx, val):
        dtype = arr.dtype
        float_minmax = isinstance(dtype, types.Float) and kind in ("max", "min")
        if isinstance(dtype, types.Float):
            llvm_op = {"add": "fadd", "xchg": "xchg"}.get(kind)
        elif getattr(dtype, "signed", True):
            llvm_op = {"add": "add", "max": "max", "min": "min", "xchg": "xchg", **BITWISE}[kind]
        else:
            llvm_op = {"add": "add", "max": "umax", "min": "umin", "xchg": "xchg",
                       **BITWISE}[kind]

        def codegen(context, builder, signature, args):
            ptr = _element_pointer(context, builder, signature, args)
            val_v = context.cast(builder, args[2], signature.args[2], dtype)
            if float_minmax:
                return _float_minmax_loop(kind, builder, ptr, val_v)
            return builder.atomic_rmw(llvm_op, ptr, val_v, "acq_rel")

        return dtype(arr, idx, val), codegen

    return rmw


def numba_cas():
    from llvmlite import ir
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic
    def cas(typingctx, arr, idx, cmp, val):
        dtype = arr.dtype

        def codegen(context, builder, signature, args):
            _, _, cmp_t, val_t = signature.args
            _, _, cmp_v, val_v = args
            ptr = _element_pointer(context, builder, signature, args)
            cmp_v = context.cast(builder, cmp_v, cmp_t, dtype)
            val_v = context.cast(builder, val_v, val_t, dtype)
            if isinstance(dtype, types.Float):  # cmpxchg compares integers: use the bits
                int_t = ir.IntType(dtype.bitwidth)
                ptr = builder.bitcast(ptr, int_t.as_pointer())
                cmp_v, val_v = builder.bitcast(cmp_v, int_t), builder.bitcast(val_v, int_t)
                pair = builder.cmpxchg(ptr, cmp_v, val_v, "acq_rel", "acquire")
                return builder.bitcast(builder.extract_value(pair, 0),
                                       context.get_value_type(dtype))
            pair = builder.cmpxchg(ptr, cmp_v, val_v, "acq_rel", "acquire")
            return builder.extract_value(pair, 0)

        return dtype(arr, idx, cmp, val), codegen

    return cas


def tile_rmw(rmw):
    """Apply a scalar atomic to every unmasked element; returns the old values."""
    def apply(arr, offs, vals, mask):
        old = np.zeros(offs.shape, arr.dtype)
        o, v, m, r = offs.reshape(-1), vals.reshape(-1), mask.reshape(-1), old.reshape(-1)
        for i in range(o.size):
            if m[i]:
                r[i] = rmw(arr, o[i], v[i])
        return old
    return apply


def tile_cas(cas):
    def apply(arr, offs, cmps, vals):
        old = np.empty(offs.shape, arr.dtype)
        o, c, v, r = offs.reshape(-1), cmps.reshape(-1), vals.reshape(-1), old.reshape(-1)
        for i in range(o.size):
            r[i] = cas(arr, o[i], c[i], v[i])
        return old
    return apply
