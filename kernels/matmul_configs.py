"""The tile configs of ``kernels.matmul``'s kernels per target and dtype class, and which
class a product uses (``config_class``); ``tuned_matmul`` tunes among them.

Example:
    >>> config_class("triton", "NVIDIA H200", cube.bfloat16, 4096, 4096, 4096**3)
    'gpu_half'
"""

from __future__ import annotations

from typing import Any

import cubepy as cube
from cubepy.backends.wgsl.codegen_dot import staged_dot_bytes
from cubepy.ir.dtypes import DType


def _configs(rows: list[tuple[Any, ...]], extra: tuple[str, ...] = (),
             **fixed: Any) -> list[cube.Config]:
    # (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages, *the values named in extra)
    return [cube.Config(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g, num_warps=w,
                        num_stages=s, **fixed, **dict(zip(extra, rest, strict=True)))
            for bm, bn, bk, g, w, s, *rest in rows]


# Measured on an H200 (examples/matmul.py, bench/gpu_bench.py): large tiles for big 16-bit
# products, 16-row tiles for skinny ones; float32 (IEEE) wants shorter K slices.
GPU_HALF = _configs([(128, 256, 64, 8, 8, 3), (128, 256, 64, 16, 8, 3), (256, 128, 64, 8, 8, 3),
                     (128, 256, 32, 8, 8, 5), (128, 128, 64, 8, 4, 4), (16, 128, 128, 1, 4, 4),
                     (16, 64, 512, 1, 4, 3)]) + _configs([
    # dense operands only (``MatmulPlan.dense``): the winners of examples/matmul.py's list
    # on an H200 (autotune_cache/), C through a descriptor with and without flattened loops
    (128, 256, 64, 8, 8, 3, True, True), (128, 256, 64, 16, 8, 3, True, True),
    (128, 256, 64, 8, 8, 3, True, False), (128, 256, 64, 8, 8, 3, False, False)],
    ("C_DESCRIPTOR", "FLATTEN"), PERSISTENT=True) + _configs([
    # dense plans whose K splits (``k_parts``): few tiles and a long K keep most
    # multiprocessors idle unless K is cut into parts, summed afterwards
    (128, 128, 64, 8, 4, 4, 4), (128, 128, 64, 8, 4, 4, 8), (128, 256, 64, 8, 8, 3, 8)],
    ("SPLIT_K",))
GPU_FLOAT32 = _configs([(128, 64, 32, 8, 4, 4), (64, 128, 32, 8, 4, 4), (128, 128, 32, 8, 8, 3),
                        (256, 128, 32, 8, 8, 3), (128, 256, 32, 8, 8, 3)])
GPU_FLOAT64 = _configs([(64, 64, 32, 8, 4, 3), (128, 64, 16, 8, 4, 3), (64, 32, 32, 8, 4, 3)])
# Triton has no integer tl.dot but int8's: the others are a broadcast product summed over K,
# a BLOCK_M x BLOCK_K x BLOCK_N tile, so K slices stay short.
GPU_INT8 = _configs([(128, 128, 64, 8, 8, 3), (64, 64, 64, 8, 4, 3)])
GPU_INT = _configs([(32, 32, 8, 8, 4, 2)])
# Below this many multiply-adds a product takes microseconds: not worth compiling and timing
# every candidate, so it runs with one moderate config (the first of its list for dtypes
# that have no entry here).
GPU_TUNE_FROM = 2**27  # 512**3
GPU_SMALL = _configs([(64, 64, 32, 8, 4, 3)])
# Triton's interpreter: a few cubes of moderate tiles.
INTERPRETER = _configs([(64, 64, 32, 8, 4, 1)])
# wgsl: each invocation owns a register block of the tile (num_warps=4: 128 invocations;
# None: the backend's choice, 256 for these tiles). On an H200's Vulkan adapter (run 78,
# bench/wgsl_tuning_probe.py) 128x128x16 tiles ran 1.7x faster than 64x64x32 with 128
# invocations at 2048^3 and 4096^3, float32 and float16; at 1024^3 64x64x32 and 64x128x32
# with 256 invocations led by 2-4 %. The first that fits is the untuned default of small
# products; the last fits 16 KiB of workgroup memory, WebGPU's least (``workgroup_bytes``).
WGSL = _configs([(64, 64, 32, 8, 4, 1), (128, 128, 16, 8, None, 1), (64, 128, 32, 8, None, 1),
                 (64, 64, 32, 8, None, 1), (32, 32, 32, 8, None, 1)])
WGSL_64BIT = _configs([(32, 32, 32, 8, 4, 1)])  # 8-byte tiles: workgroup memory is 32 KiB
# cpu: one BLAS call per tile pair, so large tiles once the product is big enough.
CPU_SMALL = _configs([(64, 64, 64, 8, 1, 1)])
CPU_LARGE = _configs([(256, 256, 128, 8, 1, 1)])
CPU_LARGE_FROM = 512  # M and N at least this: the large tiles

CONFIG_CLASSES = {"gpu_half": GPU_HALF, "gpu_float32": GPU_FLOAT32, "gpu_float64": GPU_FLOAT64,
                  "gpu_int8": GPU_INT8, "gpu_int": GPU_INT, "gpu_small": GPU_SMALL,
                  "interpreter": INTERPRETER,
                  "wgsl": WGSL, "wgsl_64bit": WGSL_64BIT, "cpu_small": CPU_SMALL,
                  "cpu_large": CPU_LARGE}
CONFIGS = [cfg for configs in CONFIG_CLASSES.values() for cfg in configs]


def workgroup_bytes(tiles: dict[str, Any], dtype: DType) -> int:
    """Workgroup memory a wgsl matmul launch with ``tiles`` needs: what the backend stages for
    its ``dot`` (``staged_dot_bytes``).

    Example:
        >>> workgroup_bytes(dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32), cube.float16)
        33280
    """
    return staged_dot_bytes(tiles["BLOCK_M"], tiles["BLOCK_N"], tiles["BLOCK_K"], dtype.bits // 8)


def config_class(target: str, device: str, dtype: DType, m: int, n: int, work: int) -> str:
    """The name of the config list (in ``CONFIG_CLASSES``) a product of ``work``
    multiply-adds runs with on ``device`` (``autotune.key.device_name``'s spelling)."""
    if target.startswith("cpu"):
        return "cpu_large" if min(m, n) >= CPU_LARGE_FROM else "cpu_small"
    if target == "wgsl":
        return "wgsl_64bit" if dtype.bits == 64 else "wgsl"
    if "interpreter" in device:
        return "interpreter"
    if dtype.is_int:
        return "gpu_int8" if dtype.name == "int8" else "gpu_int"
    if dtype.bits == 64:
        return "gpu_float64"
    if work < GPU_TUNE_FROM:
        return "gpu_small"
    return "gpu_float32" if dtype.bits == 32 else "gpu_half"
