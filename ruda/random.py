"""ruda.random: counter-based random numbers, the same bits on every device.

The generator is Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
the Random123 family that cuRAND and JAX use). It needs only 32-bit integer arithmetic, so it runs
on every adapter, and its words are bit-identical on cpu, cuda and wgpu.

Streams are split per call: call number ``c`` (0, 1, ...) of ``Generator(seed)`` draws its
words from the counters ``(j, 0, c mod 2**32, c >> 32)``, ``j = 0, 1, ...``, under the key
``(seed mod 2**32, seed >> 32)``; word ``i`` of the call is word ``i % 4`` of block ``i // 4``.
A call's values depend only on the seed, the call's number and the element's index, never on
how the work is split into launches. ``Generator.bits`` returns these raw words and
``philox4x32`` is the block function itself.

Conversions: ``random`` takes the top 24 bits of a word for float32 (``(w >> 8) * 2**-24``) and
53 bits of two words for float64 (NumPy's rule), and the top 11 bits for float16, so all lie in
[0, 1); ``normal`` is Box-Muller on two uniforms (float32 ones for float16); ``integers`` maps 64 random bits per value (128 for ranges above 2**32) to the
range by a multiply-high, so no value is more likely than another by more than range / 2**64
relative; ``permutation`` sorts 64-bit random keys.
"""
import math as _math
import operator as _operator
import os as _os

from ruda import (_creation, _data_type, _dtypes, _elementwise as _ew, _hints, _manipulation,
                  _sorting)
from ruda import _validation as _v
from ruda._array import Array as _Array

__all__ = ["Generator", "default_rng", "philox4x32"]

_M0, _M1 = 0xD2511F53, 0xCD9E8D57      # Philox 4x32 multipliers
_W0, _W1 = 0x9E3779B9, 0xBB67AE85      # Weyl key increments
_MASK = 0xFFFFFFFF
_U32 = _dtypes.public(_dtypes.uint32)
_U64 = _dtypes.public(_dtypes.uint64)


def _wide(x):
    """Does x's device hold uint64 (then a 64-bit product gives the high word in one step)?"""
    return _dtypes.uint64 in x._device.backend._dtype_set


def _mulhilo(x, m, wide):
    """High and low 32-bit words of uint32 array ``x`` times the constant ``m`` < 2**32
    (``wide``: through a uint64 product, else in 16-bit limbs)."""
    lo = x * m
    if wide:
        return _data_type.astype(_data_type.astype(x, _U64) * m >> 32, _U32), lo
    mh, ml = m >> 16, m & 0xFFFF           # 16-bit limbs: every partial product fits 32 bits
    xh, xl = x >> 16, x & 0xFFFF
    t = xl * ml
    u = xh * ml + (t >> 16)
    w = (u & 0xFFFF) + xl * mh
    return xh * mh + (u >> 16) + (w >> 16), lo


def philox4x32(counter, key, rounds=10, *, wide=None):
    """Philox 4x32-``rounds`` of the counter words ``counter`` (four uint32 arrays of one shape)
    under ``key`` (two Python ints < 2**32): the four output word arrays.

    ``wide=False`` forces the 32-bit-only arithmetic that devices without uint64 use (the
    results are the same bits either way)."""
    if len(counter) != 4 or any(c.__class__ is not _Array or c.dtype != _U32 for c in counter):
        raise TypeError(f"ruda.random.philox4x32: counter must be four uint32 arrays; got "
                        f"{[getattr(c, 'dtype', type(c).__name__) for c in counter]}")
    if len(key) != 2 or not all(0 <= _operator.index(k) <= _MASK for k in key):
        raise ValueError(f"ruda.random.philox4x32: key must be two ints in [0, 2**32); got {key}")
    if _operator.index(rounds) < 1:
        raise ValueError(f"ruda.random.philox4x32: rounds must be at least 1; got {rounds}")
    c0, c1, c2, c3 = counter
    wide = _wide(c0) if wide is None else wide
    k0, k1 = (_operator.index(k) for k in key)
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + _W0) & _MASK, (k1 + _W1) & _MASK
        hi0, lo0 = _mulhilo(c0, _M0, wide)
        hi1, lo1 = _mulhilo(c2, _M1, wide)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def _carry(s, a):
    """1 where the uint32 sum ``s = a + b`` wrapped, else 0 (uint32)."""
    return _data_type.astype(s < a, _U32)


