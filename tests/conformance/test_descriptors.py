"""Tensor descriptors (``cube.make_tensor_descriptor``): block loads that read 0 outside the
view, block stores that write only inside it, in a matmul over ragged sizes and a block copy
with corners off the array's edges; and the errors a wrong descriptor gets."""

from __future__ import annotations

import numpy as np
import pytest
from util import (
    assert_close,
    assert_points_at_the_line,
    cdiv,
    poison,
    random_array,
    run_or_expect_unsupported,
)

import cubepy as cube


@cube.kernel
def descriptor_matmul(a, b, c, M, N, K, BM: cube.Comptime[int], BN: cube.Comptime[int],
                      BK: cube.Comptime[int]):
    a_desc = cube.make_tensor_descriptor(a, [M, K], [K, 1], [BM, BK])
    b_desc = cube.make_tensor_descriptor(b, [K, N], [N, 1], [BK, BN])
    c_desc = cube.make_tensor_descriptor(c, [M, N], [N, 1], [BM, BN])
    row0 = cube.cube_pos(0) * BM
    col0 = cube.cube_pos(1) * BN
    acc = cube.zeros((BM, BN), cube.float32)
    for k0 in range(0, K, BK):
        acc = cube.dot(a_desc.load([row0, k0]), b_desc.load([k0, col0]), acc)
    c_desc.store([row0, col0], acc.to(c.dtype))


@cube.kernel
def descriptor_shift(x, out, rows, cols, stride, dr, dc, BR: cube.Comptime[int],
                     BC: cube.Comptime[int]):
    """out's block at (r, c) = x's block at (r + dr, c + dc): corners may leave the array."""
    src = cube.make_tensor_descriptor(x, [rows, cols], [stride, 1], [BR, BC])
    dst = cube.make_tensor_descriptor(out, [rows, cols], [cols, 1], [BR, BC])
    r = cube.cube_pos(0) * BR
    c = cube.cube_pos(1) * BC
    dst.store([r, c], src.load([r + dr, c + dc]))


@cube.kernel
def descriptor_accumulate(x, out, rows, cols, BR: cube.Comptime[int], BC: cube.Comptime[int]):
    """out += x, block by block, reading and writing out through one descriptor."""
    src = cube.make_tensor_descriptor(x, [rows, cols], [cols, 1], [BR, BC])
    dst = cube.make_tensor_descriptor(out, [rows, cols], [cols, 1], [BR, BC])
    r = cube.cube_pos(0) * BR
    c = cube.cube_pos(1) * BC
    dst.store([r, c], dst.load([r, c]) + src.load([r, c]))


def _shift_expected(x: np.ndarray, dr: int, dc: int) -> np.ndarray:
    rows, cols = x.shape
    out = np.zeros_like(x)
    for i in range(rows):
        for j in range(cols):
            if 0 <= i + dr < rows and 0 <= j + dc < cols:
                out[i, j] = x[i + dr, j + dc]
    return out


