"""Two ranks: handles of non-blocking calls dropped without a wait (a collective, a 2 MiB send)
leave MPI's buffers alive until it is done with them; later calls give the right results."""
import gc

import numpy as np

import ruda as xp
import ruda.distributed as dist

dist.init()
R = dist.rank()
for _ in range(5):
    dist.all_reduce(xp.full((1 << 16,), float(R)), async_op=True)     # dropped
    gc.collect()
    y = dist.all_reduce(xp.full((1 << 16,), float(R)))
    assert float(y[0]) == sum(range(dist.world_size())), y[0]
if R == 0:
    dist.send(xp.arange(1 << 18, dtype=xp.float64), 1, async_op=True)   # dropped
    gc.collect()
    dist.send(xp.asarray([5.0]), 1)
else:
    a, b = dist.recv(0), dist.recv(0)
    assert np.asarray(a)[-1] == (1 << 18) - 1 and float(b[0]) == 5.0
print("DROPPED OK", R, flush=True)
dist.barrier()
