"""Native images: a compiled CPU kernel's machine code, loaded later without importing Numba.

Numba's own disk cache still costs a new process Numba's start-up (its import and the typing
and lowering registries it fills before the first cached call: ~0.4 s here) before a kernel runs.
So once Numba has compiled a kernel's grid function, we keep an object file of our own: the
function with everything it calls, a C entry point, and the two allocator functions its tile
arrays need, with every dependency on Python and on Numba's runtime dropped. A later process
hands that object to llvmlite's JIT linker (no compiling: relocation only) and calls the entry
through ctypes, which releases the GIL as the grid's threads need.

A kernel whose code needs more of Numba's runtime (BLAS for ``dot``, ...) gets no image and runs
through Numba's dispatcher as before; so do launches the image cannot serve (read-only arrays).

Example:
    >>> image = build(grid_fn, kinds, "cubepy_entry_k1234")   # doctest: +SKIP
    >>> entry = load(image, kinds)                             # doctest: +SKIP
    >>> status = entry(0, total, g0, g1, g2, ptr_a, len_a, ...)  # doctest: +SKIP
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import threading
from typing import Any

import numpy as np

from ... import config

FORMAT = "cubepy-native-3"  # bump when the image's layout or entry convention changes
GRID_ARGS = 5  # start, stop, g0, g1, g2: the grid function's leading int64 arguments
# The fields of a 1-D C-contiguous NumPy array as Numba's calling convention passes them:
# meminfo, parent, nitems, itemsize, data, shape[0], strides[0].
ARRAY_PARAMS = ("ptr", "ptr", "i64", "i64", "ptr", "i64", "i64")
# The ctypes type of a scalar argument, by the LLVM type Numba gives its parameter.
_SCALAR_CTYPES = {"i1": ctypes.c_uint8, "i8": ctypes.c_int8, "i16": ctypes.c_int16,
                  "i32": ctypes.c_int32, "i64": ctypes.c_int64, "float": ctypes.c_float,
                  "double": ctypes.c_double}
# Numba's runtime frees what it allocates through these; the image brings its own (below).
_RUNTIME_SYMBOLS = ("NRT_", "numba_", "Py", "_Py")
DYNAMIC_GLOBAL_PREFIX = "numba.dynamic.globals"  # Numba's name for a global it sets to an address
RESHAPE_HELPER = "numba_attempt_nocopy_reshape"  # a C helper of Numba's; reshape.py is ours

# Numba's arrays keep a MemInfo {refct, dtor, dtor_info, data, size, external_allocator};
# compiled code reads `data` (field 3) and counts references inline, calling these for
# allocation and for the last release. Ours put the header and the data in one malloc block;
# NRT_Allocate/NRT_Free are Numba's plain malloc/free.
_ALLOCATOR_IR = """
declare ptr @malloc(i64)
declare void @free(ptr)

define ptr @NRT_MemInfo_alloc_aligned(i64 %size, i32 %align) {
entry:
  %align64 = zext i32 %align to i64
  %is_zero = icmp eq i64 %align64, 0
  %alignment = select i1 %is_zero, i64 1, i64 %align64
  %head_and_data = add i64 %size, 48
  %total = add i64 %head_and_data, %alignment
  %block = call ptr @malloc(i64 %total)
  %failed = icmp eq ptr %block, null
  br i1 %failed, label %out_of_memory, label %fill
out_of_memory:
  ret ptr null
fill:
  %base = ptrtoint ptr %block to i64
  %first = add i64 %base, 48
  %round_up = add i64 %first, %alignment
  %bump = sub i64 %round_up, 1
  %low_bits = sub i64 0, %alignment
  %data_address = and i64 %bump, %low_bits
  %data = inttoptr i64 %data_address to ptr
  store i64 1, ptr %block
  %dtor = getelementptr i8, ptr %block, i64 8
  store ptr null, ptr %dtor
  %dtor_info = getelementptr i8, ptr %block, i64 16
  store ptr null, ptr %dtor_info
  %data_field = getelementptr i8, ptr %block, i64 24
  store ptr %data, ptr %data_field
  %size_field = getelementptr i8, ptr %block, i64 32
  store i64 %size, ptr %size_field
  %allocator = getelementptr i8, ptr %block, i64 40
  store ptr null, ptr %allocator
  ret ptr %block
}

