"""ruda.random: Philox 4x32-10 against Random123's known answers and an independent big-int
implementation, the same bits on every device, and the distributions of the conversions."""
import numpy as np
import pytest

import ruda as xp
from conftest import to_numpy
from ruda import random as rr
from strategies import supported

# Random123's kat_vectors, "philox4x32 10": counter (4 words), key (2 words) -> output (4 words)
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]
M = 0xFFFFFFFF


def philox_reference(ctr, key):
    """Philox 4x32-10 in Python ints, written from the paper, for the layout tests."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & M, (k1 + 0xBB67AE85) & M
        p0, p1 = c0 * 0xD2511F53, c2 * 0xCD9E8D57
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0), p1 & M, ((p0 >> 32) ^ c3 ^ k1), p0 & M
    return c0, c1, c2, c3


def test_reference_matches_random123():
    for ctr, key, want in KAT:
        assert philox_reference(ctr, key) == want


@pytest.mark.parametrize("wide", [None, False], ids=["native", "32-bit-limbs"])
def test_known_answers_on_every_device(device, wide):
    for ctr, key, want in KAT:
        c = [xp.asarray([w, 0, w], dtype=xp.uint32, device=device) for w in ctr]
        out = rr.philox4x32(c, key, wide=wide)
        assert all(o.dtype == xp.uint32 and o.device == device for o in out)
        assert [o.tolist()[0] for o in out] == list(want) == [o.tolist()[2] for o in out]


def test_stream_layout_is_as_documented(device):
    seed = 0x0123456789ABCDEF
    g = rr.Generator(seed)
    g.bits(5, device=device)                 # call 0
    got = g.bits((3, 7), device=device)      # call 1: 21 words, 6 blocks
    assert got.shape == (3, 7) and got.dtype == xp.uint32
    key = (seed & M, seed >> 32)
    want = [w for j in range(6) for w in philox_reference((j, 0, 1, 0), key)][:21]
    assert got.tolist() == np.reshape(want, (3, 7)).tolist()
    big = rr.Generator(5)
    big.calls = 2**32 + 3                    # the call number's high word goes to counter word 3
    assert big.bits(4, device=device).tolist() == list(philox_reference((0, 0, 3, 1), (5, 0)))


def test_a_call_does_not_depend_on_its_size(device):
    small, large = rr.Generator(7), rr.Generator(7)
    assert small.bits(3, device=device).tolist() == large.bits(1000, device=device).tolist()[:3]
    a, b = small.random(4, device=device), large.random(50, device=device)
    np.testing.assert_array_equal(to_numpy(a), to_numpy(b)[:4])


def test_raw_words_and_integers_are_bit_identical_across_devices(device):
    for seed in (0, 1, 2**63 + 12345):
        ref, dev = rr.Generator(seed), rr.Generator(seed)
        assert dev.bits(1001, device=device).tolist() == ref.bits(1001, device="cpu").tolist()
        for dt in supported(device, "integral"):
            info = np.iinfo(dt)
            got = dev.integers(int(info.min), int(info.max) + 1, 300, dtype=dt, device=device)
            want = ref.integers(int(info.min), int(info.max) + 1, 300, dtype=dt, device="cpu")
            assert got.dtype == dt and got.tolist() == want.tolist()
        assert dev.permutation(257, device=device).tolist() == ref.permutation(257).tolist()


def test_float_conversions_use_the_documented_bits(device):
    for dt in supported(device, "real floating"):
        g, w = rr.Generator(3), rr.Generator(3)
        u = to_numpy(g.random((4, 5), dtype=dt, device=device))
        assert u.dtype == dt and u.shape == (4, 5)
        if np.dtype(dt).itemsize == 4:
            bits = to_numpy(w.bits(20)).astype(np.uint64)
            want = (bits >> 8).astype(np.float64) * 2.0**-24
        else:
            bits = to_numpy(w.bits(40)).astype(np.uint64).reshape(20, 2)
            want = ((bits[:, 0] >> 5) * 67108864.0 + (bits[:, 1] >> 6)) * 2.0**-53
        np.testing.assert_array_equal(u.reshape(-1), want.astype(dt))


def test_distributions(device):
    stats = pytest.importorskip("scipy.stats")
    g = rr.Generator(2024)
    fdt = supported(device, "real floating")[0]
    u = to_numpy(g.random(20000, dtype=fdt, device=device)).astype(np.float64)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    lo, hi = -2.5, 4.0
    v = to_numpy(g.uniform(lo, hi, 20000, device=device)).astype(np.float64)
    assert v.min() >= lo and v.max() < hi and stats.kstest(v, stats.uniform(lo, hi - lo).cdf).pvalue > 1e-3
    z = to_numpy(g.normal(1.5, 2.0, (100, 200), device=device)).astype(np.float64)
    assert z.shape == (100, 200) and np.all(np.isfinite(z))
    assert stats.kstest(z.ravel(), stats.norm(1.5, 2.0).cdf).pvalue > 1e-3
    k = to_numpy(g.integers(-3, 4, 70000, device=device))
    counts = np.bincount(k + 3, minlength=7)
    assert k.min() == -3 and k.max() == 3 and stats.chisquare(counts).pvalue > 1e-3
    b = to_numpy(g.bernoulli(0.3, 50000, device=device))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 0.01


def test_integers_wide_ranges(device):
    g = rr.Generator(11)
    if "int64" in map(str, supported(device)):
        x = to_numpy(g.integers(-2**63, 2**63, 4000, dtype=xp.int64, device=device))
        assert x.min() < -2**61 and x.max() > 2**61                  # both halves reached
        y = to_numpy(g.integers(2**40, 2**40 + 10, 4000, dtype=xp.int64, device=device))
        assert set(np.unique(y).tolist()) == set(range(2**40, 2**40 + 10))
    z = to_numpy(g.integers(0, 2**32, 4000, dtype=xp.uint32, device=device))
    assert z.dtype == np.uint32 and z.max() > 2**31 and z.min() < 2**31


def test_multiply_high_is_exact():
    rng = np.random.default_rng(0)
    for limbs, r in [(2, 7), (2, 2**32), (2, 0xFFFFFFFF), (4, 2**32 + 1), (4, 2**64), (4, 2**63 + 5)]:
        words = rng.integers(0, 2**32, (limbs, 50), dtype=np.uint64)
        x = [xp.asarray(w.astype(np.uint32)) for w in words]
        got = rr._mulhigh(x, r)
        for i in range(50):
            big = sum(int(words[j, i]) << (32 * j) for j in range(limbs))
            want = (big * r) >> (32 * limbs)
            assert sum(int(q.tolist()[i]) << (32 * j) for j, q in enumerate(got)) == want


def test_permutation_of_an_array(device):
    x = xp.reshape(xp.arange(30, device=device), (10, 3))
    p = rr.Generator(5).permutation(x)
    assert p.shape == (10, 3) and p.device == device
    assert sorted(to_numpy(p)[:, 0].tolist()) == list(range(0, 30, 3))
    np.testing.assert_array_equal(to_numpy(p)[:, 1], to_numpy(p)[:, 0] + 1)


def test_uniform_over_a_range_wider_than_the_dtype(device):
    """high - low past the dtype's largest value (both bounds finite): finite values spread
    over the whole range, not inf."""
    g = rr.Generator(5)
    for name, bound in (("float16", 60000.0), ("float32", 3e38), ("float64", 1.7e308)):
        if not device.backend.supports(np.dtype(name)):
            continue
        v = to_numpy(g.uniform(-bound, bound, 20000, dtype=getattr(xp, name), device=device))
        assert v.dtype == np.dtype(name) and np.all(np.isfinite(v))
        v = v.astype(np.float64) / bound
        assert v.min() >= -1 and v.max() <= 1 and v.min() < -0.99 and v.max() > 0.99
        assert abs(np.mean(v)) < 0.03 and abs(np.mean(v < 0) - 0.5) < 0.02


def test_float16_normal_tails(device):
    """float16 normals come from float32 uniforms: the tails reach past |z| = 4 (11-bit
    uniforms would stop at 3.9), and the spread is right."""
    if not device.backend.supports(np.dtype("float16")):
        pytest.skip("no float16 on this device")
    z = to_numpy(rr.Generator(1).normal(0.0, 1.0, 400000, dtype=xp.float16, device=device))
    assert z.dtype == np.float16
    z = z.astype(np.float64)
    assert np.abs(z).max() > 4.0 and abs(z.std() - 1) < 0.01 and abs(z.mean()) < 0.01


def test_bad_input():
    g = rr.Generator(0)
    with pytest.raises(ValueError, match=r"ruda.random.Generator: seed must be in \[0, 2\*\*64\)"):
        rr.Generator(-1)
    with pytest.raises(ValueError, match="ruda.random.integers: needs low < high"):
        g.integers(5, 5)
    with pytest.raises(TypeError, match="ruda.random.integers: dtype must be an integer dtype"):
        g.integers(5, dtype=xp.float32)
    with pytest.raises(ValueError, match=r"ruda.random.integers: \[0, 300\) does not fit uint8"):
        g.integers(300, dtype=xp.uint8)
    with pytest.raises(TypeError, match="ruda.random.random: dtype must be float16, float32 or float64"):
        g.random(3, dtype=xp.int32)
    with pytest.raises(ValueError, match="ruda.random.bernoulli: p must be in"):
        g.bernoulli(1.5)
    with pytest.raises(ValueError, match="ruda.random.normal: scale must be non-negative"):
        g.normal(0.0, -1.0)
    with pytest.raises(ValueError, match="ruda.random.normal: scale must be non-negative; got nan"):
        g.normal(0.0, float("nan"))
    with pytest.raises(TypeError, match="ruda.random.integers: low must be an integer; got float"):
        g.integers(0.5, 3)
    with pytest.raises(TypeError, match="ruda.random.Generator: seed must be an integer; got float"):
        rr.Generator(1.5)
    with pytest.raises(ValueError, match="ruda.random.permutation: x must be a non-negative int"):
        g.permutation(-3)
    with pytest.raises(TypeError, match=r"ruda.random.permutation: x must be an int or a ruda "
                                        r"array; got ndarray \(convert it with ruda.asarray\)"):
        g.permutation(np.arange(5))
    assert rr.Generator(None).seed != rr.Generator(None).seed     # fresh entropy, as NumPy


def test_bad_input_leaves_the_stream_and_names_the_argument():
    """A refused call takes no stream number; philox4x32 checks its words, key and rounds;
    float16 parameters past its range and a permutation asked for another device raise."""
    g = rr.Generator(0)
    with pytest.raises(ValueError, match="more than one stream's 2"):
        g.bits((2**35,))
    assert g.calls == 0
    z32, z64 = xp.zeros(1, dtype=xp.uint32), xp.zeros(1, dtype=xp.int64)
    with pytest.raises(TypeError, match=r"ruda.random.philox4x32: counter must be four uint32"):
        rr.philox4x32([z64] * 4, (0, 0))
    for key in [(-1, 0), (2**32, 0)]:
        with pytest.raises(ValueError, match=r"ruda.random.philox4x32: key must be two ints"):
            rr.philox4x32([z32] * 4, key)
    with pytest.raises(ValueError, match=r"ruda.random.philox4x32: rounds must be at least 1"):
        rr.philox4x32([z32] * 4, (0, 0), rounds=0)
    with pytest.raises(ValueError, match=r"ruda.random.uniform: high=100000.0 is out of float16"):
        g.uniform(0, 1e5, (4,), dtype=xp.float16)
    with pytest.raises(ValueError, match=r"ruda.random.normal: loc=100000.0 is out of float16"):
        g.normal(1e5, 1.0, (4,), dtype=xp.float16)
    assert g.calls == 0
    if "wgpu" in [str(d) for d in xp.__array_namespace_info__().devices()]:
        with pytest.raises(ValueError, match=r"ruda.random.permutation: device 'wgpu' differs"):
            g.permutation(xp.arange(3), device="wgpu")
