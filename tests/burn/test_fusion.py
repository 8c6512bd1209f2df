"""``burn.Fusion``: elementwise runs become one kernel, with the unfused results.

Every test runs on every cubepy backend present, checked against the NumPy reference with
the dtype's tolerance, and asserts from ``Fusion.stats`` how many kernels ran: fusing is the
point, so a test that only compared values would pass with fusion off.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from optest import check, on, random_tensor, strided, supports

import burn
from burn.fusion.graph import MAX_OPS, Constant, Lazy


@pytest.fixture
def fusion(backend: burn.Backend) -> burn.Fusion:
    # a fresh object per test (stats start at zero); --fusion hands the tests a Fusion already
    return burn.Fusion(backend.wraps if isinstance(backend, burn.Fusion) else backend)


def _chain(b: burn.Backend, x: np.ndarray, y: np.ndarray) -> burn.Tensor:
    # broadcasting, Python numbers, a comparison, where, clamp and a cast, all elementwise
    a, c = on(b, x), on(b, y)
    z = ((a * 2 + c).exp() - 1).clamp(-0.5, 3.0)
    return burn.where(z > 1, z, a * 0.5).abs().sqrt()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_a_chain_is_one_kernel(fusion: burn.Fusion, ref: burn.Backend,
                               rng: np.random.Generator, dtype: str) -> None:
    if not supports(fusion, [dtype]):
        pytest.skip(f"{fusion.inner.name} has no {dtype} (refusal tested in test_tensor)")
    x = random_tensor(rng, (3, 5), dtype, -1, 1)
    y = random_tensor(rng, (5,), dtype, -1, 1)
    check(lambda b: _chain(b, x, y), fusion, ref)
    # the ops: mul add exp sub clamp gt mul where abs sqrt
    assert (fusion.stats.launches, fusion.stats.ops) == (1, 10)
    # each step rounds to its dtype as the unfused op stores it: for 16-bit floats, the same
    # bits. The chain multiplies only by 2 and 0.5 (exact), so a compiler that contracts a
    # multiply and an add (Triton with TRITON_DEFAULT_FP_FUSION=1) keeps them too; a float32
    # step may still differ in its last bit there.
    fused, unfused = (_chain(b, x, y).numpy() for b in (fusion, fusion.wraps))
    if dtype == "float32":
        np.testing.assert_allclose(fused, unfused, rtol=1e-6, atol=1e-7)
    else:
        np.testing.assert_array_equal(fused, unfused)


def test_integer_and_logical_ops(fusion: burn.Fusion, ref: burn.Backend,
                                 rng: np.random.Generator) -> None:
    x = random_tensor(rng, (4, 6), "int32", -20, 20)
    y = random_tensor(rng, (4, 6), "int32", 1, 9)

    def run(b: burn.Backend) -> burn.Tensor:
        a, c = on(b, x), on(b, y)
        q = (a // c) * c + a % c  # equals a
        both = (q == a) & (a > -5)
        return burn.where(both | (c < 3), q * 3, -q).to(burn.float32) / 2

    check(run, fusion, ref)
    assert fusion.stats.launches == 1


def test_intermediates_are_never_written(fusion: burn.Fusion) -> None:
    x = burn.tensor([0.5, 1.5], backend=fusion)
    hidden = x.exp()
    y = (hidden + 1).log()
    assert isinstance(hidden.prim.storage, Lazy) and hidden.prim.storage.real is None
    np.testing.assert_allclose(y.numpy(), np.log(np.exp([0.5, 1.5]) + 1), rtol=1e-6)
    assert hidden.prim.storage.real is None  # computed inside y's kernel only
    assert fusion.stats.launches == 1


def test_a_computed_value_is_loaded_not_recomputed(fusion: burn.Fusion) -> None:
    x = burn.tensor([1.0, 2.0], backend=fusion)
    shared = x.exp() * 3
    assert shared.tolist() == pytest.approx((np.exp([1.0, 2.0]) * 3).tolist(), rel=1e-6)
    y = shared - 1
    assert y.tolist() == pytest.approx((np.exp([1.0, 2.0]) * 3 - 1).tolist(), rel=1e-6)
    assert (fusion.stats.launches, fusion.stats.ops) == (2, 3)  # y's kernel: one sub


def test_python_numbers_are_kernel_arguments(fusion: burn.Fusion) -> None:
    x = burn.tensor([1.0, 2.0], backend=fusion)
    scaled = (x * 2.5).log()
    constant = scaled.prim.storage.operands[0].operands[1].storage
    assert isinstance(constant, Constant)
    assert scaled.tolist() == pytest.approx(np.log([2.5, 5.0]).tolist(), rel=1e-6)
    assert constant.real is None  # never uploaded: it was a kernel argument
    # an op that is not elementwise gets it uploaded (once)
    broadcast = fusion.constant(np.array(2.5, np.float32)).with_layout(0, (3,), (0,))
    assert burn.Tensor(broadcast, fusion).sum().item() == 7.5
    assert broadcast.storage.real is not None
    assert fusion.to_numpy(broadcast).tolist() == [2.5, 2.5, 2.5]


@pytest.mark.parametrize("kind", ["transposed", "sliced", "flipped"])
def test_views_of_pending_values(fusion: burn.Fusion, ref: burn.Backend,
                                 rng: np.random.Generator, kind: str) -> None:
    x = random_tensor(rng, (4, 6), "float32")
    w = random_tensor(rng, (6, 3), "float32")

    def run(b: burn.Backend) -> tuple[burn.Tensor, ...]:
        y = strided(b, x, kind).tanh()
        moved = (y.T * 2).T + y[:1]  # a transpose and a broadcast of pending values
        return moved, (y + 1) @ on(b, w), (y * y).sum(axis=0)

    check(run, fusion, ref)


def test_long_chains_are_cut(fusion: burn.Fusion, ref: burn.Backend,
                             rng: np.random.Generator) -> None:
    x = random_tensor(rng, (64,), "float32")
    steps = 2 * MAX_OPS + 10

    def run(b: burn.Backend) -> burn.Tensor:
        y = on(b, x)
        for _ in range(steps):  # a recurrence: without a cap, one ever-growing kernel
            y = y * 0.99 + 0.01
        return y

    check(run, fusion, ref)
    assert fusion.stats.launches == -(-2 * steps // MAX_OPS)
    assert fusion.stats.kernels <= 2  # the full-sized pieces share one plan


def test_many_inputs_are_split(fusion: burn.Fusion, ref: burn.Backend,
                               rng: np.random.Generator) -> None:
    xs = [random_tensor(rng, (8,), "float32") for _ in range(40)]

    def run(b: burn.Backend) -> burn.Tensor:
        total = on(b, xs[0])
        for x in xs[1:]:
            total = total + on(b, x)
        return total

    check(run, fusion, ref)
    assert 40 // fusion.max_leaves <= fusion.stats.launches < 40


def test_plans_are_reused(fusion: burn.Fusion, rng: np.random.Generator) -> None:
    for _ in range(3):
        x = burn.from_numpy(random_tensor(rng, (10,), "float32"), backend=fusion)
        (x.sigmoid() * x).numpy()
    assert (fusion.stats.launches, fusion.stats.kernels) == (3, 1)


def test_threads_compute_a_value_once(fusion: burn.Fusion) -> None:
    y = burn.arange(1000, backend=fusion).to(burn.float32).sqrt() + 1
    start = threading.Barrier(4)

    def compute_and_read() -> tuple[object, np.ndarray]:
        start.wait()  # all at once: one computes, the others wait for it, all read the device
        return fusion.realized(y.prim).storage, y.numpy()

    with ThreadPoolExecutor(4) as pool:
        results = [f.result(timeout=300) for f in [pool.submit(compute_and_read)
                                                   for _ in range(4)]]
    assert all(storage is results[0][0] for storage, _ in results)
    assert fusion.stats.launches == 1
    for _, value in results:
        np.testing.assert_allclose(value, np.sqrt(np.arange(1000)) + 1, rtol=1e-6)


def test_empty_tensors(fusion: burn.Fusion) -> None:
    y = (burn.zeros((0, 3), backend=fusion) + 1).exp()
    assert y.shape == (0, 3) and y.numpy().shape == (0, 3)


def test_moves_to_and_from_the_inner_backend(fusion: burn.Fusion) -> None:
    y = burn.tensor([1.0, 4.0], backend=fusion).sqrt()
    inner = y.to(fusion.wraps)
    assert inner.backend == fusion.wraps and inner.tolist() == [1.0, 2.0]
    back = inner.to(fusion)
    assert back.prim.storage is inner.prim.storage  # no copy
    tracked = burn.Autodiff(fusion)
    assert (y.to(tracked) * 2).to(fusion.wraps).tolist() == [2.0, 4.0]


def test_gradients_through_fusion(fusion: burn.Fusion, rng: np.random.Generator) -> None:
    x = random_tensor(rng, (6, 4), "float32")
    w = random_tensor(rng, (4, 5), "float32")
    grads = []
    for b in (fusion.wraps, fusion):
        ad = burn.Autodiff(b)
        weight = burn.from_numpy(w, backend=ad).require_grad()
        hidden = burn.gelu(burn.from_numpy(x, backend=ad) @ weight + 0.1)
        loss = (hidden * hidden.sigmoid()).mean()
        grads.append(weight.grad(loss.backward()).numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-7)
    assert fusion.stats.ops > fusion.stats.launches  # something was fused


def test_writes_in_place_follow_pending_reads(fusion: burn.Fusion) -> None:
    """``assign`` (BatchNorm's buffers) and a captured step's in-place update first compute
    the pending values that read the memory they write, each run as one kernel; values that
    read other memory stay pending."""
    x = on(fusion, np.ones(3, np.float32))
    other = on(fusion, np.ones(3, np.float32))
    before, untouched = x * 2 + 1, other * 2 + 1
    fusion.assign(x.prim, on(fusion, np.full(3, 5.0, np.float32)).prim)
    assert (fusion.stats.launches, fusion.stats.ops) == (1, 2)  # `before`, fused
    assert isinstance(untouched.prim.storage, Lazy) and untouched.prim.storage.real is None
    np.testing.assert_array_equal(before.numpy(), 3.0)
    np.testing.assert_array_equal(x.numpy(), 5.0)
    np.testing.assert_array_equal(untouched.numpy(), 3.0)

    ad = burn.Autodiff(fusion)
    model = burn.nn.Linear(3, 1, bias=False, backend=fusion).to(ad).require_grad()
    weight = model.weight.numpy()
    halved = model.weight.inner() * 0.5  # pending: reads the weight
    optimizer = burn.optim.SGD(lr=0.25)
    optimizer.capturable = True  # as CapturedStep sets it: the update writes in place
    updated = optimizer.step(model, model(on(ad, np.ones((2, 3), np.float32))).sum().backward())
    assert updated.weight.prim.storage is model.weight.prim.storage
    np.testing.assert_allclose(updated.weight.numpy(), weight - 0.25 * 2.0, rtol=1e-6)
    np.testing.assert_array_equal(halved.numpy(), weight * 0.5)


def test_wrapping_errors(backend: burn.Backend) -> None:
    with pytest.raises(burn.BurnError, match=r"Fusion\(NumPy\(...\)\).*Cpu\(\), Cuda\(\)"):
        burn.Fusion(burn.NumPy())
    with pytest.raises(burn.BurnError, match=r"burn.Autodiff\(burn.Fusion\(...\)\)"):
        burn.Fusion(burn.Autodiff(burn.Cpu()))
    with pytest.raises(burn.BurnError, match="wrap Cpu"):
        burn.Fusion(burn.Fusion(burn.Cpu()))


def test_unknown_ops_fail_when_recorded(fusion: burn.Fusion) -> None:
    x = burn.tensor([1.0], backend=fusion).prim
    with pytest.raises(ValueError, match="unknown unary op 'expp'"):
        fusion.unary("expp", x, burn.float32, burn.float32)
    with pytest.raises(ValueError, match="unknown binary op 'plus'"):
        fusion.binary("plus", x, x, burn.float32, burn.float32)
