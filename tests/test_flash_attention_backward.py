"""The attention backward example (examples/flash_attention_backward.py) on every target
present: dQ, dK, dV and the forward pass's lse against NumPy in float64, each gradient within
its rounding bound; causal and not; self- and cross-attention with ragged sequence lengths;
the errors for arrays that do not fit."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from test_examples import expect_pass
from test_examples import target as every_target  # noqa: F401

import cubepy as cube

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples import common, flash_attention  # noqa: E402
from examples import flash_attention_backward as fab  # noqa: E402

# Each dtype and mask is four Numba compiles of 10-20 s on the cpu target (and an
# ahead-of-time compile for two GPUs on triton in CI): the checks share three of them,
# head dim 32 and blocks of 32 x 16 throughout.


@pytest.mark.parametrize(
    ("dtype", "causal", "seq_q", "seq_k", "atomic_dq"),
    [("float32", True, 45, 45, False),    # query blocks with whole, diagonal and skipped keys
     ("float32", True, 70, 17, False),    # queries past the last key see every key
     ("float16", False, 17, 70, False),   # more keys than queries, a ragged last key block
     ("bfloat16", True, 33, 33, False),   # one row past a whole query block
     ("float16", False, 17, 70, True)],   # dQ summed by atomics into float32 sums, rounded
)
def test_gradients(target, dtype, causal, seq_q, seq_k, atomic_dq):
    expect_pass(target, dtype, lambda: fab.check(
        target, 1, 2, seq_q, seq_k, 32, dtype, causal, block_m=32, block_n=16,
        atomic_dq=atomic_dq))


@pytest.mark.parametrize("atomic_dq", [False, True])
def test_keys_no_query_sees_get_zero_gradients(target, atomic_dq):
    """With causal masking, keys past the last query are seen by none (their dK and dV are
    0); with no queries at all, every key's are. Written over garbage, not left as it was
    (dq too, when atomics add into it: float32, straight into dq)."""
    rng = np.random.default_rng(3)
    for seq_q in (20, 0):
        host = {name: rng.uniform(-1, 1, (1, 1, seq, 32)).astype(np.float32)
                for name, seq in (("q", seq_q), ("k", 50), ("v", 50), ("d_out", seq_q))}
        dev = {name: common.to_device(x, target) for name, x in host.items()}
        out = common.empty((1, 1, seq_q, 32), "float32", like=dev["q"])
        lse = common.empty((1, 1, seq_q), "float32", like=dev["q"])
        flash_attention.attention(dev["q"], dev["k"], dev["v"], out, lse=lse, causal=True,
                                  block_m=32, block_n=16, target=target)
        grads = [common.to_device(np.full(dev[like].shape, np.nan, np.float32), target)
                 for like in ("q", "k", "v")]
        fab.attention_backward(dev["q"], dev["k"], dev["v"], out, lse, dev["d_out"], *grads,
                               causal=True, block_kept=32, block_step=16,
                               atomic_dq=atomic_dq, target=target)
        dk, dv = (common.to_numpy(g) for g in grads[1:])
        want = fab.attention_backward_reference(host["q"], host["k"], host["v"],
                                                host["d_out"], causal=True)
        assert np.all(dk[..., seq_q:, :] == 0) and np.all(dv[..., seq_q:, :] == 0)
        if seq_q:
            assert max(fab.gradient_errors(dict(zip(("dq", "dk", "dv"), grads)), want,
                                           "float32").values()) <= 1


def test_main(target):
    assert fab.main(["--target", target, "--seq", "40", "--head-dim", "32", "--heads", "1",
                     "--block-m", "32", "--block-n", "16", "--dtypes", "float32",
                     "--causal"]) == 0


def _arrays(seq_q=8, seq_k=8, dtype=np.float32):
    q = np.zeros((1, 2, seq_q, 16), dtype)
    k = np.zeros((1, 2, seq_k, 16), dtype)
    return {"q": q, "k": k, "v": k.copy(), "out": q.copy(),
            "lse": np.zeros((1, 2, seq_q), np.float32), "d_out": q.copy(), "dq": q.copy(),
            "dk": k.copy(), "dv": k.copy()}


@pytest.mark.parametrize(
    ("change", "message"),
    [({"d_out": np.zeros((1, 2, 9, 16), np.float32)}, r"d_out must have q's shape"),
     ({"dk": np.zeros((1, 2, 8, 16), np.float32), "k": np.zeros((1, 2, 6, 16), np.float32),
       "v": np.zeros((1, 2, 6, 16), np.float32)}, r"dk must have k's shape \(1, 2, 6, 16\)"),
     ({"lse": np.zeros((1, 2, 8), np.float16)}, r"lse must be a float32 array of shape"),
     ({"lse": np.zeros((2, 8), np.float32)}, r"lse must be a float32 array .* got float32"),
     ({"dv": np.zeros((1, 2, 8, 16), np.float16)}, r"one dtype, got .*'dv': 'float16'"),
     ({"dq": np.zeros((1, 2, 16, 8), np.float32).transpose(0, 1, 3, 2)},
      r"dq must be contiguous")],
)
def test_arrays_that_do_not_fit_are_refused(change, message):
    arrays = _arrays() | change
    with pytest.raises(ValueError, match=message):
        fab.attention_backward(*arrays.values(), target="cpu")


def test_forward_lse_must_fit():
    arrays = _arrays()
    with pytest.raises(ValueError, match=r"lse must be a float32 array of shape \(1, 2, 8\)"):
        flash_attention.attention(arrays["q"], arrays["k"], arrays["v"], arrays["out"],
                                  lse=np.zeros((1, 2, 7), np.float32), target="cpu")


def test_tuned_backward_matches_numpy(target, tmp_path, monkeypatch):
    """attention_backward_tuned over a short list: every candidate's dq, dk and dv are
    compared with the first's, the winner's with NumPy's. Tuned in an empty folder."""
    from cubepy.autotune import STATS, cache

    monkeypatch.setattr(cache, "user_dir", lambda: tmp_path)
    tunings = STATS.tunings
    configs = [cube.Config(KEPT=32, STEP=16, num_warps=4, num_stages=2),
               cube.Config(KEPT=32, STEP=16, num_warps=4, num_stages=3)]
    tuned = cube.autotune(configs=configs, key=["q", "k", "causal"],
                          max_seconds=0.2)(fab.attention_backward_tuned.fn)
    rng = np.random.default_rng(4)
    host = {name: rng.uniform(-1, 1, (1, 2, 40, 32)).astype(np.float32)
            for name in ("q", "k", "v", "d_out")}
    dev = {name: common.to_device(x, target) for name, x in host.items()}
    out = common.empty((1, 2, 40, 32), "float32", like=dev["q"])
    lse = common.empty((1, 2, 40), "float32", like=dev["q"])
    flash_attention.attention(dev["q"], dev["k"], dev["v"], out, lse=lse, causal=True,
                              block_m=32, block_n=16, target=target)
    grads = {name: common.empty((1, 2, 40, 32), "float32", like=dev["q"])
             for name in ("dq", "dk", "dv")}
    tuned(dev["q"], dev["k"], dev["v"], out, lse, dev["d_out"], *grads.values(), 40, 40, 32,
          True, target=target)
    want = fab.attention_backward_reference(host["q"], host["k"], host["v"], host["d_out"],
                                            causal=True)
    assert max(fab.gradient_errors(grads, want, "float32").values()) <= 1
    assert STATS.tunings == tunings + 1 and list(tmp_path.glob("*.json"))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("atomic_dq", [False, True])
