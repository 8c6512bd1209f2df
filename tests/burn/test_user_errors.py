"""A demanding user's mistakes and edge cases on every backend, against NumPy: out-of-range
Python ints, big-endian arrays, clamp's dtype, casts to a dtype the backend lacks, shape and
index arguments of the wrong type, and what the errors say to write instead."""

from __future__ import annotations

import numpy as np
import pytest
from optest import on, supports
from util import assert_close

import burn

# ---------------------------------------------------------------- NumPy input


def test_big_endian_arrays_are_converted(backend):
    """An array read from a file as '>f4' or '>i4' holds the same numbers as a native one."""
    for dtype in (">i4", ">f4"):
        data = np.arange(5, dtype=dtype)
        t = burn.from_numpy(data, backend=backend)
        assert_close((t + 1).numpy(), data.astype(dtype[1:]) + 1)
        assert t.sum().item() == 10
        assert_close(burn.from_numpy(data[::-2], backend=backend).numpy(), data[::-2])


def test_numpy_scalars_keep_their_dtype(backend):
    if not supports(backend, ["float64"]):
        pytest.skip("float64 refusals are checked in test_pointwise.py")
    t = burn.tensor(np.float64(1.5), backend=backend)
    assert t.dtype == burn.float64 and t.shape == () and t.item() == 1.5
    if supports(backend, ["int16"]):
        assert burn.tensor(np.int16(3), backend=backend).dtype == burn.int16


def test_unsupported_input_is_a_burn_error(backend):
    with pytest.raises(burn.BurnError, match=r"from_numpy: dtype <U1 is not supported"):
        burn.from_numpy(np.array(["a"]), backend=backend)
    with pytest.raises(burn.BurnError, match=r"tensor: cannot make a tensor of None"):
        burn.tensor(None, backend=backend)
    x = burn.ones(3, backend=backend)
    with pytest.raises(burn.BurnError, match=r"add: .*NumPy array of shape \(3,\).*from_numpy"):
        x + np.ones(3)
    with pytest.raises(burn.BurnError, match=r"add: .*NumPy array.*from_numpy"):
        np.ones(3) + x
    with pytest.raises(burn.BurnError, match="mul: operands must be .*, got complex64"):
        x * np.complex64(1)
    with pytest.raises(burn.BurnError, match="add: needs at least one tensor operand"):
        burn.add(1, 2)


# ---------------------------------------------------------------- Python ints out of range


def test_out_of_range_ints_compare_exactly(backend):
    """NumPy 2 compares ``int32_array < 2**40`` exactly; the int must not wrap around first."""
    a = np.array([5, -7, 2**31 - 1], np.int32)
    u = np.array([0, 5, 2**32 - 1], np.uint32)
    x, y = on(backend, a), on(backend, u)
    for got, expected in [(x < 2**40, a < 2**40), (x == 2**32 + 5, a == 2**32 + 5),
                          (x > -(2**40), a > -(2**40)), (2**40 <= x, 2**40 <= a),
                          (y > -1, u > -1), (y != -1, u != -1), (y >= 2**32, u >= 2**32)]:
        assert got.dtype == burn.bool
        assert got.tolist() == expected.tolist()
    if supports(backend, ["uint8"]):
        b = np.array([44, 255], np.uint8)
        assert (on(backend, b) == 300).tolist() == (b == 300).tolist()


def test_out_of_range_ints_do_not_wrap(backend):
    x = on(backend, np.array([1, 2], np.int32))
    with pytest.raises(burn.BurnError, match=r"add: the number 1099511627776 does not fit "
                                             r"int32 .*x\.to\(burn\.int64\)"):
        x + 2**40
    with pytest.raises(burn.BurnError, match="mul: the number -3000000000 does not fit int32"):
        -3_000_000_000 * x
    with pytest.raises(burn.BurnError, match="sub: the number -1 does not fit uint32"):
        on(backend, np.array([1], np.uint32)) - (-1)
    mask = on(backend, np.array([True, False]))
    with pytest.raises(burn.BurnError, match="masked_fill: the number 1099511627776 does not"):
        x.masked_fill(mask, 2**40)
    with pytest.raises(burn.BurnError, match="masked_fill: the number nan does not fit int32"):
        x.masked_fill(mask, float("nan"))
    with pytest.raises(burn.BurnError, match="where: the number 4294967296 does not fit"):
        burn.where(mask, x, 2**32)
    # `/` is computed in float: the int is never squeezed into int32
    assert_close((x / 2**40).numpy(), np.array([1, 2], np.float32) / np.float32(2**40))
    if supports(backend, ["int64"]):  # a bool tensor takes the int's own dtype, as NumPy
        got = on(backend, np.array([True, False])) + 2**40
        assert got.dtype == burn.int64 and got.tolist() == [2**40 + 1, 2**40]


