"""The globals generated CPU modules run with: helpers compiled by Numba, or plain Python in
debug mode (where ``prange`` is ``range`` and ``njit`` does nothing)."""

from __future__ import annotations

import functools
import types
from typing import Any

from . import atomics, helpers

# Functions only compiled code calls need neither of the wrappers Numba adds by default (one
# for calls from Python, one for C callers), each lowered and compiled per signature. Measured
# in fresh processes, skipping them saves little (BENCHMARKS.md, "Cold compiles"); it is work
# Numba need not do.
CALLEE_ONLY = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}
NUMBA_OPTIONS = {"cache": True, "error_model": "numpy", "nogil": True,
                 "fastmath": {"reassoc", "contract", "arcp", "nsz", "afn"}, **CALLEE_ONLY}
# Helpers compiled without `afn` (approximate functions) and `nsz` (no signed zeros): the
# flags are per instruction, so they stay off inside them when LLVM inlines them into a
# kernel (see helpers.fpow).
EXACT = {"fpow"}
IEEE = {"div_rn", "sqrt_rn"}  # correctly rounded: compiled with no fast-math at all
EXACT_FASTMATH = NUMBA_OPTIONS["fastmath"] - {"afn", "nsz"}
# Helpers replaced in debug mode, where NumPy runs them (helpers.fpow_debug says why).
DEBUG_VERSIONS = {"fpow": "fpow_debug"}


def _identity_njit(*args: Any, **kwargs: Any) -> Any:
    if args and callable(args[0]):
        return args[0]
    return lambda fn: fn


@functools.cache
def _namespace(jit: bool) -> dict[str, Any]:
    ns: dict[str, Any] = {}
    if jit:
        from numba import njit, prange

        wrap = njit(**NUMBA_OPTIONS)
        wrap_exact = njit(**{**NUMBA_OPTIONS, "fastmath": EXACT_FASTMATH})
        wrap_ieee = njit(**{**NUMBA_OPTIONS, "fastmath": False})
        ns["njit"], ns["prange"] = njit, prange
        rmw, cas = atomics.numba_rmw, atomics.numba_cas()
        compile_closure = njit(error_model="numpy", nogil=True, **CALLEE_ONLY)
    else:
        wrap = wrap_exact = wrap_ieee = _identity_njit
        ns["njit"], ns["prange"] = _identity_njit, range
        rmw, cas = atomics.py_rmw, atomics.py_cas
        compile_closure = _identity_njit
    # Helpers call one another: compiled, each must see the compiled others, so each is
    # rebuilt over a globals dict that holds the compiled versions.
    helper_globals = dict(vars(helpers))
    for name in helpers.NAMES:
        fn = getattr(helpers, name)
        if jit:
            fn = types.FunctionType(fn.__code__, helper_globals, name)
        wrapper = wrap_ieee if name in IEEE else wrap_exact if name in EXACT else wrap
        ns[name] = helper_globals[name] = wrapper(fn)
    if not jit:
        for name, debug_name in DEBUG_VERSIONS.items():
            ns[name] = helper_globals[name] = getattr(helpers, debug_name)
    for kind in atomics.OPS:
        scalar = rmw(kind)
        ns[f"atomic_{kind}_s"] = scalar
        ns[f"atomic_{kind}_t"] = compile_closure(atomics.tile_rmw(scalar))
    ns["atomic_cas_s"] = cas
    ns["atomic_cas_t"] = compile_closure(atomics.tile_cas(cas))
    return ns


@functools.cache
def erf_ufunc(jit: bool) -> Any:
    """erf as a ufunc, so Numba fuses it into array expressions like np.exp. Built only for
    kernels that use erf: even from Numba's cache it costs ~0.4 s."""
    if jit:
        from numba import vectorize

        signatures = ["float32(float32)", "float64(float64)"]
        return vectorize(signatures, cache=True)(helpers.erf_scalar)
    import numpy as np

    def erf(x: Any) -> Any:
        dtype = np.asarray(x).dtype
        return np.vectorize(helpers.erf_scalar, otypes=[dtype])(x)[()]

    return erf


def install(module_globals: dict[str, Any], jit: bool) -> None:
    """Put the helpers (and ``njit``/``prange``) into a generated module's globals."""
    module_globals.update(_namespace(jit))
