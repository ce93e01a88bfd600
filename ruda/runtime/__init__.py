"""ruda's kernel runtime: knows nothing of arrays (README.md: where each kind of kernel lives).

* :mod:`ruda.runtime.ir`          -- the kernel IR: typed expressions over strided loads and
  stores, with Map, Reduce and Scan bodies; what every renderer reads.
* :mod:`ruda.runtime.render`      -- the expression walk the WGSL and CUDA C renderers share.
* :mod:`ruda.runtime.wgsl`        -- the WGSL renderer (WebGPU compute shaders).
* :mod:`ruda.runtime.wgsl_math`   -- WGSL helper functions: f64 math, NumPy-exact integer and
  float helpers, complex arithmetic.
* :mod:`ruda.runtime.wgsl_math32` -- WGSL float32 math for adapters without shader-f64.
* :mod:`ruda.runtime.wgsl_math_pow` -- WGSL float64 pow in double-double arithmetic.
* :mod:`ruda.runtime.cuda_c`      -- the CUDA C renderer (source for NVRTC).
* :mod:`ruda.runtime.packing`     -- the metadata layout (shapes, strides, offsets, scalars)
  that lets one compiled kernel serve every shape.
* :mod:`ruda.runtime.cache`       -- the two-level cache: IR kernel -> program, then
  (device, source) -> pipeline.
* :mod:`ruda.runtime.kernels`     -- named source generators where the IR does not fit, one per
  language (tiled WGSL matmul and its tuning candidates; cuda's vectorized and nn kernels).
* :mod:`ruda.runtime.accelerator` -- the optional C accelerator module, or None.
* :mod:`ruda.runtime.env`         -- ruda's environment variables, read one way (every layer's).
* :mod:`ruda.runtime.checksum`  -- CRC-32 for stored bytes (the accelerator's, else zlib's).
* :mod:`ruda.runtime.tune`        -- the tuner: times candidates with the timer the backend gives
  it, validates them, remembers the fastest in a cache file.
"""