def test_gradients_on_the_gpu(dtype, causal, head_dim, atomic_dq):
    """GPU-sized blocks (64 x 64, and 128 rows kept stepping by 32) on ragged lengths."""
    for kept, step, warps in ((64, 64, 4), (128, 32, 8)):
        assert fab.check("triton", 2, 3, 1000, 999, head_dim, dtype, causal, block_m=kept,
                         block_n=step, atomic_dq=atomic_dq, num_warps=warps)


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_tuned_backward_on_the_gpu(causal):
    """The GPU list of attention_backward_tuned, bfloat16, head dim 128, ragged lengths."""
    import torch

    shape = (2, 3, 1000, 128)
    rng = np.random.default_rng(5)
    host = {name: rng.uniform(-1, 1, shape).astype(common.np_dtype("bfloat16"))
            for name in ("q", "k", "v", "d_out")}
    dev = {name: common.to_device(x, "triton") for name, x in host.items()}
    out = torch.empty_like(dev["q"])
    lse = torch.empty(shape[:3], dtype=torch.float32, device="cuda")
    flash_attention.attention(dev["q"], dev["k"], dev["v"], out, lse=lse, causal=causal)
    grads = {name: torch.empty_like(dev["q"]) for name in ("dq", "dk", "dv")}
    fab.attention_backward_tuned(dev["q"], dev["k"], dev["v"], out, lse, dev["d_out"],
                                 *grads.values(), 1000, 1000, 128, causal)
    want = fab.attention_backward_reference(host["q"], host["k"], host["v"], host["d_out"],
                                            causal)
    assert max(fab.gradient_errors(grads, want, "bfloat16").values()) <= 1
