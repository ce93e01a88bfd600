"""Point to point: ``send(x, dst)`` and ``recv(src)``.

A small int64 header (dtype, device kind, shape) goes over MPI first, so
``recv`` needs no shape; the payload follows on the array's engine.  cuda
payloads use NCCL only once the communicator exists (``init(backend="nccl")``
or an earlier cuda collective), since creating it takes every rank.
"""
import numpy as np

import ruda
from ruda.distributed import _check, _route, _state
from ruda.distributed._collectives import _finish
from ruda.distributed._pending import Pending

_TAG_HEADER, _TAG_DATA = 11, 12


def _engine(ctx, fn, dev):
    if dev.kind == "cuda" and ctx.nccl is None and ctx.backend != "mpi" and not _route.cuda_aware(ctx):
        raise ValueError(f"ruda.distributed.{fn}: arrays on '{dev}' travel through NCCL, whose "
                         f"communicator does not exist yet: call init(backend='nccl') first")
    return _route.engine_for(ctx, fn, dev)


def send(x, dst, *, async_op=False):
    """Send ``x`` to rank ``dst`` (which calls ``recv``)."""
    ctx = _state.get("send")
    _check.array("send", x)
    d = _check.rank_arg("send", "dst", dst, ctx.size)
    eng = _engine(ctx, "send", x.device)
    header = _check.record("send", root=ctx.rank, x=x)
    hreq = ctx.comm.Isend(header, d, _TAG_HEADER)
    a = _route.native(x)
    p = eng.send(a, d, _TAG_DATA, async_op)

    def post(_, keep=(a, header)):
        ctx.wd.arm("send (header)")
        try:
            hreq.Wait()
        finally:
            ctx.wd.disarm()
    return _finish(p, post, async_op)


def recv(src, *, device=None, async_op=False):
    """Receive the array that rank ``src`` sends.  It lands on ``device`` if given (of the
    sender's device kind: host kinds cpu/wgpu, or cuda), else on this rank's device of the
    sender's device kind."""
    ctx = _state.get("recv")
    s = _check.rank_arg("recv", "src", src, ctx.size)
    dev = None if device is None else ruda.device(device)
    header = np.empty(_check.WIDTH, np.int64)
    me = {"h": ctx.comm.Irecv(header, s, _TAG_HEADER), "header": header, "dev": dev, "src": s}
    queue = ctx.recv_queues.setdefault(s, [])
    queue.append(me)

    def post():
        # MPI pairs messages in the order receives are posted: the payloads of this source's
        # earlier receives (waited on later, or dropped) are posted first, each once its
        # header is in, so every receive gets the payload its header announced
        while "p" not in me:
            _post_payload(ctx, queue.pop(0))
        return me["p"]

    def wait():
        me["h"].Wait()
        post().wait()

    def test():
        ahead = []
        for r in queue:         # by identity: the entries hold arrays
            ahead.append(r)
            if r is me:
                break
        return all(r["h"].Test() for r in ahead) and post().test()

    p = Pending(ctx.wd, "recv", wait=wait, test=test, finish=lambda: me["p"].wait())
    return _finish(p, lambda a: _route.wrap(a, me["d"]), async_op)


def _post_payload(ctx, r):
    """Post receive ``r``'s payload (its header first).  A dropped handle's buffer stays
    referenced through the Pending that ``_finish`` keeps in flight."""
    r["h"].Wait()
    d = _target(ctx, r["header"], r["dev"])
    eng = _engine(ctx, "recv", d)
    out = eng.empty(_check.shape_of(r["header"]), _check.dtype_of(r["header"]), _route.like(d))
    r["d"], r["p"] = d, eng.recv(out, r["src"], _TAG_DATA, True)


def _target(ctx, header, dev):
    kind = _check.kind_of(header)
    if dev is None:
        return _route.local_device(ctx, kind)
    if (dev.kind == "cuda") != (kind == "cuda"):
        raise ValueError(f"ruda.distributed.recv: rank {int(header[_check.F_ROOT])} sent an "
                         f"array from a '{kind}' device; device={str(dev)!r} cannot receive it "
                         f"(pass a device of that kind, or None)")
    return dev
