"""NumPy's no-copy reshape test, for native images (see native.py).

Compiled code reshapes arrays through a C helper of Numba's (``numba_attempt_nocopy_reshape``)
that a process without Numba does not have: native images carry this function instead, compiled
by Numba when the image is built. Given an array's dims and strides and the new dims, it fills
the new strides and returns 1 when the new shape can view the same memory, else 0 — NumPy's rule:
the new and old shapes are split into chunks of equal size, and each chunk's old axes must be
laid out as one block (C or Fortran order); axes of length 1 are free.

Example:
    >>> out = np.empty(2, np.intp)
    >>> nocopy_strides(np.array([6]), np.array([4]), np.array([2, 3]), out, 4, False), out
    (1, array([12,  4]))
"""

from __future__ import annotations

from typing import Any

from .namespace import CALLEE_ONLY


def _next_axis(dims: Any, nd: int, i: int) -> int:
    """The first axis from ``i`` on whose length is not 1 (``nd`` when there is none)."""
    while i < nd and dims[i] == 1:
        i += 1
    return i


def _chunk_contiguous(dims: Any, strides: Any, nd: int, first: int, end: int,
                      fortran: bool) -> int:
    """The last axis of the old chunk ``first..end`` when its axes form one block, else -1."""
    axis = first
    while True:
        following = _next_axis(dims, nd, axis + 1)
        if following >= end:
            return axis
        if fortran:
            if strides[following] != dims[axis] * strides[axis]:
                return -1
        elif strides[axis] != dims[following] * strides[following]:
            return -1
        axis = following


def nocopy_strides(dims: Any, strides: Any, new_dims: Any, new_strides: Any, itemsize: int,
                   fortran: bool) -> int:
    """Fill ``new_strides`` for viewing an array of ``dims``/``strides`` as ``new_dims``;
    1 when that view exists, else 0 (see the module docstring)."""
    nd, newnd = len(dims), len(new_dims)
    for i in range(nd):
        if dims[i] == 0:  # an empty array: any strides view it (Numba's helper does the same)
            for nk in range(newnd):
                new_strides[nk] = itemsize
            return 1
    oi = _next_axis(dims, nd, 0)
    ni = 0
    while ni < newnd and oi < nd:
        oj, nj = _next_axis(dims, nd, oi + 1), ni + 1
        new_size, old_size = new_dims[ni], dims[oi]
        while new_size != old_size:  # grow the smaller side until the chunk sizes agree
            if new_size < old_size:
                if nj >= newnd:
                    return 0
                new_size *= new_dims[nj]
                nj += 1
            else:
                if oj >= nd:
                    return 0
                old_size *= dims[oj]
                oj = _next_axis(dims, nd, oj + 1)
        last = _chunk_contiguous(dims, strides, nd, oi, oj, fortran)
        if last < 0:
            return 0
        if fortran:
            new_strides[ni] = strides[oi]
            for nk in range(ni + 1, nj):
                new_strides[nk] = new_strides[nk - 1] * new_dims[nk - 1]
        else:
            new_strides[nj - 1] = strides[last]
            for nk in range(nj - 1, ni, -1):
                new_strides[nk - 1] = new_strides[nk] * new_dims[nk]
        ni, oi = nj, oj
    # trailing new axes (all of length 1)
    stride = new_strides[ni - 1] if ni >= 1 else itemsize
    if fortran and ni >= 1:
        stride *= new_dims[ni - 1]
    for nk in range(ni, newnd):
        new_strides[nk] = stride
    return 1


carray: Any = None  # numba.carray, in the globals compiled() compiles with


def _from_pointers(nd: int, dims: Any, strides: Any, newnd: int, new_dims: Any,
                   new_strides: Any, itemsize: int, is_f_order: int) -> int:
    """Numba's helper's C signature over ``nocopy_strides``."""
    return nocopy_strides(carray(dims, nd), carray(strides, nd), carray(new_dims, newnd),
                          carray(new_strides, newnd), itemsize, is_f_order != 0)


def compiled() -> tuple[Any, str]:
    """Numba's compilation of the helper: its code library and the name of its native function
    (Numba's calling convention: status, return pointer, exception pointer, arguments)."""
    import types as pytypes

    import numba
    from numba import types

    options = {"error_model": "numpy", "nogil": True, **CALLEE_ONLY}  # only its LLVM is used
    source: dict[str, Any] = dict(globals(), carray=numba.carray)
    for name in ("_next_axis", "_chunk_contiguous", "nocopy_strides"):  # callees first
        fn = globals()[name]
        source[name] = numba.njit(inline="always", **options)(
            pytypes.FunctionType(fn.__code__, source, name))
    entry = numba.njit(**options)(pytypes.FunctionType(_from_pointers.__code__, source,
                                                       "_from_pointers"))
    intp, pointer = types.intp, types.CPointer(types.intp)
    # the C helper returns an int: without the explicit int32, Numba would return int64
    signature = types.int32(intp, pointer, pointer, intp, pointer, pointer, intp, types.int32)
    entry.compile(signature)
    result = entry.overloads[signature.args]
    return result.library, result.fndesc.llvm_func_name