def test_creation_refuses_ints_that_wrap(backend):
    with pytest.raises(burn.BurnError, match=r"full: the number -1 does not fit uint32 "
                                             r".*dtype=burn\.int64"):
        burn.full(3, -1, dtype=burn.uint32, backend=backend)
    with pytest.raises(burn.BurnError, match="full: the number nan does not fit int32"):
        burn.full(3, float("nan"), dtype=burn.int32, backend=backend)
    with pytest.raises(burn.BurnError, match="tensor: the number -1 does not fit uint32"):
        burn.tensor([-1, 3], dtype=burn.uint32, backend=backend)
    with pytest.raises(burn.BurnError, match="tensor: the number 9223372036854775808 does not"):
        burn.tensor([2**63], backend=backend)
    assert burn.full(2, 2.7, dtype=burn.int32, backend=backend).tolist() == \
        np.full(2, 2.7).astype(np.int32).tolist()  # floats truncate, as casts do


def test_negative_int_power_is_refused(backend):
    x = on(backend, np.array([1, 2, -1], np.int32))
    with pytest.raises(burn.BurnError, match=r"pow: integers to negative integer powers .*"
                                             r"x\.to\(burn\.float32\) \*\* -1"):
        x ** -1
    assert_close((x.to(burn.float32) ** -1).numpy(), np.array([1, 2, -1], np.float32) ** -1)
    assert (x ** 2).tolist() == (np.array([1, 2, -1]) ** 2).tolist()


# ---------------------------------------------------------------- clamp


def test_clamp_promotes_and_takes_any_int_bound(backend):
    a = np.array([1, 5, 9], np.int32)
    got = on(backend, a).clamp(2.5, 7.5)  # a float bound makes the result float, as `x + 2.5`
    assert got.dtype == burn.float32
    assert_close(got.numpy(), np.clip(a, 2.5, 7.5).astype(np.float32))
    u = np.array([1, 5], np.uint32)
    got = on(backend, u).clamp(-1, 3)  # a bound beyond the dtype's range changes nothing
    assert got.dtype == burn.uint32 and got.tolist() == np.clip(u, -1, 3).tolist()
    got = on(backend, a).clamp(0, 2**40)
    assert got.dtype == burn.int32 and got.tolist() == np.clip(a, 0, 2**40).tolist()
    with pytest.raises(burn.BurnError, match="clamp: the number 4294967296 does not fit int32"):
        on(backend, a).clamp(2**32)


# ---------------------------------------------------------------- casts


def test_cast_to_a_dtype_the_backend_lacks_names_it(backend):
    x = burn.ones(3, backend=backend)
    missing = [d for d in ("int8", "uint8", "int16", "bfloat16") if d not in backend.dtypes]
    for name in missing:
        with pytest.raises(burn.BurnError,
                           match=rf"to\({name}\): dtype {name} is not supported on the"):
            x.to(getattr(burn, name))
    # NumPy dtypes are accepted, as the creation functions accept them
    assert x.to(np.int32).dtype == burn.int32 and x.to(np.dtype("int32")).tolist() == [1, 1, 1]


# ---------------------------------------------------------------- shapes and axes


def test_shape_arguments_must_be_ints(backend):
    with pytest.raises(burn.BurnError, match="zeros: a shape must be an int or a sequence"):
        burn.zeros(2.5, backend=backend)
    with pytest.raises(burn.BurnError, match="zeros: a shape must be"):
        burn.zeros("23", backend=backend)
    with pytest.raises(burn.BurnError, match="zeros: sizes must be an int, got 2.0"):
        burn.zeros((2.0, 3), backend=backend)
    with pytest.raises(burn.BurnError, match=r"ones: 3 is not a dtype .*ones\(\(2, 3\)\)"):
        burn.ones(2, 3, backend=backend)
    with pytest.raises(burn.BurnError, match="linspace: steps must be an int, got 2.5"):
        burn.linspace(0, 1, 2.5, backend=backend)
    with pytest.raises(burn.BurnError, match="eye: sizes must be >= 0"):
        burn.eye(-1, backend=backend)
    t = burn.arange(6, backend=backend)
    with pytest.raises(burn.BurnError, match="reshape: sizes must be an int, got 2.5"):
        t.reshape(2.5, 2)
    with pytest.raises(burn.BurnError, match=r"expand: invalid shape \(-1, 6\)"):
        t.expand(-1, 6)
    with pytest.raises(burn.BurnError, match=r"split: sizes \[4, -1, 3\] must not be negative"):
        t.split([4, -1, 3])
    with pytest.raises(burn.BurnError, match="sum: axis must be an int, a sequence of ints"):
        t.sum(0.0)
    assert [p.tolist() for p in t.split(np.int64(4))] == [[0, 1, 2, 3], [4, 5]]


