"""The Triton source generated kernels may need besides their own function: helper
``@triton.jit`` functions for Python semantics Triton lacks (and for what the interpreter
lacks), and module-level constants. ``codegen`` adds the ones a kernel uses."""

HELPERS = {
    "_floordiv": '''
@triton.jit
def _floordiv(a, b):
    # Python's floor division from Triton's truncating one
    q = a // b
    return tl.where((a % b != 0) & ((a < 0) != (b < 0)), q - 1, q)
''',
    "_floormod": '''
@triton.jit
def _floormod(a, b):
    # Python's modulo (sign of b) from Triton's remainder (sign of a)
    r = a % b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
''',
    "_round_bf16": '''
@triton.jit
def _round_bf16(x):
    # float32 -> nearest bfloat16 (ties to even), kept in float32: the interpreter's own
    # float32 -> bfloat16 cast truncates
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return tl.where(x != x, x, bits.to(tl.float32, bitcast=True))
''',
    "_tanh": '''
@triton.jit
def _tanh(x):
    # the interpreter has no libdevice; exp(-2|x|) <= 1 cannot overflow
    t = tl.exp(-2.0 * tl.abs(x))
    r = (1.0 - t) / (1.0 + t)
    return tl.where(x < 0, -r, r)
''',
    "_pow": '''
@triton.jit
def _pow(x, y):
    # the interpreter has no libdevice: C's pow from exp2/log2, with its signs and zeros
    ax = tl.abs(x)
    mag = tl.exp2(y * tl.log2(tl.where(ax == 0, 1.0, ax)))
    mag = tl.where(ax == 0, tl.where(y < 0, INF, 0.0), mag)
    whole = tl.floor(y) == y
    odd = whole & (tl.floor(y * 0.5) * 2.0 != y)
    r = tl.where((x < 0) & odd, -mag, mag)
    r = tl.where((x < 0) & (~whole), NAN, r)
    return tl.where(y == 0, 1.0, r)
''',
}
CONSTANTS = {"INF": 'INF = tl.constexpr(float("inf"))', "NAN": 'NAN = tl.constexpr(float("nan"))'}
