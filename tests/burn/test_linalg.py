"""matmul on every backend against the NumPy reference: vectors, matrices and broadcast
batches, ragged and whole tiles, strided operands (transposed, sliced, flipped, broadcast
batches), 0-size and 1-element operands, every dtype it takes, promotion, bad input.

Float inputs are multiples of 1/8 (``dyadic_array``): every product and partial sum is exact
in the accumulator, so results match NumPy's whatever the summation order and the default
tolerances hold. Shapes are chosen so that few kernel specializations are compiled.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from optest import check, on, random_tensor, strided, supports
from util import dyadic_array

import burn
import cubepy as cube
from kernels import matmul as matmul_kernels


def _data(rng: np.random.Generator, shape, dtype: str = "float32") -> np.ndarray:
    if dtype.startswith(("float", "bfloat")):
        return dyadic_array(rng, shape, dtype)
    return random_tensor(rng, shape, dtype)


SHAPES = [
    ((37, 29), (29, 41)),          # ragged tiles
    ((150, 70), (70, 140)),        # several tiles along M, N and K
    ((128, 64), (64, 128)),        # whole tiles: the mask-free loop
    ((29,), (29, 41)),             # vector @ matrix
    ((37, 29), (29,)),             # matrix @ vector
    ((29,), (29,)),                # vector @ vector: a 0-d result
    ((2, 1, 5, 7), (3, 7, 4)),     # broadcast batches
    ((4, 5, 7), (7, 6)),           # batch @ matrix
    ((7,), (3, 7, 4)),             # vector @ batch
    ((2, 3, 4, 5, 6), (3, 1, 6, 7)),  # batch axes that do not collapse: several launches
    ((1, 1), (1, 1)),              # one element
    ((0, 5), (5, 3)),              # 0-size results
    ((2, 0, 5), (5, 3)),
    ((4, 0), (0, 3)),              # K = 0: zeros
]


@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: f"{s[0]}@{s[1]}")
def test_matmul_shapes(backend, ref, rng, shapes):
    a, b = _data(rng, shapes[0]), _data(rng, shapes[1])
    check(lambda be: burn.matmul(on(be, a), on(be, b)), backend, ref)


def test_operator_and_method(backend, ref, rng):
    a, b = _data(rng, (6, 5)), _data(rng, (5, 3))
    check(lambda be: on(be, a) @ on(be, b), backend, ref)
    check(lambda be: on(be, a).matmul(on(be, b)), backend, ref)


# (kind of A, kind of B): every operand layout the kernel specializes on, without the product
# of all of them (each pair is a compile on the cpu target)
VIEW_PAIRS = [("transposed", "contiguous"), ("contiguous", "transposed"),
              ("sliced", "flipped"), ("flipped", "transposed")]


@pytest.mark.parametrize("kinds", VIEW_PAIRS, ids=lambda k: f"{k[0]}-{k[1]}")
def test_strided_operands(backend, ref, rng, kinds):
    a, b = _data(rng, (37, 29)), _data(rng, (29, 41))
    check(lambda be: burn.matmul(strided(be, a, kinds[0]), strided(be, b, kinds[1])),
          backend, ref)


def test_transposed_batches_are_not_copied(backend, ref, rng):
    """``x @ x.mT`` on a batch: B is a transposed view read in place, and a batch of
    broadcast (stride 0) matrices."""
    x = _data(rng, (3, 20, 17))
    y = _data(rng, (17, 9))
    check(lambda be: on(be, x) @ on(be, x).transpose(1, 2), backend, ref)
    check(lambda be: on(be, x) @ on(be, y).expand(3, 17, 9), backend, ref)


def test_batches_beyond_one_launch(backend, ref, rng, monkeypatch):
    """Batches larger than grid axis 1 allows run in chunks (the limit lowered to 3 here)."""
    monkeypatch.setattr(matmul_kernels, "MAX_GRID_Y", 3)
    a, b = _data(rng, (7, 5, 6)), _data(rng, (7, 6, 4))
    check(lambda be: on(be, a) @ on(be, b), backend, ref)


def test_large_tiles(backend, ref, rng):
    """Big enough for the cpu target's large tiles."""
    a, b = _data(rng, (520, 96)), _data(rng, (96, 530))
    check(lambda be: on(be, a) @ on(be, b), backend, ref)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "int8", "int16", "int32",
                                   "int64", "uint8", "uint32"])
