"""Fused scaled dot-product attention: FlashAttention's forward and backward passes.

``out = softmax(Q K^T * scale) V`` per (batch, head), for Q (B, H, Sq, D) and K, V (B, H, Sk,
D), with an optional causal mask (query i sees keys 0..i, top-left aligned as torch's
``is_causal``). The Sq x Sk score matrix is never written to memory:

- forward (``attention_kernel``): each cube takes ``BLOCK_M`` queries of one head and walks
  over the keys ``BLOCK_N`` at a time, keeping a running row maximum and sum ("online
  softmax"). It also stores each row's log-sum-exp (``lse``), which the backward pass uses to
  recompute the probabilities block by block.
- backward: with ``P = softmax(S)``, ``D = rowsum(dO * O)`` and ``dS = P * (dO V^T - D)``,
  ``dV = P^T dO``, ``dK = dS^T Q * scale``, ``dQ = dS K * scale``. ``row_dot_kernel`` computes
  D; ``key_grads_kernel`` keeps a block of keys and walks over the queries (dK, dV; with
  ``ATOMIC_DQ`` it also adds its share of dQ into float32 sums); ``query_grads_kernel`` keeps a
  block of queries and walks over the keys (dQ).

Scores, sums and accumulators are float32; the probabilities (and dS) are rounded to the
inputs' dtype before their products, as on tensor cores. Q, K, V, O and dO may have any
strides with a unit head-dim stride (``Heads``: the batch, head and row strides), so heads
split off a projection's (B, S, H * D) output are read in place. A head dim that is not a
power of two is masked up to the next one (``HEAD_DIM``, at least 16: the least ``tl.dot``
tile). The examples ``examples/flash_attention.py`` and ``flash_attention_backward.py``
launch these kernels on plain arrays; ``kernels.attention`` is burn's entry point (views in,
views out, blocks chosen or tuned per target).

Example:
    >>> launch_forward(*map(Heads.contiguous, (q, k, v, out)), lse,  # doctest: +SKIP
    ...                Sizes(2, 8, 512, 512, 64), True, 0.125, 64, 64, target="cpu")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cubepy as cube

LOG2_E = 1.4426950408889634
LN_2 = 0.6931471805599453
MAX_HEAD_DIM = 128  # the accumulators hold BLOCK_M x HEAD_DIM float32 values in registers
ROUND_BLOCK = 1024  # elements per cube that round dQ's float32 sums to the dtype


@cube.func
def head_start(offset, s_b, s_h, head, heads):
    # The element offset of head ``head`` (batch * heads + h) of a (B, H, S, D) array.
    return offset + (head // heads) * s_b + (head % heads) * s_h


@cube.func
def attend(acc, row_sum, row_max, q_tile, k_tile, v_tile, rm, rn, seq_k, qk_scale,
           MASKED: cube.Comptime[bool], CAUSAL: cube.Comptime[bool]):
    # One block of keys: scores, the running max and sum, and acc += p @ v, rescaled.
    # k_tile is K's block transposed, (HEAD_DIM, BLOCK_N). Unmasked blocks skip the selects.
    scores = cube.dot(q_tile, k_tile)
    if MASKED:
        visible = rn[None, :] < seq_k
        if CAUSAL:
            visible = visible & (rn[None, :] <= rm[:, None])
        scores = cube.where(visible, scores, -float("inf"))
    # Scaled after the row max (qk_scale > 0), so that the exponent is one fused multiply-add
    # per score. Key 0 is visible to every row and sits in the first block, so new_max is
    # finite from the first block on and no exp2 sees inf - inf.
    new_max = cube.maximum(row_max, cube.max(scores, axis=1) * qk_scale)
    rescale = cube.exp2(row_max - new_max)
    p = cube.exp2(scores * qk_scale - new_max[:, None])
    row_sum = row_sum * rescale + cube.sum(p, axis=1)
    acc = cube.dot(p.to(v_tile.dtype), v_tile, acc * rescale[:, None])
    return acc, row_sum, new_max


@cube.kernel
def attention_kernel(q, k, v, out, lse, q_off, q_sb, q_sh, q_ss, k_off, k_sb, k_sh, k_ss,
                     v_off, v_sb, v_sh, v_ss, o_off, o_sb, o_sh, o_ss, heads, seq_q, seq_k,
                     dim, scale, HEAD_DIM: cube.Comptime[int], BLOCK_M: cube.Comptime[int],
                     BLOCK_N: cube.Comptime[int], CAUSAL: cube.Comptime[bool],
                     DIM_EVEN: cube.Comptime[bool], DESCRIPTORS: cube.Comptime[bool] = False,
                     STORE_LSE: cube.Comptime[bool] = False):
    # Grid: (query blocks, batch * heads). With STORE_LSE, each row's log-sum-exp of the
    # scaled scores goes to lse (float32, contiguous (batch * heads, seq_q)).
    block_m = cube.cube_pos(0)
    head = cube.cube_pos(1)
    q_head = head_start(q_off, q_sb, q_sh, head, heads)
    k_head = head_start(k_off, k_sb, k_sh, head, heads)
    v_head = head_start(v_off, v_sb, v_sh, head, heads)
    rm = block_m * BLOCK_M + cube.arange(0, BLOCK_M)
    rd = cube.arange(0, HEAD_DIM)
    d_ok = rd < dim
    row_ok = rm < seq_q
    q_at = q_head + rm[:, None] * q_ss + rd[None, :]
    if DIM_EVEN:
        q_tile = cube.load(q + q_at, mask=row_ok[:, None], other=0.0)
    else:
        q_tile = cube.load(q + q_at, mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    # exp2 of scores in log2 units is one instruction where exp is two
    qk_scale = scale * LOG2_E
    row_max = cube.full((BLOCK_M,), -float("inf"), cube.float32)
    row_sum = cube.zeros((BLOCK_M,), cube.float32)
    acc = cube.zeros((BLOCK_M, HEAD_DIM), cube.float32)
    # Keys below whole_end are visible to every query of the block: no masks there. The
    # rest (the ragged last block; with CAUSAL, the blocks on the diagonal) is masked, and
    # with CAUSAL the keys past this block's last query are skipped.
    keys_end = seq_k
    whole_end = seq_k
    if CAUSAL:
        keys_end = cube.minimum(seq_k, (block_m + 1) * BLOCK_M)
        whole_end = cube.minimum(seq_k, block_m * BLOCK_M + 1)
    whole_end = whole_end // BLOCK_N * BLOCK_N
    if DESCRIPTORS:  # TMA block copies on sm_90+: contiguous K and V, so one 2-D descriptor
        k_desc = cube.make_tensor_descriptor(k, [cube.cube_count(1) * seq_k, HEAD_DIM],
                                             [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
        v_desc = cube.make_tensor_descriptor(v, [cube.cube_count(1) * seq_k, HEAD_DIM],
                                             [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    for start_n in range(0, whole_end, BLOCK_N):
        rn = start_n + cube.arange(0, BLOCK_N)
        if DESCRIPTORS:
            k_tile = cube.trans(k_desc.load([head * seq_k + start_n, 0]))
            v_tile = v_desc.load([head * seq_k + start_n, 0])
        else:
            # K read as its transpose (HEAD_DIM, BLOCK_N), so the product is a plain dot
            k_at = k_head + rn[None, :] * k_ss + rd[:, None]
            v_at = v_head + rn[:, None] * v_ss + rd[None, :]
            if DIM_EVEN:
                k_tile = cube.load(k + k_at)
                v_tile = cube.load(v + v_at)
            else:
                k_tile = cube.load(k + k_at, mask=d_ok[:, None], other=0.0)
                v_tile = cube.load(v + v_at, mask=d_ok[None, :], other=0.0)
        acc, row_sum, row_max = attend(acc, row_sum, row_max, q_tile, k_tile, v_tile, rm, rn,
                                       seq_k, qk_scale, False, CAUSAL)
    for start_n in range(whole_end, keys_end, BLOCK_N):
        rn = start_n + cube.arange(0, BLOCK_N)
        key_ok = rn < seq_k
        if DIM_EVEN:
            k_ok = key_ok[None, :]
            v_ok = key_ok[:, None]
        else:
            k_ok = key_ok[None, :] & d_ok[:, None]
            v_ok = key_ok[:, None] & d_ok[None, :]
        k_tile = cube.load(k + k_head + rn[None, :] * k_ss + rd[:, None], mask=k_ok, other=0.0)
        v_tile = cube.load(v + v_head + rn[:, None] * v_ss + rd[None, :], mask=v_ok, other=0.0)
        acc, row_sum, row_max = attend(acc, row_sum, row_max, q_tile, k_tile, v_tile, rm, rn,
                                       seq_k, qk_scale, True, CAUSAL)
    # The store rounds to out's dtype.
    o_at = head_start(o_off, o_sb, o_sh, head, heads) + rm[:, None] * o_ss + rd[None, :]
    if DIM_EVEN:
        cube.store(out + o_at, acc / row_sum[:, None], mask=row_ok[:, None])
    else:
        cube.store(out + o_at, acc / row_sum[:, None], mask=row_ok[:, None] & d_ok[None, :])
    if STORE_LSE:  # row_max is in log2 units: back to natural logarithms
        cube.store(lse + head * seq_q + rm, (row_max + cube.log2(row_sum)) * LN_2, mask=row_ok)


@cube.func
def load_rows(base, at, row_ok, d_ok, DIM_EVEN: cube.Comptime[bool]):
    # A (rows, HEAD_DIM) tile: rows past the end and head-dim padding read as zeros.
    if DIM_EVEN:
        tile = cube.load(base + at, mask=row_ok[:, None], other=0.0)
    else:
        tile = cube.load(base + at, mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    return tile


@cube.kernel
def row_dot_kernel(out, d_out, delta, dq_sums, o_off, o_sb, o_sh, o_ss, g_off, g_sb, g_sh,
                   g_ss, heads, seq_q, dim, HEAD_DIM: cube.Comptime[int],
                   BLOCK_M: cube.Comptime[int], DIM_EVEN: cube.Comptime[bool],
                   ZERO_DQ: cube.Comptime[bool]):
    # delta[row] = sum(d_out[row] * out[row]) in float32; grid (query blocks, batch * heads).
    # With ZERO_DQ it also clears the rows of dq_sums (contiguous (batch * heads, seq_q,
    # dim)) that the dK/dV kernel adds dQ into.
    head = cube.cube_pos(1)
    rm = cube.cube_pos(0) * BLOCK_M + cube.arange(0, BLOCK_M)
    rd = cube.arange(0, HEAD_DIM)
    row_ok = rm < seq_q
    d_ok = rd < dim
    o = load_rows(out, head_start(o_off, o_sb, o_sh, head, heads) + rm[:, None] * o_ss
                  + rd[None, :], row_ok, d_ok, DIM_EVEN).to(cube.float32)
    do = load_rows(d_out, head_start(g_off, g_sb, g_sh, head, heads) + rm[:, None] * g_ss
                   + rd[None, :], row_ok, d_ok, DIM_EVEN).to(cube.float32)
    rows = head * seq_q + rm
    cube.store(delta + rows, cube.sum(o * do, axis=1), mask=row_ok)
    if ZERO_DQ:
        cube.store(dq_sums + rows[:, None] * dim + rd[None, :],
                   cube.zeros((BLOCK_M, HEAD_DIM), cube.float32),
                   mask=row_ok[:, None] & d_ok[None, :])


@cube.kernel
def to_dtype_kernel(src, dst, n, BLOCK: cube.Comptime[int]):
    # dst[i] = src[i], rounded to dst's dtype on the store: dQ's float32 sums to the inputs'.
    at = cube.cube_pos(0) * BLOCK + cube.arange(0, BLOCK)
    cube.store(dst + at, cube.load(src + at, mask=at < n), mask=at < n)


@cube.func
def query_rows(q, d_out, lse, delta, q_head, q_ss, g_head, g_ss, rm, rd, d_ok, head, seq_q,
               dim, DIM_EVEN: cube.Comptime[bool]):
    # Queries rm of one head: their Q and d_out rows, lse in log2 units, D, which exist, and
    # where their rows of dQ (contiguous (batch * heads, seq_q, dim)) are.
    row_ok = rm < seq_q
    q_tile = load_rows(q, q_head + rm[:, None] * q_ss + rd[None, :], row_ok, d_ok, DIM_EVEN)
    do_tile = load_rows(d_out, g_head + rm[:, None] * g_ss + rd[None, :], row_ok, d_ok,
                        DIM_EVEN)
    rows = head * seq_q + rm
    lse2 = cube.load(lse + rows, mask=row_ok, other=0.0) * LOG2_E
    delta_m = cube.load(delta + rows, mask=row_ok, other=0.0)
    return q_tile, do_tile, lse2, delta_m, row_ok, rows[:, None] * dim + rd[None, :]


@cube.kernel
def key_grads_kernel(q, k, v, d_out, lse, delta, dk, dv, dq_sums, q_off, q_sb, q_sh, q_ss,
                     k_off, k_sb, k_sh, k_ss, v_off, v_sb, v_sh, v_ss, g_off, g_sb, g_sh, g_ss,
                     heads, seq_q, seq_k, dim, scale, HEAD_DIM: cube.Comptime[int],
                     BLOCK_KEPT: cube.Comptime[int], BLOCK_STEP: cube.Comptime[int],
                     CAUSAL: cube.Comptime[bool], ATOMIC_DQ: cube.Comptime[bool],
                     DIM_EVEN: cube.Comptime[bool]):
    # Grid: (blocks of BLOCK_KEPT keys, batch * heads). The cube keeps its keys' dK and dV in
    # registers and walks over the queries, BLOCK_STEP at a time. Every product is computed
    # transposed, (keys, queries), so that P^T and dS^T need no transpose before they
    # multiply d_out and Q. With ATOMIC_DQ it also adds its keys' share of each dQ block,
    # dS K * scale, into the float32 dq_sums: no second pass over P and dP for dQ. dk and dv
    # are contiguous (batch * heads, seq_k, dim).
    head = cube.cube_pos(1)
    rn = cube.cube_pos(0) * BLOCK_KEPT + cube.arange(0, BLOCK_KEPT)
    rd = cube.arange(0, HEAD_DIM)
    d_ok = rd < dim
    key_ok = rn < seq_k
    k_tile = load_rows(k, head_start(k_off, k_sb, k_sh, head, heads) + rn[:, None] * k_ss
                       + rd[None, :], key_ok, d_ok, DIM_EVEN)
    v_tile = load_rows(v, head_start(v_off, v_sb, v_sh, head, heads) + rn[:, None] * v_ss
                       + rd[None, :], key_ok, d_ok, DIM_EVEN)
    q_head = head_start(q_off, q_sb, q_sh, head, heads)
    g_head = head_start(g_off, g_sb, g_sh, head, heads)
    qk_scale = scale * LOG2_E
    dk_acc = cube.zeros((BLOCK_KEPT, HEAD_DIM), cube.float32)
    dv_acc = cube.zeros((BLOCK_KEPT, HEAD_DIM), cube.float32)
    first_query = 0
    if CAUSAL:  # the queries before this block's first key see none of its keys
        first_query = cube.cube_pos(0) * BLOCK_KEPT // BLOCK_STEP * BLOCK_STEP
    for start_m in range(first_query, seq_q, BLOCK_STEP):
        rm = start_m + cube.arange(0, BLOCK_STEP)
        q_tile, do_tile, lse2, delta_m, row_ok, dq_at = query_rows(
            q, d_out, lse, delta, q_head, q_ss, g_head, g_ss, rm, rd, d_ok, head, seq_q, dim,
            DIM_EVEN)
        visible = row_ok[None, :] & key_ok[:, None]
        if CAUSAL:
            visible = visible & (rn[:, None] <= rm[None, :])
        p_t = cube.exp2(cube.dot(k_tile, cube.trans(q_tile)) * qk_scale - lse2[None, :])
        p_t = cube.where(visible, p_t, 0.0)
        dv_acc = cube.dot(p_t.to(do_tile.dtype), do_tile, dv_acc)
        dp_t = cube.dot(v_tile, cube.trans(do_tile))
        ds_t = (p_t * (dp_t - delta_m[None, :])).to(q_tile.dtype)
        dk_acc = cube.dot(ds_t, q_tile, dk_acc)
        if ATOMIC_DQ:
            # relaxed: the sums are read only by a later launch, and acq_rel costs twice
            cube.atomic_add(dq_sums + dq_at, cube.dot(cube.trans(ds_t), k_tile) * scale,
                            mask=row_ok[:, None] & d_ok[None, :], sem="relaxed")
    kv_at = (head * seq_k + rn)[:, None] * dim + rd[None, :]
    kv_ok = key_ok[:, None] & d_ok[None, :]
    cube.store(dk + kv_at, dk_acc * scale, mask=kv_ok)
    cube.store(dv + kv_at, dv_acc, mask=kv_ok)


@cube.kernel
def query_grads_kernel(q, k, v, d_out, lse, delta, dq, q_off, q_sb, q_sh, q_ss, k_off, k_sb,
                       k_sh, k_ss, v_off, v_sb, v_sh, v_ss, g_off, g_sb, g_sh, g_ss, heads,
                       seq_q, seq_k, dim, scale, HEAD_DIM: cube.Comptime[int],
                       BLOCK_KEPT: cube.Comptime[int], BLOCK_STEP: cube.Comptime[int],
                       CAUSAL: cube.Comptime[bool], DIM_EVEN: cube.Comptime[bool]):
    # Grid: (blocks of BLOCK_KEPT queries, batch * heads); the cube walks over the keys its
    # queries see, BLOCK_STEP at a time. dq is contiguous (batch * heads, seq_q, dim).
    block_m = cube.cube_pos(0)
    head = cube.cube_pos(1)
    rm = block_m * BLOCK_KEPT + cube.arange(0, BLOCK_KEPT)
    rd = cube.arange(0, HEAD_DIM)
    d_ok = rd < dim
    q_tile, do_tile, lse2, delta_m, row_ok, dq_at = query_rows(
        q, d_out, lse, delta, head_start(q_off, q_sb, q_sh, head, heads), q_ss,
        head_start(g_off, g_sb, g_sh, head, heads), g_ss, rm, rd, d_ok, head, seq_q, dim,
        DIM_EVEN)
    k_head = head_start(k_off, k_sb, k_sh, head, heads)
    v_head = head_start(v_off, v_sb, v_sh, head, heads)
    qk_scale = scale * LOG2_E
    dq_acc = cube.zeros((BLOCK_KEPT, HEAD_DIM), cube.float32)
    keys_end = seq_k
    if CAUSAL:
        keys_end = cube.minimum(seq_k, (block_m + 1) * BLOCK_KEPT)
    for start_n in range(0, keys_end, BLOCK_STEP):
        rn = start_n + cube.arange(0, BLOCK_STEP)
        key_ok = rn < seq_k
        # K and V read as their transposes (HEAD_DIM, BLOCK_STEP): plain dots for S and dP
        kv_ok = key_ok[None, :] & d_ok[:, None]
        k_t = cube.load(k + k_head + rn[None, :] * k_ss + rd[:, None], mask=kv_ok, other=0.0)
        v_t = cube.load(v + v_head + rn[None, :] * v_ss + rd[:, None], mask=kv_ok, other=0.0)
        visible = key_ok[None, :]
        if CAUSAL:
            visible = visible & (rn[None, :] <= rm[:, None])
        p = cube.exp2(cube.dot(q_tile, k_t) * qk_scale - lse2[:, None])
        p = cube.where(visible, p, 0.0)
        ds = p * (cube.dot(do_tile, v_t) - delta_m[:, None])
        dq_acc = cube.dot(ds.to(k_t.dtype), cube.trans(k_t), dq_acc)
    cube.store(dq + dq_at, dq_acc * scale, mask=row_ok[:, None] & d_ok[None, :])


@dataclass(frozen=True, slots=True)
class Heads:
    """A (batch, heads, seq, dim) array as the kernels address it: the storage (or any array
    the target takes), the element offset, and the batch, head and row strides; the head-dim
    stride is 1.

    Example:
        >>> Heads.contiguous(np.zeros((2, 3, 5, 16), np.float32)).strides
        (240, 80, 16)
    """

    storage: Any
    offset: int
    s_b: int
    s_h: int
    s_s: int

    @property
    def strides(self) -> tuple[int, int, int]:
        return self.s_b, self.s_h, self.s_s

    def args(self) -> tuple[int, int, int, int]:
        """The offset and strides, as the kernels take them."""
        return self.offset, self.s_b, self.s_h, self.s_s

    @classmethod
    def contiguous(cls, array: Any) -> Heads:
        """A contiguous (batch, heads, seq, dim) array at offset 0."""
        _, heads, seq, dim = array.shape
        return cls(array, 0, heads * seq * dim, seq * dim, dim)


@dataclass(frozen=True, slots=True)
class Sizes:
    """The sizes of one attention: batch, heads, query and key counts, head dim."""

    batch: int
    heads: int
    seq_q: int
    seq_k: int
    dim: int

    @property
    def head_tile(self) -> int:
        """The head dim as a tile side: the next power of two, at least 16."""
        return max(16, 1 << (self.dim - 1).bit_length())

    @property
    def rows(self) -> int:
        return self.batch * self.heads


def launch_forward(q: Heads, k: Heads, v: Heads, out: Heads, lse: Any, sizes: Sizes,
                   causal: bool, scale: float, block_m: int, block_n: int,
                   descriptors: bool = False, **options: Any) -> None:
    """Run the forward kernel: ``out`` (and ``lse``, contiguous float32 (B, H, Sq), unless
    None) from ``q``, ``k``, ``v``. ``descriptors`` needs contiguous K and V with a
    power-of-two head dim of at least 16. ``options`` are launch options (``target``,
    ``num_warps``...).

    Example:
        >>> launch_forward(*map(Heads.contiguous, (q, k, v, out)), lse,  # doctest: +SKIP
        ...                Sizes(1, 2, 8, 8, 16), False, 0.25, 16, 16, target="cpu")
    """
    grid = (cube.cdiv(sizes.seq_q, block_m), sizes.rows)
    # Without lse, out stands in for it: STORE_LSE=False compiles the store away.
    attention_kernel[grid](
        q.storage, k.storage, v.storage, out.storage, out.storage if lse is None else lse,
        *q.args(), *k.args(), *v.args(), *out.args(), sizes.heads, sizes.seq_q, sizes.seq_k,
        sizes.dim, float(scale), HEAD_DIM=sizes.head_tile, BLOCK_M=block_m, BLOCK_N=block_n,
        CAUSAL=causal, DIM_EVEN=sizes.dim == sizes.head_tile, DESCRIPTORS=descriptors,
        STORE_LSE=lse is not None, **options)


def launch_backward(q: Heads, k: Heads, v: Heads, out: Heads, d_out: Heads, lse: Any,
                    delta: Any, dq: Any, dk: Any, dv: Any, dq_sums: Any, sizes: Sizes,
                    causal: bool, scale: float, block_kept: int, block_step: int,
                    atomic_dq: bool = False, **options: Any) -> None:
    """Run the backward kernels: ``dq``, ``dk``, ``dv`` (contiguous (B, H, S, D) arrays of the
    inputs' dtype) from the inputs, ``out``, ``d_out`` and the forward's ``lse``. ``delta`` is
    float32 scratch of (B, H, Sq); with ``atomic_dq``, ``dq_sums`` is float32 scratch of dq's
    shape (``dq`` itself when that is float32), else it is not touched.

    Example:
        >>> launch_backward(*heads, lse, delta, dq, dk, dv, None,  # doctest: +SKIP
        ...                 Sizes(1, 2, 8, 8, 16), False, 0.25, 16, 16, target="cpu")
    """
    shape = {"HEAD_DIM": sizes.head_tile, "BLOCK_KEPT": block_kept, "BLOCK_STEP": block_step,
             "CAUSAL": causal}
    even = sizes.dim == sizes.head_tile
    query_grid = (cube.cdiv(sizes.seq_q, block_kept), sizes.rows)
    sums = dq_sums if atomic_dq else dq
    row_dot_kernel[query_grid](out.storage, d_out.storage, delta, sums, *out.args(),
                               *d_out.args(), sizes.heads, sizes.seq_q, sizes.dim,
                               HEAD_DIM=sizes.head_tile, BLOCK_M=block_kept, DIM_EVEN=even,
                               ZERO_DQ=atomic_dq, **options)
    layouts = (*q.args(), *k.args(), *v.args(), *d_out.args(), sizes.heads, sizes.seq_q,
               sizes.seq_k, sizes.dim, float(scale))  # a Python float is float32 in kernels
    inputs = (q.storage, k.storage, v.storage, d_out.storage, lse, delta)
    # With no queries the key blocks still run: they write dK = dV = 0.
    key_grads_kernel[(cube.cdiv(sizes.seq_k, block_kept), sizes.rows)](
        *inputs, dk, dv, sums, *layouts, **shape, ATOMIC_DQ=atomic_dq, DIM_EVEN=even, **options)
    if not atomic_dq:
        query_grads_kernel[query_grid](*inputs, dq, *layouts, **shape, DIM_EVEN=even, **options)
    elif dq_sums is not dq:
        size = sizes.rows * sizes.seq_q * sizes.dim
        to_dtype_kernel[(cube.cdiv(size, ROUND_BLOCK),)](dq_sums, dq, size, BLOCK=ROUND_BLOCK,
                                                         **options)
