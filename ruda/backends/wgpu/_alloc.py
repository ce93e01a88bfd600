"""Device memory of one wgpu device: pooled storage buffers by size class, and uploads.

Buffers come from a pool keyed by size class (powers of two up to 1 MiB, then MiB multiples),
4-byte aligned and holding whole vec4s.  A freed buffer goes to ``pending`` and returns to the
pool only at the next submit (``recycle``), so work already recorded never sees it handed out and
overwritten by a queued upload; a later dispatch may take it at once (dispatches are ordered).
"""
import numpy as np


def size_class(n):
    n = max(n, 16)
    if n <= 1 << 20:
        return 1 << (n - 1).bit_length()
    return -(-n // (1 << 20)) << 20


class Storage:
    """A pooled wgpu buffer; returned to the pool when the last array using it goes."""

    __slots__ = ("buffer", "nbytes", "mem", "host", "__weakref__")

    def __init__(self, mem, buffer, nbytes):
        self.buffer = buffer
        self.nbytes = nbytes
        self.mem = mem                      # the Allocator whose pending list takes it back
        self.host = None                    # (queue.writes when read, its bytes): read_through

    def __del__(self):
        try:
            self.mem.pending.append(self.buffer)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class Allocator:
    """Storage buffers of one device.  ``on_full()`` (the queue's) submits recorded work and
    drops what holds buffers, so a failed ``create_buffer`` can be retried on an emptied pool."""

    def __init__(self, device, queue, max_binding, usage, on_full, on_upload):
        self.device = device
        self.queue = queue              # the GPUQueue (write_buffer)
        self.max_binding = max_binding
        self.usage = usage
        self.on_full = on_full
        self.on_upload = on_upload      # called once per upload (stats, plans being recorded)
        self.pool = {}
        self.live = {}
        self.pending = []
        self.sizes = {}

    def _size_for(self, nbytes):
        if nbytes > self.max_binding:
            raise MemoryError(f"ruda wgpu: an array of {nbytes} bytes exceeds this adapter's "
                              f"max-storage-buffer-binding-size ({self.max_binding} bytes)")
        size = max(min(size_class(nbytes), max(self.max_binding, 16)), -(-nbytes // 4) * 4, 16)
        if len(self.sizes) >= 4096:
            self.sizes.clear()
        self.sizes[nbytes] = size
        return size

    def alloc(self, nbytes, upload=False):
        size = self.sizes.get(nbytes) or self._size_for(nbytes)
        # A buffer freed since the last submit may still be read by recorded dispatches: a later
        # dispatch may write it (WebGPU orders dispatches), a queued upload may not (write_buffer
        # runs before the whole command buffer), so uploads take only from the submitted pool.
        hot = None if upload else self._hot(size)
        free = self.pool.get(size)
        if hot is not None:
            buf = hot
        elif free:
            buf = free.pop()
        else:
            try:
                buf = self.device.create_buffer(size=size, usage=self.usage)
            except Exception:
                self.on_full()
                for bufs in self.pool.values():
                    for b in bufs:
                        self.live.pop(id(b), None)
                self.pool.clear()
                buf = self.device.create_buffer(size=size, usage=self.usage)
            # every buffer stays reachable from here, so the cyclic GC never finalizes (releases)
            # a GPUBuffer that a dying Storage is about to return to the pool
            self.live[id(buf)] = buf
        return Storage(self, buf, nbytes)

    def recycle(self):
        """Return the buffers freed since the last submit to the pool (called at a submit)."""
        for b in self.pending:
            self.pool.setdefault(b.size, []).append(b)
        self.pending.clear()

    def _hot(self, size):
        pf = self.pending
        if not pf:
            return None
        if pf[-1].size == size:
            return pf.pop()
        for i in range(len(pf) - 2, max(-1, len(pf) - 65), -1):
            if pf[i].size == size:
                return pf.pop(i)
        return None

    def upload(self, host):
        """A new Storage holding the bytes of C-contiguous ``host``."""
        st = self.alloc(host.nbytes, upload=True)
        if host.nbytes:
            data = host if host.nbytes % 4 == 0 else np.concatenate(
                [host.reshape(-1).view(np.uint8), np.zeros(4 - host.nbytes % 4, np.uint8)])
            self.queue.write_buffer(st.buffer, 0, data)
        self.on_upload()
        return st
