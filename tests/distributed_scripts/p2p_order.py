"""Two ranks: receives pair with their sender's messages in posting order, whichever is waited
on first, with one dropped handle in between.  Rank 1 prints the payloads it got."""
import numpy as np

import ruda as xp
import ruda.distributed as dist

dist.init()
if dist.rank() == 0:
    for x in [xp.asarray([1, 1, 1]), xp.asarray([2, 2, 2]), xp.asarray([7, 7, 7], dtype=xp.int32),
              xp.arange(5.0), xp.asarray([1.0]), xp.asarray([2.0])]:
        dist.send(x, 1)
else:
    w1, w2 = dist.recv(0, async_op=True), dist.recv(0, async_op=True)
    second, first = w2.wait(), w1.wait()
    w3 = dist.recv(0, async_op=True)
    fourth = dist.recv(0)                    # blocking, after an async one not yet waited on
    third = w3.wait()
    dist.recv(0, async_op=True)              # dropped without a wait
    sixth = dist.recv(0)
    got = [first, second, third, fourth, sixth]
    print("GOT", [(str(a.dtype), np.asarray(a).tolist()) for a in got], flush=True)
dist.barrier()
