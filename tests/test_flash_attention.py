"""The flash-attention example (examples/flash_attention.py) on every target present, against
NumPy in float64: causal and not, self- and cross-attention with ragged sequence lengths, each
head dim a tile may have, the tuned wrapper, and the errors for arrays that do not fit."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

# the fixture "target" (every target present, triton on a GPU included), under another name
# so that the tests' parameter does not shadow it
from test_examples import DTYPES, expect_pass
from test_examples import target as every_target  # noqa: F401

import cubepy as cube

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples import common, flash_attention  # noqa: E402

# On the CPU target each specialization costs a Numba compile of 20-40 s (and on triton an
# ahead-of-time compile for two GPUs in CI), so the tests share six of them: every check below
# but one uses head dim 32 and blocks of 32 x 16, float32 but for the dtypes test.


@pytest.mark.parametrize(("dtype", "causal"), [(dtype, False) for dtype in DTYPES]
                         + [("float32", True)])
def test_self_attention(target, dtype, causal):
    # 45 queries and keys: two whole key blocks of 16 and a ragged one; with causal, the first
    # query block skips the key blocks past it and the second has whole and diagonal blocks.
    expect_pass(target, dtype, lambda: flash_attention.check(
        target, 2, 2, 45, 45, 32, dtype, causal, block_m=32, block_n=16))


def test_self_attention_with_descriptors(target):
    """K and V's whole blocks read through tensor descriptors (the second query block has
    two, then the diagonal); 3 heads, so blocks next to a head's end must not read the next
    head's keys."""
    expect_pass(target, "float32", lambda: flash_attention.check(
        target, 1, 3, 45, 45, 32, "float32", True, block_m=32, block_n=16, descriptors=True))


@pytest.mark.parametrize(
    ("seq_q", "seq_k", "head_dim", "causal", "block_m"),
    [(17, 70, 32, False, 32),   # more keys than queries, a ragged last key block
     (70, 17, 32, True, 32),    # queries past the last key see every key
     (1, 33, 128, False, 16),   # one query (decoding); 16 rows fit lavapipe's 32 KB
     (40, 1, 32, True, 32)],    # one key
)
def test_cross_attention(target, seq_q, seq_k, head_dim, causal, block_m):
    expect_pass(target, "float32", lambda: flash_attention.check(
        target, 1, 2, seq_q, seq_k, head_dim, "float32", causal, block_m=block_m, block_n=16))


def test_tuned_attention_matches_numpy(target, tmp_path, monkeypatch):
    """attention_tuned over a short list (the GPU list's 128-row blocks are slow on the
    interpreters): every candidate's output is compared with the first's, the winner's with
    NumPy's. Tuned in an empty folder; the compiled kernels stay where the other tests put
    them."""
    from cubepy.autotune import STATS, cache

    monkeypatch.setattr(cache, "user_dir", lambda: tmp_path)
    tunings = STATS.tunings
    configs = [cube.Config(BM=32, BN=16, num_warps=4, num_stages=2, DESC=False),
               cube.Config(BM=32, BN=16, num_warps=4, num_stages=2, DESC=True)]
    tuned = cube.autotune(configs=configs, key=["q", "k", "causal"],
                          max_seconds=0.2)(flash_attention.attention_tuned.fn)
    rng = np.random.default_rng(1)
    host = [rng.uniform(-1, 1, (1, 2, 40, 32)).astype(np.float32) for _ in range(3)]
    q, k, v = (common.to_device(x, target) for x in host)
    out = common.empty((1, 2, 40, 32), "float32", like=q)
    tuned(q, k, v, out, 40, 40, 32, True, target=target)
    want = flash_attention.attention_reference(*host, causal=True)
    assert common.max_error(out, want) <= 2e-6
    assert STATS.tunings == tunings + 1 and list(tmp_path.glob("*.json"))