def test_dtypes(backend, ref, rng, dtype):
    a, b = _data(rng, (21, 19), dtype), _data(rng, (19, 13), dtype)
    if not supports(backend, [dtype]):
        with pytest.raises(burn.BurnError, match=rf"dtype {dtype} is not supported on the"):
            on(backend, a)
        return
    check(lambda be: on(be, a) @ on(be, b), backend, ref)


def test_integer_products_wrap_like_numpy(backend, ref, rng):
    a = random_tensor(rng, (9, 40), "int32", 40000, 50000)
    b = random_tensor(rng, (40, 5), "int32", 40000, 50000)
    check(lambda be: on(be, a) @ on(be, b), backend, ref)


def test_out_dtype(backend, ref, rng):
    """int8 products kept exact in int32 (values past int8's range)."""
    if not supports(backend, ["int8"]):
        pytest.skip("int8 is checked as an explicit error in test_dtypes")
    a = random_tensor(rng, (21, 19), "int8", -100, 100)
    b = random_tensor(rng, (19, 13), "int8", -100, 100)
    check(lambda be: burn.matmul(on(be, a), on(be, b), out_dtype=burn.int32), backend, ref)
    assert np.abs(burn.matmul(on(backend, a), on(backend, b), out_dtype=burn.int32).numpy()
                  ).max() > 127


def test_promotion(backend, ref, rng):
    a, b = _data(rng, (6, 5), "int32"), _data(rng, (5, 3), "float32")
    check(lambda be: on(be, a) @ on(be, b), backend, ref)
    assert (on(backend, a) @ on(backend, b)).dtype == burn.float32
    h = _data(rng, (6, 5), "float16")
    check(lambda be: on(be, h) @ on(be, b), backend, ref)


def test_bad_input(backend, rng):
    a, b = on(backend, _data(rng, (3, 4))), on(backend, _data(rng, (5, 2)))
    with pytest.raises(burn.BurnError, match=r"matmul: shapes \(3, 4\) and \(5, 2\) do not fit"):
        a @ b
    with pytest.raises(burn.BurnError, match=r"matmul: shapes \(2, 3, 4\) and \(5, 4, 2\) do "
                                             r"not broadcast"):
        burn.matmul(a.reshape(1, 3, 4).expand(2, 3, 4), on(backend, _data(rng, (5, 4, 2))))
    with pytest.raises(burn.BurnError, match=r"matmul: both operands need at least one "
                                             r"dimension, got shapes \(\) and \(4,\)"):
        burn.matmul(on(backend, np.float32(2.0)), on(backend, _data(rng, (4,))))
    flags = on(backend, np.ones((3, 3), bool))
    with pytest.raises(burn.BurnError, match=r"matmul: not defined for bool tensors \(shapes "
                                             r"\(3, 3\) and \(3, 3\)\)"):
        flags @ flags
    with pytest.raises(burn.BurnError, match="matmul: out_dtype float64 is not available for "
                                             "float32"):
        burn.matmul(a, a.T, out_dtype=burn.float64)
    with pytest.raises(burn.BurnError, match="matmul: tensors are on different devices"):
        a @ on(burn.NumPy(), _data(rng, (4, 2)))
    with pytest.raises(burn.BurnError, match="matmul: operands must be tensors"):
        burn.matmul(a, 2.0)


@pytest.mark.parametrize("dtype,c_descriptor,flatten", [("float32", False, False),
                                                        ("float32", True, False),
                                                        ("bfloat16", True, True)])