define ptr @NRT_MemInfo_alloc(i64 %size) {
entry:
  %meminfo = call ptr @NRT_MemInfo_alloc_aligned(i64 %size, i32 16)
  ret ptr %meminfo
}

define void @NRT_MemInfo_call_dtor(ptr %meminfo) {
entry:
  call void @free(ptr %meminfo)
  ret void
}

define ptr @NRT_Allocate(i64 %size) {
entry:
  %block = call ptr @malloc(i64 %size)
  ret ptr %block
}

define void @NRT_Free(ptr %block) {
entry:
  call void @free(ptr %block)
  ret void
}
"""


class NoImage(Exception):
    """The kernel's compiled code needs something an image cannot carry; Numba runs it."""


def array_kind(dtype: np.dtype) -> str:
    return f"array:{np.dtype(dtype).str}"


def scalar_kind(dtype: np.dtype) -> str:
    return f"scalar:{np.dtype(dtype).str}"


def host_tag() -> str:
    """What an image's machine code depends on besides the kernel: the CPU, the linker and
    the optimization level it was compiled at."""
    return _host_tag(config.settings().cpu_opt)


@functools.cache
def _host_tag(cpu_opt: int) -> str:
    import llvmlite
    import llvmlite.binding as llvm

    text = "\n".join([FORMAT, llvmlite.__version__, llvm.get_process_triple(),
                      llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten(),
                      f"opt {cpu_opt}"])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ---- building (the process that compiled the kernel with Numba) ----

def build(grid_fn: Any, kinds: list[str], entry: str) -> bytes:
    """The image of ``grid_fn`` (a Numba dispatcher) compiled for ``kinds``, or ``NoImage``."""
    import llvmlite.binding as llvm

    library, native_name = _compiled_library(grid_fn, kinds)
    module = library._final_module.clone()  # Numba keeps no public handle on the linked module
    native = module.get_function(native_name)
    params = [str(arg.type) for arg in native.arguments]
    expected = 2 + GRID_ARGS + sum(len(ARRAY_PARAMS) if k.startswith("array") else 1
                                   for k in kinds)
    if len(params) != expected:
        raise NoImage(f"unexpected calling convention ({len(params)} parameters)")
    support = llvm.parse_assembly(_ALLOCATOR_IR + _entry_ir(entry, native_name, params, kinds))
    support.triple, support.data_layout = module.triple, module.data_layout
    module.link_in(support)
    if _declares(module, RESHAPE_HELPER):
        _link_reshape_helper(module)
    _keep_only(module, entry)
    missing = _unresolvable(module)
    if missing:
        raise NoImage("needs " + ", ".join(sorted(missing)))
    addresses = _process_addresses(module)
    if addresses:
        raise NoImage("holds addresses of this process: " + ", ".join(sorted(addresses)))
    header = json.dumps({"format": FORMAT, "entry": entry, "params": params[2:],
                         "kinds": kinds}).encode()
    return header + b"\n" + library._codegen._tm.emit_object(module)


def _declares(module: Any, name: str) -> bool:
    try:
        return module.get_function(name).is_declaration
    except NameError:
        return False


@functools.cache
def _reshape_helper() -> tuple[Any, str, list[str]]:
    """Our compilation of Numba's reshape helper (reshape.py): its code library (kept here:
    its LLVM module dies with it), its native function's name and parameter types."""
    from . import reshape

    library, name = reshape.compiled()
    function = library._final_module.get_function(name)
    return library, name, [str(arg.type) for arg in function.arguments]


