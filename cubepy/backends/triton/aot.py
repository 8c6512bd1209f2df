"""Ahead-of-time compilation of a ``@triton.jit`` kernel for a GPU that is not here.

``triton.compile(ASTSource(fn, signature, constexprs, attrs), target=GPUTarget(...))`` runs the
whole compiler (to PTX and cubin, or AMDGCN and hsaco) without a GPU or driver; this module
wraps it for a target named in cubepy's words (``"cuda:90"``, ``"hip:gfx942"``) and returns
the text of each stage. It is how tests check code generation (``wgmma`` on sm_90,
``v_mfma`` on gfx942) on a CPU-only machine.

Triton versions: the ``ASTSource(fn, signature, constexprs=None, attrs=None)`` form, with
``signature`` naming every parameter (constexprs typed ``"constexpr"``) and the keys of
``constexprs``/``attrs`` as 1-tuples of parameter indices, is the same on 3.6 and 3.9 (both
checked); indices are used rather than names because older 3.x releases took only those.

The interpreter: compiling needs the ``JITFunction`` form of the kernel and of the
``triton.language`` helpers it calls, and ``ConstexprFunction``s return plain values while
``knobs.runtime.interpret`` is on. ``compile_aot`` therefore compiles inside
``loader.interpret_mode(False)``, which works whatever ``TRITON_INTERPRET`` said when the
kernel was decorated or ``triton`` imported; the previous mode comes back afterwards.

Example:
    >>> asm = compile_aot(matmul, {"a": "*fp16", "b": "*fp16", "c": "*fp32", "M": "i32"},
    ...                   {"BLOCK": 64}, "cuda:90")              # doctest: +SKIP
    >>> "wgmma" in asm.text, asm.shared, asm.num_warps            # doctest: +SKIP
    (True, 16384, 4)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from .loader import KernelFunction, as_mode, interpret_mode

#: cubepy dtype names -> Triton's signature spelling; Triton's own spellings pass unchanged.
_TRITON_TYPE = {
    "bool": "i1",
    "int1": "i1",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float32": "fp32",
    "float64": "fp64",
}

#: The ISA text each backend produces, and its binary.
_ISA = {"cuda": ("ptx", "cubin"), "hip": ("amdgcn", "hsaco")}


def triton_type(type_name: str) -> str:
    """A signature type in Triton's spelling: ``"*float16"`` -> ``"*fp16"``, ``"i32"`` kept.

    A pointer to ``bool`` is ``*u1``, as Triton types torch bool tensors; a scalar ``bool``
    is ``i1``.

    Example:
        >>> triton_type("*bfloat16"), triton_type("int64"), triton_type("*bool")
        ('*bf16', 'i64', '*u1')
    """
    if type_name.startswith("*"):
        inner = type_name[1:]
        if inner in ("bool", "int1", "i1"):
            return "*u1"
        return "*" + _TRITON_TYPE.get(inner, inner)
    return _TRITON_TYPE.get(type_name, type_name)


def parse_target(target: str) -> GPUTarget:
    """``"cuda:90"`` -> ``GPUTarget("cuda", 90, 32)``; ``"hip:gfx942"`` -> ``GPUTarget("hip",
    "gfx942", 64)`` (CDNA ``gfx9*`` runs 64-wide waves, RDNA ``gfx10+`` 32-wide).

    ``"sm_90"``/``"sm90"`` and ``"cuda:sm_90a"`` are accepted for CUDA too.

    Example:
        >>> parse_target("hip:gfx1100").warp_size
        32
    """
    backend, _, arch = target.partition(":")
    if not arch and backend.startswith("sm"):
        backend, arch = "cuda", backend
    backend = backend.strip().lower()
    arch = arch.strip()
    if backend == "cuda":
        match = re.fullmatch(r"(?:sm_?)?(\d+)a?", arch)
        if match is None:
            raise ValueError(f"bad CUDA target {target!r}: expected e.g. 'cuda:90' or 'cuda:sm_80'")
        return GPUTarget("cuda", int(match.group(1)), 32)
    if backend in ("hip", "rocm", "amd"):
        if re.fullmatch(r"gfx[0-9a-f]+", arch) is None:
            raise ValueError(f"bad HIP target {target!r}: expected e.g. 'hip:gfx942'")
        wave = 64 if re.fullmatch(r"gfx9[0-9a-f]*", arch) else 32
        return GPUTarget("hip", arch, wave)
    raise ValueError(f"unknown AOT target {target!r}: expected 'cuda:<sm>' or 'hip:<gfx arch>'")


@dataclass(frozen=True)
class CompiledAsm:
    """What ``compile_aot`` produced.

    ``asm`` maps each stage (``ttir``, ``ttgir``, ``llir``, ``ptx``/``cubin`` or
    ``amdgcn``/``hsaco``) to its text (bytes for the binary); ``text`` is the ISA text (PTX or
    AMDGCN). ``shared`` is the kernel's static shared memory in bytes, ``num_warps`` and
    ``num_stages`` the options it was built with; ``metadata`` is Triton's full record.
    """

    target: str
    name: str
    asm: Mapping[str, str | bytes] = field(repr=False)
    shared: int
    num_warps: int
    num_stages: int
    metadata: Any = field(repr=False, compare=False)

    @property
    def isa(self) -> str:
        """The key of the ISA text in ``asm``: ``"ptx"`` or ``"amdgcn"``."""
        return _ISA[self.target.partition(":")[0]][0]

    @property
    def text(self) -> str:
        """The PTX or AMDGCN text."""
        text = self.asm[self.isa]
        return text if isinstance(text, str) else text.decode()


def _full_signature(
    fn: KernelFunction, signature: Mapping[str, str], constexprs: Mapping[str, Any]
) -> dict[str, str]:
    arg_names = list(fn.arg_names)
    unknown = sorted((set(signature) | set(constexprs)) - set(arg_names))
    if unknown:
        raise ValueError(
            f"{fn.__name__} has no parameter(s) {unknown}; its parameters: {arg_names}"
        )
    full: dict[str, str] = {}
    for name in arg_names:
        if name in constexprs:
            full[name] = "constexpr"
        elif name in signature:
            full[name] = triton_type(signature[name])
        else:
            raise ValueError(
                f"compile_aot({fn.__name__}): no type for parameter {name!r}; give it in "
                "`signature` (e.g. '*fp16', 'i32') or its value in `constexprs`"
            )
    return full


def compile_aot(
    jit_fn: KernelFunction,
    signature: Mapping[str, str],
    constexprs: Mapping[str, Any],
    target: str,
    *,
    num_warps: int = 4,
    num_stages: int = 3,
    aligned: bool = True,
    options: Mapping[str, Any] | None = None,
) -> CompiledAsm:
    """Compile ``jit_fn`` for ``target`` (``"cuda:90"``, ``"hip:gfx942"``) without a GPU.

    ``signature`` types each runtime parameter (``"*fp16"``, ``"i32"``; cubepy names such as
    ``"*float16"`` work too); ``constexprs`` gives the values of ``tl.constexpr`` parameters.
    ``aligned`` marks pointer arguments 16-byte aligned, as a launch with aligned arrays would.
    ``options`` are extra Triton compile options (``{"enable_fp_fusion": False}``).

    Example:
        >>> asm = compile_aot(kernel, {"x": "*fp32", "n": "i32"}, {"BLOCK": 128},
        ...                   "hip:gfx942")                        # doctest: +SKIP
        >>> asm.isa  # doctest: +SKIP
        'amdgcn'
    """
    gpu_target = parse_target(target)
    canonical = f"{gpu_target.backend}:{gpu_target.arch}"
    with interpret_mode(False):
        fn = as_mode(jit_fn, False)
        full = _full_signature(fn, signature, constexprs)
        names = list(full)
        consts = {(names.index(k),): v for k, v in constexprs.items()}
        attrs = {}
        if aligned:
            attrs = {
                (i,): [["tt.divisibility", 16]]
                for i, t in enumerate(full.values())
                if t.startswith("*")
            }
        src = ASTSource(fn, full, consts, attrs)
        opts = {"num_warps": num_warps, "num_stages": num_stages, **(options or {})}
        compiled = triton.compile(src, target=gpu_target, options=opts)
    metadata = compiled.metadata
    return CompiledAsm(
        target=canonical,
        name=str(metadata.name),
        asm=dict(compiled.asm),
        shared=int(metadata.shared),
        num_warps=int(metadata.num_warps),
        num_stages=int(metadata.num_stages),
        metadata=metadata,
    )