def test_persistent_kernel(backend, ref, rng, monkeypatch, dtype, c_descriptor, flatten):
    """The persistent kernel, which the tuner offers for dense 16-bit products on GPUs, forced
    here on every backend: tensor-descriptor loads (block copies on sm_90), each cube looping
    over several tiles, ragged tiles at every edge."""
    if not supports(backend, [dtype]):
        pytest.skip(f"{dtype} is checked as an explicit error in test_dtypes")
    tiles = dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=2, PERSISTENT=True,
                 C_DESCRIPTOR=c_descriptor, FLATTEN=flatten)
    monkeypatch.setattr(matmul_kernels, "_launch",
                        lambda plan: matmul_kernels.run(plan, **tiles))
    a, b = _data(rng, (70, 45), dtype), _data(rng, (45, 50), dtype)
    check(lambda be: on(be, a) @ on(be, b), backend, ref)


def test_only_dense_products_take_the_persistent_kernel(backend, rng, monkeypatch):
    """A transposed operand or a batch makes the plan general: the tuner's persistent and
    split-K candidates are dropped for it, and ``run`` refuses them by name. Split-K
    candidates are dropped too where K has no whole slices to split, or where C has tiles
    enough to fill the GPU."""
    plans = []
    monkeypatch.setattr(matmul_kernels, "_launch", plans.append)
    a = on(backend, _data(rng, (8, 6)))
    b = on(backend, _data(rng, (6, 4)))
    a @ b
    on(backend, _data(rng, (6, 8))).T @ b
    on(backend, _data(rng, (3, 8, 6))) @ b
    assert [plan.dense for plan in plans] == [True, False, False]

    class Context:  # what the tuner's prune hook reads
        args = {"plan": plans[1]}
        target = "triton"
        device = "NVIDIA H200"

    def kinds(plan):
        Context.args = {"plan": plan}
        kept = matmul_kernels._tiles_for(matmul_kernels.CONFIGS, Context)
        assert kept
        return {name for cfg in kept for name in ("PERSISTENT", "SPLIT_K") if name in cfg.kwargs}

    monkeypatch.setattr(cube, "concurrent_cubes", lambda storage: 132)  # an H200

    def big(m, n, k, dense):  # a bfloat16 product large enough to tune among every config
        return dataclasses.replace(plans[1], dense=dense, m=m, n=n, k=k, dtype=burn.bfloat16)

    assert kinds(big(1024, 1024, 32768, dense=False)) == set()
    assert kinds(big(1024, 1024, 32768, dense=True)) == {"PERSISTENT", "SPLIT_K"}
    assert kinds(big(1024, 1024, 32769, dense=True)) == {"PERSISTENT"}  # no whole K slices
    assert kinds(big(4096, 4096, 32768, dense=True)) == {"PERSISTENT"}  # tiles enough
    for forced in ({"PERSISTENT": True}, {"SPLIT_K": 4}):
        with pytest.raises(ValueError, match="split-K matmuls take dense row-major operands"):
            matmul_kernels.run(plans[1], 16, 16, 16, 1, **forced)


@pytest.mark.parametrize("dtype,parts,k,used", [("float32", 4, 128, [4]),
                                                ("bfloat16", 8, 96, [6]),
                                                ("float32", 4, 100, [])])
def test_split_k(backend, ref, rng, monkeypatch, dtype, parts, k, used):
    """K cut into parts whose products land in a float32 scratch, then summed: 4 parts of 32;
    6 slices of 16 cut in 6 parts where 8 were asked; K=100 (no whole slices) not split."""
    if not supports(backend, [dtype]):
        pytest.skip(f"{dtype} is checked as an explicit error in test_dtypes")
    tiles = dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=2, SPLIT_K=parts)
    monkeypatch.setattr(matmul_kernels, "_launch",
                        lambda plan: matmul_kernels.run(plan, **tiles))
    splits = []
    split = matmul_kernels._run_split_k
    monkeypatch.setattr(matmul_kernels, "_run_split_k",
                        lambda plan, count, *rest: (splits.append(count),
                                                    split(plan, count, *rest)))
    a, b = _data(rng, (70, k), dtype), _data(rng, (k, 50), dtype)
    check(lambda be: on(be, a) @ on(be, b), backend, ref)
    assert splits == used