def _link_reshape_helper(module: Any) -> None:
    """Give ``module`` a definition of Numba's C helper for reshapes (reshape.py's, compiled)."""
    import llvmlite.binding as llvm

    library, name, params = _reshape_helper()
    arguments = ["i64", "ptr", "ptr", "i64", "ptr", "ptr", "i64", "i32"]
    if params != ["ptr", "ptr", *arguments]:
        raise NoImage(f"unexpected reshape helper parameters {params}")
    module.link_in(library._final_module.clone())
    named = [f"{t} %a{i}" for i, t in enumerate(arguments)]
    shim = llvm.parse_assembly("\n".join([
        f"declare i32 @\"{name}\"({', '.join(params)})",
        f"define i32 @{RESHAPE_HELPER}({', '.join(named)}) {{",
        "entry:",
        "  %ret = alloca i64  ; room for any integer the callee's return slot holds",
        "  %excinfo = alloca ptr",
        f"  %status = call i32 @\"{name}\"(ptr %ret, ptr %excinfo, {', '.join(named)})",
        "  %result = load i32, ptr %ret",
        "  ret i32 %result",
        "}",
    ]))
    shim.triple, shim.data_layout = module.triple, module.data_layout
    module.link_in(shim)


def _compiled_library(grid_fn: Any, kinds: list[str]) -> tuple[Any, str]:
    """The overload's code library and its native function's name. One loaded from Numba's
    disk cache holds object code only, so that case compiles once more, uncached."""
    import numba

    signature = (numba.int64,) * GRID_ARGS + tuple(_numba_type(k) for k in kinds)
    grid_fn.compile(signature)
    result = grid_fn.overloads[signature]
    name = result.fndesc.llvm_func_name
    try:
        result.library._final_module.get_function(name)
    except NameError:
        options = {k: v for k, v in grid_fn.targetoptions.items() if k not in ("cache", "nopython")}
        fresh = numba.njit(**options)(grid_fn.py_func)
        fresh.compile(signature)
        result = fresh.overloads[signature]
        name = result.fndesc.llvm_func_name
    return result.library, name


def _numba_type(kind: str) -> Any:
    import numba

    role, dtype = kind.split(":")
    element = numba.from_dtype(np.dtype(dtype))
    return numba.types.Array(element, 1, "C") if role == "array" else element


def _entry_ir(entry: str, native: str, params: list[str], kinds: list[str]) -> str:
    """``i32 entry(start, stop, g0, g1, g2, <data, length per array>, <scalars>)`` calling
    Numba's ``status native(ret*, excinfo*, args...)`` with each array's fields filled in."""
    entry_params = [f"i64 %g{i}" for i in range(GRID_ARGS)]
    call_args = [f"{params[2 + i]} %g{i}" for i in range(GRID_ARGS)]
    body = []
    index = 2 + GRID_ARGS
    for position, kind in enumerate(kinds):
        if kind.startswith("array"):
            itemsize = np.dtype(kind.split(":")[1]).itemsize
            if tuple(params[index:index + len(ARRAY_PARAMS)]) != ARRAY_PARAMS:
                raise NoImage(f"unexpected array parameters {params[index:index + 7]}")
            entry_params += [f"ptr %data{position}", f"i64 %len{position}"]
            call_args += ["ptr null", "ptr null", f"i64 %len{position}", f"i64 {itemsize}",
                          f"ptr %data{position}", f"i64 %len{position}", f"i64 {itemsize}"]
            index += len(ARRAY_PARAMS)
            continue
        llvm_type = params[index]
        if llvm_type not in _SCALAR_CTYPES:
            raise NoImage(f"unexpected scalar parameter type {llvm_type}")
        if llvm_type == "i1":  # C has no 1-bit integer: the entry takes a byte
            entry_params.append(f"i8 %byte{position}")
            body.append(f"  %s{position} = icmp ne i8 %byte{position}, 0")
        else:
            entry_params.append(f"{llvm_type} %s{position}")
        call_args.append(f"{llvm_type} %s{position}")
        index += 1
    return "\n".join([
        f"declare i32 @\"{native}\"({', '.join(params)})",
        f"define i32 @\"{entry}\"({', '.join(entry_params)}) {{",
        "entry:",
        "  %ret = alloca ptr",
        "  %excinfo = alloca ptr",
        *body,
        f"  %status = call i32 @\"{native}\"(ptr %ret, ptr %excinfo, {', '.join(call_args)})",
        "  ret i32 %status",
        "}",
    ])


