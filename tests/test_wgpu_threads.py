"""One wgpu device used from several threads at once, as a CuPy or PyTorch device may be: every
backend entry point runs whole under the device's lock, so threads take turns and each gets its
own results (sharing the queue's open encoder, the pool and the staging buffers, threads got
each other's results, "Encoding must not have ended" errors, or a Rust panic on a still-mapped
buffer).  float32 data and int32 indices, so the browser-class profile runs it too."""
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import ruda as xp
import ruda.nn as nn
from strategies import assert_result, host64, rand

THREADS, ITERATIONS = 4, 100
F32 = np.dtype(np.float32)


def _softmax(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _work(dev, seed, start):
    """Mixed ops on fresh random inputs, each result checked against NumPy in float64."""
    rng = np.random.default_rng(seed)
    start.wait()                                   # every thread records at once
    for _ in range(ITERATIONS):
        m, k, n = (int(v) for v in rng.integers(1, 9, size=3))
        a, b = rand(rng, (m, k), F32), rand(rng, (k, n), F32)
        a64, b64 = host64(a), host64(b)
        x, y = xp.asarray(a, device=dev), xp.asarray(b, device=dev)
        assert_result(x * 2.5 - 1, a64 * 2.5 - 1, F32)                     # elementwise
        assert_result(xp.sum(x, axis=1), a64.sum(axis=1), F32, atol=1e-5)  # reductions
        assert float(xp.max(x)) == a.max()
        assert_result(x @ y, a64 @ b64, F32, atol=2e-4)                    # matmul
        z = xp.zeros((m + 2, k), dtype=xp.float32, device=dev)             # setitem
        z[1:m + 1, :] = x
        z[0] = 7.0
        want = np.zeros((m + 2, k))
        want[1:m + 1], want[0] = a64, 7.0
        assert_result(z, want, F32, rtol=0, atol=0)
        idx = rng.integers(0, m, size=5).astype(np.int32)                  # getitem
        assert_result(x[xp.asarray(idx, device=dev)], a64[idx], F32, rtol=0, atol=0)
        assert_result(x[x > 0], a64[a > 0], F32, rtol=0, atol=0)
        back = x.to_device("cpu").to_device(dev)                           # round trip
        assert_result(back, a64, F32, rtol=0, atol=0)
        assert_result(nn.softmax(x, axis=-1), _softmax(a64), F32, loose=True)


def test_one_device_from_several_threads(wgpu_device):
    start = threading.Barrier(THREADS)
    with ThreadPoolExecutor(THREADS) as ex:
        jobs = [ex.submit(_work, wgpu_device, seed, start) for seed in range(THREADS)]
        for j in jobs:
            j.result()                                 # a thread's failure, raised here
