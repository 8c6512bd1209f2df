"""Scalar kernel arguments packed into one uniform buffer, and the grid-folding rule.

The code generator declares one uniform struct per kernel with ``uniform_struct_wgsl`` and the
launcher fills it with ``pack_uniforms``; both follow WGSL's layout rules, so they agree.

Field types are cubepy dtype names (WGSL spellings are accepted too). Uniform storage of each:

| field dtype | WGSL member type | align/size | host value |
| --- | --- | --- | --- |
| ``int32`` | ``i32`` | 4 | int |
| ``uint32`` | ``u32`` | 4 | int |
| ``float32`` | ``f32`` | 4 | float |
| ``float16`` | ``f32`` (convert with ``f16(params.x)`` in the kernel) | 4 | float |
| ``bool`` | ``u32`` (0 or 1; read as ``params.x != 0u``) | 4 | bool |
| ``int64`` | ``i64`` (needs ``shader-int64``) | 8 | int |
| ``float64`` | ``f64`` (needs ``shader-f64``) | 8 | float |

Members are laid out in the given order, each at the next multiple of its alignment; the
buffer is the struct size rounded up to 16 bytes.

Grid folding. WebGPU caps each dispatch axis at ``max_compute_workgroups_per_dimension``
(65535). The launcher always puts the real grid first in the uniform struct as
``GRID_FIELDS`` (``cube_count_x``, ``cube_count_y``, ``cube_count_z``: u32) and dispatches
``fold_grid(grid)`` workgroups. A kernel reconstructs its cube position from the linear
workgroup index and skips the excess workgroups; ``cube_pos_wgsl()`` writes that code:

    let cube_linear = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
    if (cube_linear >= params.cube_count_x * params.cube_count_y * params.cube_count_z) { return; }
    let cube_pos_x = cube_linear % params.cube_count_x;
    let cube_pos_y = (cube_linear / params.cube_count_x) % params.cube_count_y;
    let cube_pos_z = cube_linear / (params.cube_count_x * params.cube_count_y);

with ``@builtin(workgroup_id) wid: vec3<u32>`` and ``@builtin(num_workgroups) nwg:
vec3<u32>``. The rule holds whether or not the grid was folded (unfolded, it gives back
``wid``), and the early return is workgroup-uniform, so barriers after it stay valid.

Example:
    >>> fields = [*GRID_FIELDS, ("n", "uint32"), ("scale", "float32")]
    >>> print(uniform_struct_wgsl(fields))  # doctest: +NORMALIZE_WHITESPACE
    struct Params {
        cube_count_x: u32,
        cube_count_y: u32,
        cube_count_z: u32,
        n: u32,
        scale: f32,
    }
    >>> len(pack_uniforms([("uint32", 5), ("uint32", 1), ("uint32", 1), ("float32", 2.0)]))
    16
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

# (wgsl member type, struct format char, alignment = size)
_UNIFORM_TYPES: dict[str, tuple[str, str, int]] = {
    "int32": ("i32", "i", 4),
    "uint32": ("u32", "I", 4),
    "float32": ("f32", "f", 4),
    "float16": ("f32", "f", 4),
    "bool": ("u32", "I", 4),
    "int64": ("i64", "q", 8),
    "float64": ("f64", "d", 8),
}
_WGSL_ALIASES = {
    "i32": "int32",
    "u32": "uint32",
    "f32": "float32",
    "f16": "float16",
    "i64": "int64",
    "f64": "float64",
    "int1": "bool",
}

GRID_FIELDS: tuple[tuple[str, str], ...] = (
    ("cube_count_x", "uint32"),
    ("cube_count_y", "uint32"),
    ("cube_count_z", "uint32"),
)
MAX_WORKGROUPS_PER_DIMENSION = 65535


def _uniform_type(dtype: str) -> tuple[str, str, int]:
    name = _WGSL_ALIASES.get(dtype, dtype)
    if name not in _UNIFORM_TYPES:
        raise TypeError(
            f"scalar of dtype {dtype!r} cannot be passed to a 'wgsl' kernel; "
            f"supported: {', '.join(_UNIFORM_TYPES)}"
        )
    return _UNIFORM_TYPES[name]


def uniform_offsets(dtypes: Sequence[str]) -> tuple[list[int], int]:
    """Byte offsets of each field and the buffer size (struct size rounded up to 16).

    Example:
        >>> uniform_offsets(["uint32", "float64", "float32"])
        ([0, 8, 16], 32)
    """
    offsets: list[int] = []
    end = 0
    for dtype in dtypes:
        align = _uniform_type(dtype)[2]
        offset = -(-end // align) * align
        offsets.append(offset)
        end = offset + align
    return offsets, max(16, -(-end // 16) * 16)


def pack_uniforms(values: Sequence[tuple[str, Any]]) -> bytes:
    """The uniform buffer bytes for ``(dtype, value)`` pairs, in order.

    Example:
        >>> pack_uniforms([("uint32", 3), ("float32", 0.5)]).hex()
        '030000000000003f0000000000000000'
    """
    offsets, size = uniform_offsets([dtype for dtype, _ in values])
    out = bytearray(size)
    for (dtype, value), offset in zip(values, offsets, strict=True):
        _, fmt, _ = _uniform_type(dtype)
        if fmt in "iIq":
            value = int(value)
            if fmt == "I" and value < 0:
                value &= 0xFFFFFFFF
        else:
            value = float(value)
        struct.pack_into("<" + fmt, out, offset, value)
    return bytes(out)


def uniform_struct_wgsl(fields: Sequence[tuple[str, str]], name: str = "Params") -> str:
    """The WGSL struct declaration matching ``pack_uniforms`` for ``(name, dtype)`` fields.

    An empty field list gives a struct with one ``_pad: u32`` (WGSL has no empty structs).

    Example:
        >>> print(uniform_struct_wgsl([("n", "int32")], "P"))
        struct P {
            n: i32,
        }
    """
    members = [f"    {field}: {_uniform_type(dtype)[0]}," for field, dtype in fields]
    if not members:
        members = ["    _pad: u32,"]
    return "struct " + name + " {\n" + "\n".join(members) + "\n}"


def grid_uniform_values(grid: Sequence[int]) -> list[tuple[str, int]]:
    """The ``(dtype, value)`` pairs of ``GRID_FIELDS`` for a 1- to 3-axis grid."""
    x, y, z = normalize_grid(grid)
    return [("uint32", x), ("uint32", y), ("uint32", z)]


def normalize_grid(grid: Sequence[int] | int) -> tuple[int, int, int]:
    """A grid as 3 non-negative ints (missing axes are 1).

    Example:
        >>> normalize_grid((10,))
        (10, 1, 1)
    """
    axes = (grid,) if isinstance(grid, int) else tuple(grid)
    if not 1 <= len(axes) <= 3:
        raise ValueError(f"grid must have 1 to 3 axes, got {axes!r}")
    if any(int(a) != a or a < 0 for a in axes):
        raise ValueError(f"grid axes must be non-negative ints, got {axes!r}")
    padded = tuple(int(a) for a in axes) + (1,) * (3 - len(axes))
    return padded  # type: ignore[return-value]


def fold_grid(
    grid: Sequence[int] | int, max_per_dim: int = MAX_WORKGROUPS_PER_DIMENSION
) -> tuple[int, int, int]:
    """The workgroup counts to dispatch for ``grid`` (see the module docstring).

    A grid whose axes all fit is dispatched unchanged. Otherwise its ``N = x*y*z`` cubes are
    spread as ``fx = min(N, M)``, ``fy = min(cdiv(N, fx), M)``, ``fz = cdiv(N, fx*fy)``
    workgroups with ``M = max_per_dim``; the kernel skips linear indices ``>= N``.

    Example:
        >>> fold_grid((70000,))
        (65535, 2, 1)
        >>> fold_grid((4, 5, 6))
        (4, 5, 6)
    """
    x, y, z = normalize_grid(grid)
    if max(x, y, z) <= max_per_dim:
        return (x, y, z)
    total = x * y * z
    if total == 0:
        return (0, 1, 1)
    if total >= 2**32:
        raise ValueError(
            f"grid {tuple(grid) if not isinstance(grid, int) else grid} has {total} cubes; "
            "target 'wgsl' supports fewer than 2**32 (cube indices are u32)"
        )
    fx = min(total, max_per_dim)
    fy = min(-(-total // fx), max_per_dim)
    fz = -(-total // (fx * fy))
    if fz > max_per_dim or fx * fy * fz >= 2**32:  # the kernel's linear index is a u32
        raise ValueError(f"grid {grid!r} is too large to fold into 3 axes of {max_per_dim}")
    return (fx, fy, fz)


def cube_pos_wgsl(params: str = "params", wid: str = "wid", nwg: str = "nwg") -> str:
    """WGSL statements that define ``cube_pos_x/y/z`` and return from excess workgroups.

    ``wid`` and ``nwg`` name the ``workgroup_id`` and ``num_workgroups`` builtins; ``params``
    the uniform struct variable holding ``GRID_FIELDS``.
    """
    p = params
    count = f"{p}.cube_count_x * {p}.cube_count_y * {p}.cube_count_z"
    return (
        f"let cube_linear = {wid}.x + {nwg}.x * ({wid}.y + {nwg}.y * {wid}.z);\n"
        f"if (cube_linear >= {count}) {{ return; }}\n"
        f"let cube_pos_x = cube_linear % {p}.cube_count_x;\n"
        f"let cube_pos_y = (cube_linear / {p}.cube_count_x) % {p}.cube_count_y;\n"
        f"let cube_pos_z = cube_linear / ({p}.cube_count_x * {p}.cube_count_y);\n"
    )