WGSL_TILES = [cfg.launch_kwargs() for cfg in matmul_kernels.CONFIG_CLASSES["wgsl"]]
needs_wgsl = pytest.mark.skipif("wgsl" not in cube.available_targets(),
                                reason="no WebGPU adapter here")


@needs_wgsl
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("tiles", WGSL_TILES, ids=lambda t: "x".join(
    str(t[k]) for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")) + f"-w{t.get('num_warps')}")
def test_wgsl_tilings(ref, rng, monkeypatch, tiles, dtype):
    """Every tiling the tuner offers on wgsl, forced, on ragged tiles along M, N and K."""
    backend = burn.backend_for("wgpu")
    if not supports(backend, [dtype]):
        pytest.skip(f"{dtype} is checked as an explicit error in test_dtypes")
    monkeypatch.setattr(matmul_kernels, "_launch",
                        lambda plan: matmul_kernels.run(plan, **tiles))
    a, b = _data(rng, (150, 70), dtype), _data(rng, (70, 140), dtype)
    check(lambda be: on(be, a) @ on(be, b), backend, ref)


def test_wgsl_candidates_fit_the_adapters_workgroup_memory(rng):
    """On wgsl the tuner offers the tilings whose staged tiles fit the adapter's workgroup
    memory: all of them in 32 KiB, the last in WebGPU's least, 16 KiB; a small product runs
    the first that fits."""
    plan = matmul_kernels._plan(matmul_kernels.Context("wgsl", None),
                                *(matmul_kernels.View(None, 0, shape, (shape[1], 1),
                                                      burn.float32)
                                  for shape in ((1024, 1024), (1024, 1024), (1024, 1024))),
                                (0, 0, 0), (0, 0), (0, 0), 1, 1)

    class Context:  # what the tuner's prune hook reads
        args = {"plan": plan}
        target = "wgsl"
        device = "NVIDIA H200"
        limits = {"max_compute_workgroup_storage_size": 32768}

    def kept(m):
        Context.args = {"plan": dataclasses.replace(plan, m=m)}
        return [cfg.launch_kwargs() for cfg in matmul_kernels._tiles_for(
            matmul_kernels.CONFIGS, Context)]

    assert kept(1024) == WGSL_TILES and kept(16) == WGSL_TILES[:1]
    Context.limits = {"max_compute_workgroup_storage_size": 16384}
    assert kept(1024) == kept(16) == WGSL_TILES[-1:]
    Context.limits = {"max_compute_workgroup_storage_size": 4096}  # none fits: the first,
    assert kept(1024) == WGSL_TILES[:1]  # whose launch names what it needs (below)


@needs_wgsl
def test_the_workgroup_memory_estimate_is_the_wgsl_backends(rng):
    """``workgroup_bytes`` counts what the wgsl backend asks for: the first 128x128 tiling
    over the adapter's workgroup memory is refused by the backend, naming those bytes."""
    room = cube.target_info("wgsl").limits["max_compute_workgroup_storage_size"]
    too_big = next(tiles for tiles in (dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=k, GROUP_M=8)
                                       for k in (16, 32, 64, 128, 256))
                   if matmul_kernels.workgroup_bytes(tiles, burn.float32) > room)
    need = matmul_kernels.workgroup_bytes(too_big, burn.float32)
    backend = burn.backend_for("wgpu")
    a, b = on(backend, _data(rng, (64, 64))), on(backend, _data(rng, (64, 64)))
    plan = matmul_kernels._plan(backend.ctx, a.prim, b.prim, backend.ctx.new(
        (64, 64), burn.float32), (0, 0, 0), (0, 0), (0, 0), 1, 1)
    with pytest.raises(cube.UnsupportedError, match=f"needs {need} bytes of workgroup memory"):
        matmul_kernels.run(plan, **too_big)
