"""Atomic read-modify-write for the CPU target.

With Numba, each is one LLVM ``atomicrmw``/``cmpxchg`` on the array element (the grid runs
in parallel threads, so a plain read-modify-write would lose updates), acquire-release as on
Triton: a cube's stores before an atomic are seen by a cube that reads its result after (the
split-K matmul hands its partial sums over so). In debug mode the grid runs sequentially and
the same functions are plain Python.
"""

from __future__ import annotations

import numpy as np

OPS = ("add", "max", "min", "xchg")


def py_rmw(kind: str):
    def rmw(arr, idx, val):
        old = arr[idx]
        if kind == "add":
            arr[idx] = old + val
        elif kind == "max":
            arr[idx] = max(old, val)
        elif kind == "min":
            arr[idx] = min(old, val)
        else:
            arr[idx] = val
        return old
    return rmw


def py_cas(arr, idx, cmp, val):
    old = arr[idx]
    if old == cmp:
        arr[idx] = val
    return old


def numba_rmw(kind: str):
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    @intrinsic
    def rmw(typingctx, arr, idx, val):
        dtype = arr.dtype
        if isinstance(dtype, types.Float):
            llvm_op = {"add": "fadd", "max": "fmax", "min": "fmin", "xchg": "xchg"}[kind]
        elif getattr(dtype, "signed", True):
            llvm_op = {"add": "add", "max": "max", "min": "min", "xchg": "xchg"}[kind]
        else:
            llvm_op = {"add": "add", "max": "umax", "min": "umin", "xchg": "xchg"}[kind]

        def codegen(context, builder, signature, args):
            arr_t, idx_t, val_t = signature.args
            arr_v, idx_v, val_v = args
            ary = context.make_array(arr_t)(context, builder, arr_v)
            idx_v = context.cast(builder, idx_v, idx_t, types.intp)
            ptr = cgutils.get_item_pointer(context, builder, arr_t, ary, [idx_v],
                                           wraparound=False)
            val_v = context.cast(builder, val_v, val_t, dtype)
            return builder.atomic_rmw(llvm_op, ptr, val_v, "acq_rel")

        return dtype(arr, idx, val), codegen

    return rmw


def numba_cas():
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    @intrinsic
    def cas(typingctx, arr, idx, cmp, val):
        dtype = arr.dtype

        def codegen(context, builder, signature, args):
            arr_t, idx_t, cmp_t, val_t = signature.args
            arr_v, idx_v, cmp_v, val_v = args
            ary = context.make_array(arr_t)(context, builder, arr_v)
            idx_v = context.cast(builder, idx_v, idx_t, types.intp)
            ptr = cgutils.get_item_pointer(context, builder, arr_t, ary, [idx_v],
                                           wraparound=False)
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