def _keep_only(module: Any, entry: str) -> None:
    """Hide every definition but the entry, then drop what the entry does not reach (the
    Python wrapper Numba adds, and with it every Python C-API reference)."""
    import llvmlite.binding as llvm

    for value in [*module.functions, *module.global_variables]:
        if not value.is_declaration and value.name != entry:
            value.linkage = "internal"
    passes = llvm.create_new_module_pass_manager()
    passes.add_global_dead_code_eliminate_pass()
    passes.add_strip_dead_prototype_pass()
    target = llvm.Target.from_triple(module.triple).create_target_machine()
    passes.run(module, llvm.create_pass_builder(target, llvm.PipelineTuningOptions()))


def _unresolvable(module: Any) -> set[str]:
    """External names the image would need from Numba's or Python's runtime, or that this
    process cannot find at all."""
    process = ctypes.CDLL(None)
    needed = {f.name for f in module.functions
              if f.is_declaration and not f.name.startswith("llvm.")}
    needed |= {g.name for g in module.global_variables if g.is_declaration}
    return {name for name in needed
            if name.startswith(_RUNTIME_SYMBOLS) or not hasattr(process, name)}


def _process_addresses(module: Any) -> set[str]:
    """Numba's "dynamic globals" the entry still reaches: each holds an address in this
    process (of a Python object, a ctypes function, ...), meaningless in any other. Optimized
    code drops them with the Python wrapper; at CUBEPY_CPU_OPT=0 some survive."""
    return {g.name for g in module.global_variables
            if g.name.startswith(DYNAMIC_GLOBAL_PREFIX) and not g.is_declaration}


# ---- loading (any later process; llvmlite only) ----

_engine_lock = threading.Lock()
_engine: Any = None
_loaded: dict[str, Any] = {}  # entry name -> ctypes function; an object is added once


def load(image: bytes, kinds: list[str]) -> Any:
    """The ctypes function of an image's entry, which must take arguments of ``kinds``
    (``ValueError`` if the image is not one, or is for other arguments)."""
    head, _, code = image.partition(b"\n")
    meta = json.loads(head)
    if meta.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} image")
    if meta.get("kinds") != kinds:
        raise ValueError(f"an image for arguments {meta.get('kinds')}, not {kinds}")
    with _engine_lock:
        if meta["entry"] in _loaded:
            return _loaded[meta["entry"]]
        import llvmlite.binding as llvm

        engine = _jit_engine()
        engine.add_object_file(llvm.ObjectFileRef.from_data(code))
        engine.finalize_object()
        address = engine.get_function_address(meta["entry"])
        if not address:
            raise ValueError(f"image lacks its entry {meta['entry']}")
        argtypes = _argtypes(meta["params"], meta["kinds"])
        function = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(address)
        _loaded[meta["entry"]] = function
        return function


def _argtypes(params: list[str], kinds: list[str]) -> list[Any]:
    types: list[Any] = [ctypes.c_int64] * GRID_ARGS
    index = GRID_ARGS
    for kind in kinds:
        if kind.startswith("array"):
            types += [ctypes.c_void_p, ctypes.c_int64]
            index += len(ARRAY_PARAMS)
        else:
            types.append(_SCALAR_CTYPES[params[index]])
            index += 1
    return types


def _jit_engine() -> Any:
    global _engine
    if _engine is None:
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple().create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten())
        _engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target)
    return _engine
