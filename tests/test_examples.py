"""The examples' own checks (examples/*.py against NumPy), on every target present.

Each example exposes ``check(target, sizes..., dtype=...) -> bool``; here it runs with small
sizes. A dtype the target lacks (bfloat16 on wgsl) must raise cubepy.UnsupportedError naming
the target and the dtype. The examples move their arrays to the target's device themselves
(torch tensors on a CUDA GPU), so unlike the NumPy-only conformance tests they run on every
target present, the triton target on a real GPU included.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from util import run_or_expect_unsupported

import cubepy as cube

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from examples import dropout, fused_softmax, layernorm, matmul, vector_add  # noqa: E402

DTYPES = ("float32", "float16", "bfloat16")
TARGETS = cube.available_targets()


@pytest.fixture(params=TARGETS, ids=TARGETS)
def target(request: pytest.FixtureRequest) -> str:
    """Every target present (conftest's fixture leaves out triton on a GPU: it feeds NumPy)."""
    return request.param


def expect_pass(target: str, dtype: str, check) -> None:
    """Run ``check()`` and assert it passed, or assert the UnsupportedError for ``dtype``."""
    result: list[bool] = []
    if run_or_expect_unsupported(target, [dtype], lambda: result.append(check())):
        assert result == [True]


@pytest.mark.parametrize("dtype", DTYPES)
def test_vector_add(target, dtype):
    expect_pass(target, dtype, lambda: vector_add.check(target, 1000, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout(target, dtype):
    expect_pass(target, dtype, lambda: dropout.check(target, 5000, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_softmax(target, dtype):
    expect_pass(target, dtype, lambda: fused_softmax.check(target, 37, 300, dtype))


@pytest.mark.parametrize(
    ("dtype", "activation", "shape"),
    [
        ("float16", "", (70, 50, 45)),  # ragged M, N and K: the masked loop
        ("bfloat16", "gelu", (33, 40, 64)),
        ("float32", "leaky_relu", (64, 96, 64)),  # whole tiles: the mask-free (EVEN) loop
    ],
)
def test_matmul(target, dtype, activation, shape):
    config = matmul.Config(32, 32, 32, group_m=2)
    expect_pass(
        target, dtype, lambda: matmul.check(target, *shape, dtype, activation, config=config)
    )


@pytest.mark.parametrize(
    ("dtype", "shape"),
    [("float16", (70, 50, 45)), ("bfloat16", (64, 96, 64)), ("float32", (33, 40, 70))],
)
@pytest.mark.parametrize("c_descriptor,flatten", [(False, False), (True, False), (True, True)])
def test_matmul_persistent(target, dtype, shape, c_descriptor, flatten):
    """The persistent kernel: tensor-descriptor loads (and stores), each cube looping over
    several tiles (the loops flattened on Triton)."""
    config = matmul.Config(16, 32, 16, group_m=2, persistent=True, c_descriptor=c_descriptor,
                           flatten=flatten)
    expect_pass(target, dtype, lambda: matmul.check(target, *shape, dtype, "relu", config=config))


@pytest.mark.parametrize(
    ("dtype", "shape", "c_descriptor", "flatten"),
    # the splits with 8 cubes (the CPU target on 2 cores): 10 tiles, the last 2 in 3 parts
    # of K; 3 tiles, fewer than the cubes, all in 2 parts; 65 tiles, the last one in 8 parts.
    # Every dtype and both kinds of C store, not every pair: each pair is a compile of its own
    # (10-15 s on the CPU target), and the dtype and the store are separate parts of the code.
    [("float16", (70, 50, 45), False, False), ("bfloat16", (16, 96, 300), True, True),
     ("float32", (200, 160, 300), False, False), ("float32", (200, 160, 300), True, True)],
)
def test_matmul_split_k(target, dtype, shape, c_descriptor, flatten):
    """The tiles of the last, part-filled wave split along K between the cubes; each split
    tile summed by the cube that finishes its part last. wgsl refuses it (relaxed atomics)."""
    config = matmul.Config(16, 32, 16, group_m=2, persistent=True, c_descriptor=c_descriptor,
                           flatten=flatten, split_k=True)
    if target == "wgsl":
        with pytest.raises(cube.UnsupportedError, match="split_k is not supported on wgsl"):
            matmul.check(target, *shape, "float32", "relu", config=config)
        return
    for seed in range(2):  # the counts each launch leaves at zero serve the next one
        expect_pass(target, dtype,
                    lambda seed=seed: matmul.check(target, *shape, dtype, "relu", config=config,
                                                   seed=seed))


@pytest.mark.gpu
@pytest.mark.parametrize("c_descriptor,flatten,split_k",
                         [(False, False, False), (True, False, False), (True, True, False),
                          (False, False, True), (True, True, True)])
@pytest.mark.parametrize("shape", [(300, 264, 152), (2100, 2100, 200)])
def test_matmul_persistent_tma_on_the_gpu(c_descriptor, flatten, split_k, shape):
    """Rows 16-byte aligned, so that the TMA variant runs; ragged tiles at every edge. With
    split_k on an H200 (132 multiprocessors), 9 tiles are all split in 3 parts of K, and of
    289 tiles the last 25 in 4."""
    config = matmul.Config(128, 128, 64, group_m=8, num_warps=8, num_stages=3, persistent=True,
                           c_descriptor=c_descriptor, flatten=flatten, split_k=split_k)
    for seed in range(2):
        assert matmul.check("triton", *shape, "bfloat16", "gelu", config=config, seed=seed)


def test_the_tuned_matmul_offers_each_target_its_own_list():
    class Context:  # what the tuner's prune hook reads
        target = "wgsl"
        limits = {"max_compute_workgroup_storage_size": 32768}
        args = {"a": np.zeros((2, 2), np.float32)}

    every = matmul.TUNING_CONFIGS + matmul.WGSL_TUNING_CONFIGS
    assert matmul.configs_for_target(every, Context) == matmul.WGSL_TUNING_CONFIGS
    for Context.target in ("triton", "cpu"):
        assert matmul.configs_for_target(every, Context) == matmul.TUNING_CONFIGS


def test_the_tuned_matmul_fits_webgpus_least_workgroup_memory():
    """On an adapter with 16 KiB of workgroup memory only 32x32x32 is kept, so that it is
    also the default with CUBEPY_AUTOTUNE=0; the estimate is the backend's own (checked
    against its refusal in tests/burn/test_linalg.py)."""
    class Context:
        target = "wgsl"
        limits = {"max_compute_workgroup_storage_size": 16384}
        args = {"a": np.zeros((2, 2), np.float16)}

    kept = matmul.configs_for_target(matmul.WGSL_TUNING_CONFIGS, Context)
    assert [(c.kwargs["BM"], c.kwargs["BN"], c.kwargs["BK"]) for c in kept] == [(32, 32, 32)]
    Context.limits = {}  # an adapter that reports none: WebGPU's least
    assert matmul.configs_for_target(matmul.WGSL_TUNING_CONFIGS, Context) == kept


def test_matmul_c_descriptor_needs_the_persistent_kernel():
    a = np.zeros((4, 4), np.float32)
    for config in (matmul.Config(c_descriptor=True), matmul.Config(flatten=True),
                   matmul.Config(split_k=True)):
        with pytest.raises(ValueError, match="split_k need persistent=True"):
            matmul.matmul(a, a, a, config=config, target="cpu")


@pytest.mark.parametrize("dtype", DTYPES)
def test_layernorm(target, dtype):
    # max_block < n: the forward kernel's column loop runs twice, the second time masked.
    expect_pass(
        target, dtype, lambda: layernorm.check(target, 45, 200, dtype, max_block=128, groups=8)
    )


def test_vector_add_main(target):
    assert vector_add.main(["--target", target, "--n", "3000"]) == 0


def test_example_runs_as_a_script():
    env = {**os.environ, "CUBEPY_TARGET": ""}
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "vector_add.py"),
            "--target",
            "cpu:debug",
            "--n",
            "500",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("PASS")