@pytest.mark.parametrize(
    ("shapes", "message"),
    [(((1, 2, 8, 16), (1, 2, 8, 16), (1, 2, 9, 16), (1, 2, 8, 16)), "k and v must both be"),
     (((1, 2, 8, 16), (1, 3, 8, 16), (1, 3, 8, 16), (1, 2, 8, 16)), "k and v must both be"),
     (((1, 2, 8, 16), (1, 2, 8, 16), (1, 2, 8, 16), (1, 2, 4, 16)), "out must have q's shape"),
     (((2, 8, 16),) * 4, r"takes \(batch, heads, seq, head_dim\) arrays"),
     (((1, 1, 8, 24),) * 4, r"head_dim must be one of .* pass scale=1/sqrt\(24\)"),
     (((1, 1, 8, 16), (1, 1, 0, 16), (1, 1, 0, 16), (1, 1, 8, 16)), "no keys")],
)
def test_shape_errors(shapes, message):
    arrays = [np.zeros(shape, np.float32) for shape in shapes]
    with pytest.raises(ValueError, match=message):
        flash_attention.attention(*arrays, target="cpu")


def test_strided_and_mixed_dtype_arrays_are_refused():
    q = np.zeros((1, 2, 8, 16), np.float32)
    k_heads_last = np.zeros((1, 8, 2, 16), np.float32).transpose(0, 2, 1, 3)
    with pytest.raises(ValueError, match="k must be contiguous .* np.ascontiguousarray"):
        flash_attention.attention(q, k_heads_last, q, np.empty_like(q), target="cpu")
    with pytest.raises(ValueError, match="one dtype, got .*'v': 'float16'"):
        flash_attention.attention(q, q, q.astype(np.float16), np.empty_like(q), target="cpu")


def test_too_many_elements_for_32_bit_offsets():
    big = np.lib.stride_tricks.as_strided(np.zeros(1, np.float16), (64, 32, 8192, 128),
                                          (0, 0, 0, 0))
    with pytest.raises(ValueError, match="2\\*\\*31 elements or more"):
        flash_attention.attention(big, big, big, big, target="cpu")


@pytest.mark.parametrize(("blocks", "name"), [((48, 16), "block_m"), ((32, 8), "block_n")])
def test_blocks_must_be_powers_of_two_from_16(blocks, name):
    q = np.zeros((1, 1, 8, 16), np.float32)
    with pytest.raises(ValueError, match=f"{name} must be a power of two of at least 16"):
        flash_attention.attention(q, q, q, np.empty_like(q), block_m=blocks[0],
                                  block_n=blocks[1], target="cpu")


@pytest.mark.parametrize("scale", [0.0, -0.5, float("nan"), float("inf")])
def test_scale_must_be_positive_and_finite(scale):
    q = np.zeros((1, 1, 8, 16), np.float32)
    with pytest.raises(ValueError, match="scale must be positive and finite"):
        flash_attention.attention(q, q, q, np.empty_like(q), scale=scale, target="cpu")


def test_no_queries_is_accepted():
    """An empty q (and out) passes the checks: the autotune key's layout class once called
    an empty array strided, and attention refused it as not contiguous."""
    q = np.zeros((1, 2, 0, 16), np.float32)
    k = np.ones((1, 2, 5, 16), np.float32)
    flash_attention.attention(q, k, k, np.empty_like(q), target="cpu")


def test_main(target):
    assert flash_attention.main(["--target", target, "--seq", "40", "--head-dim", "32",
                                 "--heads", "1", "--block-m", "32", "--block-n", "16",
                                 "--dtypes", "float32"]) == 0


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_tuned_attention_on_the_gpu(dtype, causal, head_dim):
    """The GPU list's blocks (128-row, 8 warps) on ragged sequence lengths."""
    rng = np.random.default_rng(2)
    shape = (2, 3, 1000, head_dim)
    host = [rng.uniform(-1, 1, shape).astype(common.np_dtype(dtype)) for _ in range(3)]
    q, k, v = (common.to_device(x, "triton") for x in host)
    out = common.empty(shape, dtype, like=q)
    flash_attention.attention_tuned(q, k, v, out, 1000, 1000, head_dim, causal)
    tol = {"float16": 2.0**-10, "bfloat16": 2.0**-7}[dtype]
    assert common.max_error(out, flash_attention.attention_reference(*host, causal)) <= tol