# ---------------------------------------------------------------- indexing


def test_indexing_mistakes_say_what_to_write(backend):
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    x = on(backend, a)
    idx = burn.tensor([0, 2], backend=backend)
    with pytest.raises(burn.BurnError, match=r"must be the only index.*index_select\(axis"):
        x[0, idx]
    assert_close(x.index_select(1, idx)[0].numpy(), a[0, [0, 2]])
    with pytest.raises(burn.BurnError, match=r"unsupported index array\(\[0, 1\]\).*"
                                             r"burn\.tensor"):
        x[np.array([0, 1])]
    with pytest.raises(burn.BurnError, match=r"a bool mask \(shape \(2, 3\)\).*burn\.where"):
        x[x > 2]
    with pytest.raises(burn.BurnError, match=r"a bool index \(True\) is not supported"):
        x[True]  # NumPy reads it as a mask; it must not silently be row 1
    with pytest.raises(burn.BurnError, match="bad slice .* slice step cannot be zero"):
        x[::0]
    with pytest.raises(burn.BurnError, match="bad slice slice.1.0, 2, None."):
        x[:, 1.0:2]
    with pytest.raises(burn.BurnError, match="unsupported index"):
        x[burn.tensor(1.0, backend=backend), 0]  # a float index is refused, not truncated
    assert_close(x[burn.tensor(1, backend=backend), ::-2].numpy(), a[1, ::-2])
    assert_close(x[..., np.int64(-1)].numpy(), a[..., -1])


def test_truth_value_and_assignment_messages(backend):
    x = burn.tensor([1.0, -2.0], backend=backend)
    with pytest.raises(burn.BurnError, match=r"truth value of a tensor of 2 elements .*"
                                             r"\.any\(\) or \.all\(\)"):
        if x > 0:
            pass
    assert bool(x[0] > 0) is True
    with pytest.raises(burn.BurnError, match=r"tensors are immutable.*burn\.where"):
        x[0] = 3.0


# ---------------------------------------------------------------- backends


def test_two_backend_objects_of_one_device_mix(backend):
    """``backend=burn.Cpu()`` written twice is one device, not "cpu and cpu"."""
    # a second object of the same kind (with --fusion: over the same inner backend)
    again = type(backend)(*filter(None, [backend.wraps]))
    a = burn.tensor([1.0, 2.0], backend=backend)
    b = burn.tensor([3.0, 4.0], backend=again)
    assert again == backend and hash(again) == hash(backend)
    assert (a + b).tolist() == [4.0, 6.0]
    assert b.to(backend) is b  # already there: no copy
    assert burn.cat([a, b]).tolist() == [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(burn.BurnError, match="tensors are on different devices"):
        a + b.to("numpy")


def test_mistakes_found_by_review_are_burn_errors(backend):
    """Each raised NumPy's own ValueError, or nothing, before."""
    x = burn.ones((2, 3), backend=backend)
    with pytest.raises(burn.BurnError, match=r"flatten: start_dim 1 comes after end_dim 0 .*"
                                             r"write flatten\(0, 1\)"):
        x.flatten(1, 0)
    with pytest.raises(burn.BurnError, match=r"pad: the value must be a number, got 'a'"):
        burn.pad(x, (1, 1), value="a")
    if supports(backend, ["uint8"]):
        with pytest.raises(burn.BurnError, match=r"pad: the number -1 does not fit uint8"):
            burn.pad(x.to(burn.uint8), (1, 1), value=-1)
    with pytest.raises(burn.BurnError, match=r"tensor: .* nested lists have different lengths"):
        burn.tensor([[1, 2], [3]], backend=backend)
    with pytest.raises(burn.BurnError, match=r"to\('complex64'\): neither a device nor a dtype"):
        x.to("complex64")
    assert burn.pad(x, (1, 0), value=2).numpy()[:, 0].tolist() == [2.0, 2.0]