@pytest.mark.parametrize("in_dtype", ["float32", "float16", "bfloat16"])
def test_descriptor_matmul_ragged(target, rng, in_dtype):
    M, N, K = 45, 38, 70
    a = random_array(rng, (M, K), in_dtype, -1, 1)
    b = random_array(rng, (K, N), in_dtype, -1, 1)
    c = poison((M, N), "float32")

    def launch():
        descriptor_matmul[(cdiv(M, 16), cdiv(N, 16))](a, b, c, M, N, K, BM=16, BN=16, BK=16,
                                                       target=target)

    if run_or_expect_unsupported(target, [in_dtype], launch):
        assert_close(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dr,dc", [(0, 0), (3, -5), (-7, 2), (40, 0)])
def test_descriptor_blocks_read_zero_outside_and_write_inside(target, rng, dr, dc):
    rows, cols = 37, 29
    padded = random_array(rng, (rows, cols + 3), "float32", -1, 1)  # a row stride != cols
    x = padded[:, :cols]
    out = poison((rows, cols), "float32")
    descriptor_shift[(cdiv(rows, 16), cdiv(cols, 16))](
        padded, out, rows, cols, cols + 3, dr, dc, BR=16, BC=16, target=target)
    assert_close(out, _shift_expected(x, dr, dc))


@cube.kernel
def bad_stride(x, out, n, BLOCK: cube.Comptime[int]):
    desc = cube.make_tensor_descriptor(x, [n, n], [1, n], [BLOCK, BLOCK])
    cube.store(out + cube.arange(0, BLOCK), cube.sum(desc.load([0, 0]), axis=0))


@cube.kernel
def bad_rank(x, out, n, BLOCK: cube.Comptime[int]):
    desc = cube.make_tensor_descriptor(x, [n], [1], [BLOCK])
    cube.store(out + cube.arange(0, BLOCK), desc.load([0]))


@cube.kernel
def bad_corner(x, out, n, BLOCK: cube.Comptime[int]):
    desc = cube.make_tensor_descriptor(x, [n, n], [n, 1], [BLOCK, BLOCK])
    cube.store(out + cube.arange(0, BLOCK), cube.sum(desc.load(0), axis=0))


@pytest.mark.parametrize("kernel,message", [
    (bad_stride, "the last stride must be the literal 1"),
    (bad_rank, "descriptors are 2-D"),
    (bad_corner, "takes the block's corner as [row, col]"),
])
def test_descriptor_errors_point_at_the_line(kernel, message):
    x = np.zeros((16, 16), np.float32)
    assert_points_at_the_line(
        lambda: kernel[(1,)](x, np.zeros(16, np.float32), 16, BLOCK=16, target="cpu"),
        message, "test_descriptors.py")


def test_descriptor_store_of_a_block_it_read(target, rng):
    rows, cols = 37, 29
    x = random_array(rng, (rows, cols), "float32", -1, 1)
    out = random_array(rng, (rows, cols), "float32", -1, 1)
    expected = out + x
    descriptor_accumulate[(cdiv(rows, 16), cdiv(cols, 16))](x, out, rows, cols, BR=16, BC=16,
                                                            target=target)
    assert_close(out, expected)


def test_descriptor_store_of_a_tile_is_a_block_store_and_of_a_scalar_a_store():
    from cubepy.ir import Op, walk

    @cube.kernel
    def fill(out, rows, cols, BR: cube.Comptime[int], BC: cube.Comptime[int]):
        dst = cube.make_tensor_descriptor(out, [rows, cols], [cols, 1], [BR, BC])
        dst.store([0, 0], cube.full((BR, BC), 2.0, cube.float32))
        dst.store([BR, 0], 3.0)

    out = poison((40, 16), "float32")
    fill[(1,)](out, 40, 16, BR=16, BC=16, target="cpu")
    assert (out[:16] == 2.0).all() and (out[16:32] == 3.0).all()
    ops = [line.split()[0] for line in fill.ir(out, 40, 16, BR=16, BC=16).splitlines()]
    assert ops.count("block_store") == 1 and ops.count("store") == 1
    compiled, _, _ = fill.compiled((out, 40, 16), {"BR": 16, "BC": 16, "target": "cpu"})
    kinds = [op.op for op in walk(compiled.fn.body)]
    assert Op.BLOCK_STORE not in kinds and kinds.count(Op.STORE) == 2  # cpu: the fallback


# -- the Triton backend's TMA variant: which block loads it takes, and the launch's check --


def _triton_compiled(kernel, args, comptime):
    pytest.importorskip("triton")
    compiled, _, _ = kernel.compiled(args, {**comptime, "target": "triton"})
    return compiled


def _matmul_args(k: int = 64):
    a, b = np.zeros((48, k), np.float16), np.zeros((k, 40), np.float16)
    return (a, b, np.zeros((48, 40), np.float32), 48, 40, k), {"BM": 16, "BN": 16, "BK": 16}


def test_tma_takes_block_copies_whose_corners_cannot_be_negative():
    from cubepy.backends.triton.descriptors import tma_blocks
    from cubepy.ir import Op

    args, comptime = _matmul_args()
    blocks = tma_blocks(_triton_compiled(descriptor_matmul, args, comptime).fn)
    assert [op.op for op in blocks] == [Op.BLOCK_LOAD, Op.BLOCK_LOAD, Op.BLOCK_STORE]
    x = np.zeros((37, 32), np.float32)
    shifted = _triton_compiled(descriptor_shift, (x, x, 37, 29, 32, 0, 0), {"BR": 16, "BC": 16})
    # the load at r + dr is not taken (dr may be negative, and TMA traps on that); the store is
    assert [op.op for op in tma_blocks(shifted.fn)] == [Op.BLOCK_STORE]
    summed = _triton_compiled(descriptor_accumulate, (x, x, 37, 32), {"BR": 16, "BC": 16})
    # out is read too: its TMA store could land after the kernel's later reads of out
    assert [op.op for op in tma_blocks(summed.fn)] == [Op.BLOCK_LOAD, Op.BLOCK_LOAD]


class _FakeDeviceArray:
    def __init__(self, address: int):
        self.address = address

    def data_ptr(self) -> int:
        return self.address


@pytest.mark.parametrize("address,k,m,allowed", [
    (4096, 64, 48, True), (4104, 64, 48, False), (4096, 70, 48, False), (4096, 64, -1, False)])
def test_tma_guard_checks_alignment_and_shapes(monkeypatch, address, k, m, allowed):
    from cubepy.backends.triton import descriptors

    monkeypatch.setattr(descriptors, "ensure_allocator", lambda: True)
    args, comptime = _matmul_args()
    fn = _triton_compiled(descriptor_matmul, args, comptime).fn
    guard = descriptors.TmaGuard(fn, descriptors.tma_blocks(fn))
    launch = [_FakeDeviceArray(address), _FakeDeviceArray(4096), _FakeDeviceArray(4096),
              m, 40, k]
    assert guard.allows(launch) == allowed


def test_aot_block_copies_are_tma_copies_on_sm90(monkeypatch):
    monkeypatch.setenv("CUBEPY_TRITON_AOT", "cuda:90,hip:gfx942")
    from cubepy import config

    config.reload()
    try:
        args, _ = _matmul_args()
        fresh = cube.kernel(descriptor_matmul.fn)  # nothing cached from other tests
        compiled = _triton_compiled(fresh, args, {"BM": 64, "BN": 64, "BK": 64})
        ptx = compiled.aot["cuda:90"].asm["ptx"]
        assert "cp.async.bulk.tensor" in ptx and "ld.global" not in ptx and "wgmma" in ptx
        assert "cp.async.bulk.tensor.2d.global.shared" in ptx and "st.global" not in ptx
        assert "v_mfma" in compiled.aot["hip:gfx942"].asm["amdgcn"]  # AMD: the pointer variant
    finally:
        monkeypatch.undo()
        config.reload()
