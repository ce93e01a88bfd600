"""Rank 1 goes wrong in the way argv[1] names while rank 0 waits for it; the launcher must
end the job at once (RUDA_DIST_TIMEOUT is left long) and name rank 1.

    raise-before-init    rank 1 raises before importing ruda.distributed, rank 0 in init()
    exit-before-init     rank 1's script ends normally without init(), rank 0 in init()
    osexit-before-init   rank 1 vanishes (os._exit) without init(), rank 0 in init()
    raise-after-init     rank 1 raises after init(), rank 0 is in all_reduce
    status-after-init    rank 1 calls sys.exit(3) after init(), rank 0 is in a barrier
    end-after-init       rank 1's script ends after init(), rank 0 is in a barrier
    no-init              no rank calls init(): a normal job that must end with status 0
"""
import os
import sys

mode = sys.argv[1]
rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))


def misstep(stage):
    """Rank 1 goes wrong here when the mode is '<what>-<stage>'."""
    if rank != 1 or not mode.endswith(stage):
        return
    what = mode[:-len(stage) - 1]
    if what == "raise":
        raise ValueError(f"rank one broke {stage.replace('-', ' ')}")
    if what == "osexit":
        os._exit(0)
    sys.exit(3 if what == "status" else 0)


misstep("before-init")
if mode == "no-init":
    # one write of the whole line: with PYTHONUNBUFFERED, print writes the text and its newline
    # apart, and mpiexec may interleave the two ranks' pieces
    os.write(1, f"rank {rank} ran without ruda.distributed\n".encode())
    sys.exit(0)

import ruda as xp  # noqa: E402
import ruda.distributed as dist  # noqa: E402

dist.init()
misstep("after-init")
if mode == "raise-after-init":
    dist.all_reduce(xp.ones(4))
else:
    dist.barrier()
print(f"rank {dist.rank()} got past the wait", flush=True)