def _mulhigh(x, r):
    """floor(X * r / 2**(32 m)) for the m-limb random number X (uint32 arrays, least significant
    first) and the Python int 0 < r < 2**(32 m): the top limbs of the product, exactly."""
    m, wide = len(x), _wide(x[0])
    rl = [(r >> (32 * j)) & _MASK for j in range((r.bit_length() + 31) // 32)]
    p = [None] * (m + len(rl))          # product limbs; None is zero
    for j, rj in enumerate(rl):
        carry = None
        for i in range(m):
            hi, lo = _mulhilo(x[i], rj, wide)
            for add in (p[i + j], carry):   # lo + p + carry: each add may wrap once
                if add is not None:
                    s = lo + add
                    hi = hi + _carry(s, lo)
                    lo = s
            p[i + j], carry = lo, hi
        p[m + j] = carry
    top = p[m:m + max(1, ((r - 1).bit_length() + 31) // 32)]   # the result < r: no more limbs
    return [q if q is not None else _creation.zeros_like(x[0]) for q in top]


class Generator:
    """``Generator(seed)``: Philox 4x32-10 streams, one per call (see the module's doc).

    Every method takes ``device=`` (default: the default device) and gives the same values on
    every device for integer results; floating results follow from the same words.
    """

    def __init__(self, seed=0):
        if seed is None:          # fresh entropy, as NumPy's default_rng(None)
            seed = int.from_bytes(_os.urandom(8), "little")
        seed = _v.integer("random.Generator", "seed", seed)
        if not 0 <= seed < 2**64:
            raise ValueError(f"ruda.random.Generator: seed must be in [0, 2**64); got {seed}")
        self.seed = seed
        self.calls = 0        # the number of the next call's stream

    def __repr__(self):
        return f"ruda.random.Generator(seed={self.seed}, calls={self.calls})"

    def bits(self, shape=(), *, device=None):
        """The raw uint32 words of the next call's stream, in C order."""
        shape = _v.shape("random.bits", shape)
        dev = _v.device_or_default(device)
        return _manipulation.reshape(self._words(_math.prod(shape), dev), shape)

    def _words(self, n, dev):
        blocks = -(-n // 4)
        if blocks >= 2**32:     # before the stream is taken: a refused call leaves none used
            raise ValueError(f"ruda.random: {n} words in one call is more than one stream's 2**34")
        c = self.calls
        self.calls += 1
        j = _creation.arange(blocks, dtype=_U32, device=dev)
        ctr = [j] + [_creation.full_like(j, w) for w in (0, c & _MASK, c >> 32)]
        out = philox4x32(ctr, (self.seed & _MASK, self.seed >> 32))
        return _manipulation.reshape(_manipulation.stack(out, axis=1), (-1,))[:n]

    def _float_dtype(self, fn, dtype, dev):
        if dtype is None:
            return _v.default_dtype(dev, "real floating")
        dt = _v.dtype(f"random.{fn}", dtype, dev)
        if dt.kind != "f":   # bfloat16 (NumPy kind 'V') is real floating but not drawn here
            extra = "; draw float32 and cast with ruda.astype" if _dtypes.name(dt) == "bfloat16" else ""
            raise TypeError(f"ruda.random.{fn}: dtype must be float16, float32 or float64; got "
                            f"{_dtypes.name(dt)}{extra}")
        return dt

    def _uniform01(self, n, dt, dev):
        """n floats in [0, 1) of NumPy dtype dt, from one call's words."""
        if dt.itemsize == 2:                 # float16: 11 bits, exact in its significand
            return _data_type.astype(self._words(n, dev) >> 21, dt) * 2.0**-11
        if dt.itemsize <= 4:
            w = self._words(n, dev)
            return _data_type.astype(w >> 8, dt) * 2.0**-24
        w = _manipulation.reshape(self._words(2 * n, dev), (n, 2))
        a = _data_type.astype(w[:, 0] >> 5, dt)
        b = _data_type.astype(w[:, 1] >> 6, dt)
        return (a * 67108864.0 + b) * 2.0**-53

    def random(self, shape=(), *, dtype=None, device=None):
        """Uniform floats in [0, 1)."""
        shape = _v.shape("random.random", shape)
        dev = _v.device_or_default(device)
        dt = self._float_dtype("random", dtype, dev)
        return _manipulation.reshape(self._uniform01(_math.prod(shape), dt, dev), shape)

    def uniform(self, low=0.0, high=1.0, shape=(), *, dtype=None, device=None):
        """Uniform floats in [low, high) (high itself may come from rounding, as in NumPy)."""
        low, high = _real("uniform", "low", low), _real("uniform", "high", high)
        dt = self._float_dtype("uniform", dtype, _v.device_or_default(device))
        _fits("uniform", dt, low=low, high=high)
        u = self.random(shape, dtype=dtype, device=device)
        if abs(high - low) <= _dtypes.finfo_object(u._dtype).max:
            return low + (high - low) * u
        h = high / 2 - low / 2          # high - low overflows the dtype; half of it does not
        hu = h * u
        return (low + hu) + hu

    def normal(self, loc=0.0, scale=1.0, shape=(), *, dtype=None, device=None):
        """Normal floats with mean ``loc`` and standard deviation ``scale`` (Box-Muller)."""
        loc, scale = _real("normal", "loc", loc), _real("normal", "scale", scale)
        if not scale >= 0:
            raise ValueError(f"ruda.random.normal: scale must be non-negative; got {scale}")
        shape = _v.shape("random.normal", shape)
        dev = _v.device_or_default(device)
        dt = self._float_dtype("normal", dtype, dev)
        _fits("normal", dt, loc=loc, scale=scale)
        n = _math.prod(shape)
        # float16 from float32 uniforms: its own 11-bit ones would end the tails at |z| = 3.9
        wdt = _dtypes.float32 if dt.itemsize == 2 else dt
        u = _manipulation.reshape(self._uniform01(2 * n, wdt, dev), (n, 2))
        r = _ew.sqrt(-2.0 * _ew.log1p(-u[:, 0]))          # 1 - u in (0, 1]: log is finite
        z = r * _ew.cos((2 * _math.pi) * u[:, 1])
        z = loc + scale * z
        return _manipulation.reshape(z if wdt is dt else _data_type.astype(z, dt), shape)

    def integers(self, low, high=None, shape=(), *, dtype=None, device=None):
        """Integers in [low, high) (``integers(high)``: [0, high)); dtype: the default integer."""
        if high is None:
            low, high = 0, low
        low = _v.integer("random.integers", "low", low)
        high = _v.integer("random.integers", "high", high)
        if high <= low:
            raise ValueError(f"ruda.random.integers: needs low < high; got low={low}, high={high}")
        shape = _v.shape("random.integers", shape)
        dev = _v.device_or_default(device)
        dt = _v.default_dtype(dev, "integral") if dtype is None else _v.dtype("random.integers", dtype, dev)
        if dt.kind not in "iu":
            raise TypeError(f"ruda.random.integers: dtype must be an integer dtype; got {_dtypes.name(dt)}")
        info = _dtypes.iinfo_object(dt)
        if low < info.min or high - 1 > info.max:
            raise ValueError(f"ruda.random.integers: [{low}, {high}) does not fit {_dtypes.name(dt)}")
        n, r = _math.prod(shape), high - low
        limbs = 2 if r <= 2**32 else 4                 # 32 more random bits than the range
        w = _manipulation.reshape(self._words(limbs * n, dev), (n, limbs))
        q = _mulhigh([w[:, i] for i in range(limbs)], r)
        if len(q) == 1:
            off = q[0]
        else:                                          # r > 2**32: a 64-bit dtype holds it
            off = _data_type.astype(q[0], _U64) | (_data_type.astype(q[1], _U64) << 32)
        return _manipulation.reshape(_plus(off, low, dt), shape)

    def permutation(self, x, *, device=None):
        """A random permutation of ``arange(x)`` for an int, else of array ``x`` along axis 0."""
        if x.__class__ is _Array:
            if x.ndim == 0:
                raise ValueError("ruda.random.permutation: x must have at least one dimension")
            if device is not None and _v.device_or_default(device) is not x.device:
                raise ValueError(f"ruda.random.permutation: device {device!r} differs from x's "
                                 f"device '{x.device}'; move x with x.to_device first")
            idx = self.permutation(x.shape[0], device=x.device)
            return x[idx]
        if hasattr(x, "__array_namespace__") or hasattr(x, "__array__"):
            raise TypeError(f"ruda.random.permutation: x must be an int or a ruda array; got "
                            f"{type(x).__name__} (convert it with ruda.asarray)")
        n = _v.integer("random.permutation", "x", x)
        if n < 0:
            raise ValueError(f"ruda.random.permutation: x must be a non-negative int; got {n}")
        dev = _v.device_or_default(device)
        w = _manipulation.reshape(self._words(2 * n, dev), (n, 2))
        idx = _sorting.argsort(w[:, 1], stable=True)             # 64-bit keys: low word first,
        return idx[_sorting.argsort(w[:, 0][idx], stable=True)]  # then the high word, stably

    def bernoulli(self, p=0.5, shape=(), *, device=None):
        """Booleans that are True with probability ``p``."""
        p = _real("bernoulli", "p", p)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"ruda.random.bernoulli: p must be in [0, 1]; got {p}")
        return self.random(shape, device=device) < p


def _plus(off, low, dt):
    """``low + off`` as dtype dt, for unsigned offsets whose sum lies in dt's range: the sum is
    taken modulo 2**64 (or 2**32 on devices without 64-bit integers) and reinterpreted."""
    if _wide(off):
        w = _dtypes.public(_dtypes.uint64 if dt.kind == "u" else _dtypes.int64)
        return _data_type.astype(_data_type.astype(off, w) + low, dt)
    s = off + (low & _MASK)                              # uint32, wraps
    if dt.kind == "i":
        s = _data_type.astype(s, _dtypes.public(_dtypes.int32))   # same bits, the true value
    return _data_type.astype(s, dt)


def default_rng(seed=0):
    """``Generator(seed)``, spelled as in NumPy."""
    return Generator(seed)


def _fits(fn, dt, **values):
    """ValueError for finite parameters that the dtype cannot hold (float16's 65504)."""
    top = _dtypes.finfo_object(dt).max
    for arg, value in values.items():
        if _math.isfinite(value) and abs(value) > top:
            raise ValueError(f"ruda.random.{fn}: {arg}={value} is out of {_dtypes.name(dt)}'s "
                             f"range (+-{top})")


def _real(fn, arg, value):
    value = _v.python_scalar(value)
    if not _v.is_scalar(value) or isinstance(value, complex | bool):
        raise TypeError(f"ruda.random.{fn}: {arg} must be a real number; got {value!r}")
    return float(value)


# a NumPy keyword (normal(size=3)) gets the array API's spelling in its TypeError
_hints.install(globals(), ("philox4x32", "default_rng"))
_hints.install_methods(Generator, ("bits", "random", "uniform", "normal", "integers",
                                   "permutation", "bernoulli"))
# NumPy's module-level calls (ruda.random.rand) and Generator methods: what to write instead
__getattr__ = _hints.module_getattr(__name__)
_hints.install_missing(Generator, {
    "standard_normal": "g.normal(shape=shape)",
    "choice": "g.integers(0, n, shape) (with replacement) or g.permutation(n)[:k] (without)",
    "shuffle": "g.permutation(x) returns a shuffled copy (arrays are not shuffled in place)",
    "randint": "g.integers(low, high, shape)",
})
