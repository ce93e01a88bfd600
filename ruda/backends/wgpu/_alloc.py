"""Device memory of one wgpu device: pooled storage buffers by size class, and uploads.

Buffers come from a pool keyed by size class (powers of two up to 1 MiB, then MiB multiples),
4-byte aligned and holding whole vec4s.  A freed buffer goes to ``pending`` and returns to the
pool only at the next submit (``recycle``), so work already recorded never sees it handed out and
overwritten by a queued upload; a later dispatch may take it at once (dispatches are ordered).

The pool caches at most POOL_KEEP bytes, or as many as the buffers in use if more (``recycle``):
a loop takes back what it freed, so its steady state stays well within that, while one-off sizes
(one array at a time of 1, 4, 7, ... MiB) would otherwise each keep a buffer for good.  Past it,
the classes pooled longest are released first.  A request above 1 MiB that finds its class empty
takes a pooled buffer up to 1/LARGER_WASTE larger before making one.  ``trim(0)`` releases the
whole pool (the queue's ``empty_cache``).
"""
import numpy as np

# bytes the pool may cache even when less is in use: enough for a loop's temporaries to come
# back from the pool (no buffer made, no bind group missed), small beside a GPU's memory
POOL_KEEP = 256 << 20
LARGER_WASTE = 4        # a pooled buffer at most 1/4 larger than asked serves a request above 1 MiB


def size_class(n):
    n = max(n, 16)
    if n <= 1 << 20:
        return 1 << (n - 1).bit_length()
    return -(-n // (1 << 20)) << 20


class Batch:
    """The work recorded between two submits; a launch marks its outputs' ``Storage.host`` with
    it.  ``lost``: why its submit failed (the work was dropped), else None."""

    __slots__ = ("lost",)

    def __init__(self):
        self.lost = None

    def check(self, what):
        """Raise if this batch's work was dropped: ``what`` (an array, an operand) has no value."""
        if self.lost is not None:
            raise RuntimeError(f"ruda wgpu: {what}'s value was lost: the work computing it was "
                               f"dropped when its submit failed ({self.lost}); compute it again")


class Storage:
    """A pooled wgpu buffer; returned to the pool when the last array using it goes."""

    __slots__ = ("buffer", "nbytes", "mem", "host", "__weakref__")

    def __init__(self, mem, buffer, nbytes):
        self.buffer = buffer
        self.nbytes = nbytes
        self.mem = mem                      # the Allocator whose pending list takes it back
        # (queue.writes when read, its bytes): read_through's host copy; or the Batch of the
        # last launch that wrote it
        self.host = None

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
        self.pool = {}                  # size -> free buffers; a class emptied is removed, so the
        self.live = {}                  # order of the keys is the order the classes filled in
        self.pending = []
        self.sizes = {}
        self.cached = 0                 # bytes in the pool
        self.held = 0                   # bytes of every buffer in ``live``

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
        buf = None if upload else self._hot(size)
        if buf is None:
            if self.pool.get(size):
                buf = self._pooled(size)
            else:
                buf = (size > 1 << 20 and self._larger(size)) or self._create(size)
        return Storage(self, buf, nbytes)

    def _pooled(self, size):
        """A buffer taken from the pool's non-empty class ``size`` (emptied: removed)."""
        free = self.pool[size]
        buf = free.pop()
        if not free:
            del self.pool[size]
        self.cached -= size
        return buf

    def _larger(self, size):
        """A pooled buffer of at most 1/LARGER_WASTE more than ``size`` bytes (the smallest), or
        None."""
        top = size + size // LARGER_WASTE
        fit = min((k for k, free in self.pool.items() if size < k <= top and free), default=None)
        return None if fit is None else self._pooled(fit)

    def _create(self, size):
        try:
            buf = self.device.create_buffer(size=size, usage=self.usage)
        except Exception:
            self.on_full()
            self.trim(0)
            buf = self.device.create_buffer(size=size, usage=self.usage)
        # every buffer stays reachable from here, so the cyclic GC never finalizes (releases)
        # a GPUBuffer that a dying Storage is about to return to the pool
        self.live[id(buf)] = buf
        self.held += size
        return buf

    def recycle(self):
        """Return the buffers freed since the last submit to the pool (called at a submit), then
        hold the pool to its cap (see the module's docstring)."""
        # the list is taken first: interrupted halfway (a KeyboardInterrupt), no buffer is
        # pooled twice (two arrays would share it); the rest stay out of the pool
        pend, self.pending = self.pending, []
        if not pend:
            return
        pool = self.pool
        for b in pend:
            pool.setdefault(b.size, []).append(b)
            self.cached += b.size
        used = self.held - self.cached
        if self.cached > POOL_KEEP and self.cached > used:
            self.trim(max(POOL_KEEP, used))

    def trim(self, keep):
        """Release pooled buffers, the classes pooled longest first, until at most ``keep``
        bytes stay cached.  A buffer is destroyed, so its memory goes even while a cached bind
        group names it (no array can bind it again); work already submitted keeps it until done."""
        pool = self.pool
        while self.cached > keep and pool:
            size = next(iter(pool))
            free = pool[size]
            if free:
                buf = free.pop(0)
                self.cached -= size
                self.held -= size
                self.live.pop(id(buf), None)
                buf.destroy()
            if not free:
                del pool[size]
        if not pool:
            self.cached = 0             # exact again (an interrupted recycle may have left it off)

    def _hot(self, size):
        # Storage.__del__ appends without the device's lock (on any thread): indices from one
        # length read stay valid under appends, so the buffer tested is the one popped
        pf = self.pending
        n = len(pf)
        for i in range(n - 1, max(-1, n - 65), -1):
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
