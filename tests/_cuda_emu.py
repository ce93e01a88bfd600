"""Runs ruda's named CUDA C generators on the host: one OS thread per CUDA thread (g++, C++20).

``__syncthreads`` is a barrier of the block, warp shuffles a barrier of the 32 lanes around a
per-warp buffer, ``__shared__`` memory one copy per block (blocks run one after another), and a
thread that returns drops out of both barriers.  Loads and stores are plain host memory.  It
checks a kernel's logic (indexing, reductions, shuffles, tails) against NumPy without a GPU, not
its speed or the GPU's memory model.

``build(source, entry, params)`` compiles ``source`` with a launcher for kernel ``entry``
taking the C parameter list ``params``; ``launch(lib, grid, block, *args)`` runs it with
NumPy arrays (passed as pointers) and ctypes scalars.
"""
import ctypes
import hashlib
import pathlib
import shutil
import subprocess
import tempfile

import numpy as np

_SHIM = r"""
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>
using std::min; using std::max; using std::exp; using std::log; using std::sqrt;
using std::erf; using std::tanh; using std::expm1; using std::log1p;
struct rdim3 { unsigned x, y, z; };
static thread_local rdim3 threadIdx, blockIdx;
static rdim3 blockDim, gridDim;
struct uint4 { unsigned x, y, z, w; };
static inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(x)
#define __shared__ static
struct Warp { std::barrier<>* bar; unsigned char buf[32][8]; };
static std::barrier<>* emu_block;
static std::vector<Warp> emu_warps;
static thread_local int emu_tid;
template <class T> static inline T __ldg(const T* p) { return *p; }
template <class T> static inline T __ldcs(const T* p) { return *p; }
template <class T> static inline void __stcs(T* p, T v) { *p = v; }
static inline void __syncthreads() { emu_block->arrive_and_wait(); }
template <class T> static inline T emu_shfl(T v, int src) {
    Warp& w = emu_warps[emu_tid / 32];
    const int lane = emu_tid % 32;
    std::memcpy(w.buf[lane], &v, sizeof(T));
    w.bar->arrive_and_wait();
    T r = v;
    if (src >= 0 && src < 32) std::memcpy(&r, w.buf[src], sizeof(T));
    w.bar->arrive_and_wait();
    return r;
}
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int o) { return emu_shfl(v, (emu_tid % 32) ^ o); }
template <class T> static inline T __shfl_down_sync(unsigned, T v, int o) { return emu_shfl(v, emu_tid % 32 + o); }
static inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
static inline float __int_as_float(int u) { float f; std::memcpy(&f, &u, 4); return f; }
template <class F> static void emu_launch(rdim3 g, rdim3 b, F body) {
    gridDim = g;
    blockDim = b;
    const int n = b.x * b.y * b.z;
    for (unsigned z = 0; z < g.z; ++z) for (unsigned y = 0; y < g.y; ++y) for (unsigned x = 0; x < g.x; ++x) {
        std::barrier<> block(n);
        std::vector<std::unique_ptr<std::barrier<>>> bars;
        emu_warps.assign((n + 31) / 32, Warp{});
        for (int i = 0; i < (n + 31) / 32; ++i) {
            bars.push_back(std::make_unique<std::barrier<>>(std::min(32, n - 32 * i)));
            emu_warps[i].bar = bars[i].get();
        }
        emu_block = &block;
        std::vector<std::thread> ts;
        for (int t = 0; t < n; ++t) ts.emplace_back([=, &block, &bars] {
            emu_tid = t;
            threadIdx = {unsigned(t % b.x), unsigned(t / b.x % b.y), unsigned(t / (b.x * b.y))};
            blockIdx = {x, y, z};
            body();
            block.arrive_and_drop();
            bars[t / 32]->arrive_and_drop();
        });
        for (auto& th : ts) th.join();
    }
}
"""

_LAUNCHER = r"""
extern "C" void emu_{entry}(unsigned gx, unsigned gy, unsigned gz, unsigned bx, {params}) {{
    emu_launch({{gx, gy, gz}}, {{bx, 1, 1}}, [&] {{ {entry}({names}); }});
}}
"""


def available():
    return shutil.which("g++") is not None


def build(source, entry, params):
    """A ctypes library running kernel ``entry`` of ``source`` (``params``: its C parameters)."""
    names = ", ".join(p.replace("*", " ").split()[-1] for p in params.split(","))
    code = _SHIM + source + _LAUNCHER.format(entry=entry, params=params, names=names)
    tag = hashlib.sha256(code.encode()).hexdigest()[:16]
    out = pathlib.Path(tempfile.gettempdir()) / "ruda-cuda-emu" / f"{entry}-{tag}.so"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        src = out.with_suffix(".cpp")
        src.write_text(code)
        tmp = out.with_suffix(f".{np.random.randint(1 << 30)}.tmp")
        p = subprocess.run(["g++", "-std=c++20", "-O1", "-w", "-shared", "-fPIC", "-pthread", "-o",
                            str(tmp), str(src)], capture_output=True, text=True)
        if p.returncode:
            raise RuntimeError(f"g++ failed on {src}:\n{p.stderr[-3000:]}")
        tmp.replace(out)
    lib = ctypes.CDLL(str(out))
    return getattr(lib, f"emu_{entry}")


def launch(fn, grid, block, *args):
    """Runs the kernel over ``grid`` (up to 3 ints) with ``block`` threads (an int)."""
    g = tuple(grid) + (1,) * (3 - len(grid))
    cargs = [ctypes.c_void_p(a.ctypes.data) if isinstance(a, np.ndarray) else a for a in args]
    fn(ctypes.c_uint(g[0]), ctypes.c_uint(g[1]), ctypes.c_uint(g[2]), ctypes.c_uint(block), *cargs)
