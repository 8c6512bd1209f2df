"""The one op enum of the IR, grouped by family.

Each op's operands, attributes and result types are checked by ``cubepy.ir.rules``; the
verifier re-runs those rules after each pass when ``CUBEPY_VERIFY=1``.
"""

from __future__ import annotations

import enum


class Op(enum.Enum):
    # values
    CONST = "const"            # attrs: value
    # grid
    CUBE_POS = "cube_pos"      # attrs: axis
    CUBE_COUNT = "cube_count"  # attrs: axis
    # creation
    ARANGE = "arange"          # attrs: start, end
    FULL = "full"              # operands: scalar value; attrs: shape
    # elementwise binary
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"                # true division, floating operands; attrs rounding="rn": exact
    FLOORDIV = "floordiv"      # integers: Python floor semantics
    MOD = "mod"                # integers: Python floor semantics; floats: fmod with sign of b
    POW = "pow"
    MAXIMUM = "maximum"
    MINIMUM = "minimum"
    AND = "and"                # bitwise, or logical on bool
    OR = "or"
    XOR = "xor"
    SHL = "shl"
    SHR = "shr"                # arithmetic for signed, logical for unsigned
    # comparisons (result bool)
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    # elementwise unary
    NEG = "neg"
    NOT = "not"                # bitwise invert, or logical not on bool
    ABS = "abs"
    EXP = "exp"
    EXP2 = "exp2"
    LOG = "log"
    LOG2 = "log2"
    SQRT = "sqrt"              # attrs rounding="rn": correctly rounded, as DIV's
    RSQRT = "rsqrt"
    SIN = "sin"
    COS = "cos"
    TANH = "tanh"
    ERF = "erf"
    SIGMOID = "sigmoid"
    FLOOR = "floor"
    CEIL = "ceil"
    UMULHI = "umulhi"          # int32/uint32: the high word of the 64-bit unsigned product
    # elementwise ternary
    FMA = "fma"
    WHERE = "where"
    CAST = "cast"              # attrs: dtype
    BITCAST = "bitcast"        # attrs: dtype; the same bits read as a dtype of their width
    # pointers and memory
    PTR_ADD = "ptr_add"        # pointer + integer offsets
    LOAD = "load"              # operands: ptr [, mask [, other]]
    STORE = "store"            # operands: ptr, value [, mask]
    ATOMIC = "atomic"          # attrs: kind (add|max|min|xchg|and|or|xor), sem (acq_rel|relaxed);
    #                            operands: ptr, value [, mask]
    ATOMIC_CAS = "atomic_cas"  # operands: ptr, cmp, value
    # A 2-D block read through a tensor descriptor: operands fallback, base, rows, cols,
    # row_stride, row0, col0; attrs: block. Its value is `fallback`'s (the same read as a
    # masked pointer-tile load); a backend with block copies (Triton's TMA) may read it so.
    BLOCK_LOAD = "block_load"
    # A 2-D block write through a tensor descriptor: operands ptr, value, mask (a masked
    # pointer-tile store, its fallback), base, rows, cols, row_stride, row0, col0; attrs:
    # block. A backend with block copies may write it so; the others store the fallback.
    BLOCK_STORE = "block_store"
    # layout
    BROADCAST = "broadcast"    # attrs: shape
    EXPAND_DIMS = "expand_dims"  # attrs: axis
    RESHAPE = "reshape"        # attrs: shape
    PERMUTE = "permute"        # attrs: dims
    FLIP = "flip"              # attrs: axis; the elements along it in reverse order
    # reductions and scans
    REDUCE = "reduce"          # attrs: kind (sum|max|min|xor|or), axis
    ARGREDUCE = "argreduce"    # attrs: kind (argmax|argmin), axis
    SCAN = "scan"              # attrs: kind (cumsum|cumprod), axis
    SORT = "sort"              # attrs: descending; integer keys in order along the last axis
    # Reductions and scans by a combine function: operands n tiles of one shape; region
    # combine(a_1..a_n, b_1..b_n) of scalars yields n scalars, the a's the earlier elements';
    # attrs: axis (and reverse for the scan). Results: n tiles.
    REDUCE_FN = "reduce_fn"
    SCAN_FN = "scan_fn"
    # operands: src, index (an integer tile of src's rank, in range); attrs: axis. Element e
    # is src's element at e with its coordinate along axis replaced by index[e].
    GATHER = "gather"
    DOT = "dot"                # operands: a, b, acc
    # control flow (structured)
    FOR = "for"                # operands: lb, ub, step, *inits; region: (iv, *carried)
    WHILE = "while"            # operands: *inits; regions: cond(*carried), body(*carried)
    IF = "if"                  # operands: cond; regions: then, else
    YIELD = "yield"            # terminator of every region
    # compiler hints: the operand's value, with what it promises (Triton's multiple_of,
    # max_contiguous, max_constancy); backends that cannot use a hint drop it
    HINT = "hint"              # attrs: kind, values (one int per axis, or one for a scalar)
    # calls and debugging
    CALL = "call"              # attrs: callee (Function); removed by the inline pass
    PRINT = "print"            # attrs: prefix
    ASSERT = "assert"          # operands: cond [, mask]; attrs: message. Checked where it can be
    # the cube's memory accesses before it happen before those after it (debug_barrier)
    BARRIER = "barrier"
    ASSUME = "assume"          # operands: cond; a promise that Triton uses and the others drop


BINARY = frozenset({
    Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.FLOORDIV, Op.MOD, Op.POW, Op.MAXIMUM, Op.MINIMUM,
    Op.AND, Op.OR, Op.XOR, Op.SHL, Op.SHR,
})
COMPARE = frozenset({Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE})
UNARY = frozenset({Op.NEG, Op.NOT, Op.ABS, Op.FLOOR, Op.CEIL})
MATH = frozenset({
    Op.EXP, Op.EXP2, Op.LOG, Op.LOG2, Op.SQRT, Op.RSQRT, Op.SIN, Op.COS, Op.TANH, Op.ERF,
    Op.SIGMOID,
})
ELEMENTWISE = BINARY | COMPARE | UNARY | MATH | {Op.UMULHI, Op.FMA, Op.WHERE, Op.CAST,
                                                 Op.BITCAST, Op.PTR_ADD}
LAYOUT = frozenset({Op.BROADCAST, Op.EXPAND_DIMS, Op.RESHAPE, Op.PERMUTE, Op.FLIP})
CONTROL = frozenset({Op.FOR, Op.WHILE, Op.IF})
# Ops with effects: never removed by DCE, never merged by CSE.
SIDE_EFFECTS = frozenset({Op.STORE, Op.BLOCK_STORE, Op.ATOMIC, Op.ATOMIC_CAS, Op.PRINT,
                          Op.ASSERT, Op.BARRIER, Op.ASSUME, Op.CALL, Op.YIELD})
# Ops whose result may differ between two evaluations with equal operands.
NOT_PURE = SIDE_EFFECTS | CONTROL | {Op.LOAD}
