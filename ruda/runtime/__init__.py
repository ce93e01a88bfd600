"""ruda's kernel runtime: knows nothing of arrays.

* :mod:`ruda.runtime.ir`       -- the kernel IR (typed expressions, strided loads/stores,
  reductions, scans); shared by every renderer.
* :mod:`ruda.runtime.packing`  -- the metadata layout (shapes, strides, offsets, scalars)
  that lets one compiled kernel serve every shape.
* :mod:`ruda.runtime.wgsl`     -- the WGSL renderer (WebGPU compute shaders).
* :mod:`ruda.runtime.cache`    -- two-level cache: IR kernel -> program, (device, source) -> pipeline.
"""
