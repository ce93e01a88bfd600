"""Rank 1 is killed (mode 'kill'), exits cleanly (mode 'exit') or hangs (mode 'hang')
before an all_reduce; the other ranks must end with an error within RUDA_DIST_TIMEOUT
instead of hanging."""
import os
import signal
import sys
import time

import ruda as xp
import ruda.distributed as dist

dist.init()
dist.barrier()
if dist.rank() == 1:
    if sys.argv[1] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if sys.argv[1] == "exit":
        os._exit(0)
    time.sleep(3600)
dist.all_reduce(xp.ones(1000))
print("all_reduce returned without rank 1", flush=True)
