"""Device-to-host transfers of one wgpu device: staging buffers and chunked readback.

A readback copies the storage into a MAP_READ staging buffer, submits and maps it.  Large ones go
in READ_CHUNK pieces through two staging buffers, so the device copies piece *i+1* while host
threads copy piece *i* out of its mapping.  Small storages are read whole and the host copy kept
until the device next writes them (``read_through``): reading a small array element by element
then costs one submit and map, not one each.

Each of the two staging slots holds one buffer, replaced by a larger one when a readback needs
more (at most READ_CHUNK bytes): reading sizes that grow keeps one buffer a slot, not one per size.
A readback that fails or is interrupted (a KeyboardInterrupt) unmaps what it mapped, once no host
thread reads the mapping, so the next readback can copy into it.
"""
import numpy as np

from ruda.backends import _hostcopy
from ruda.backends.wgpu._alloc import Batch, size_class

READ_CHUNK = 64 << 20
HOST_COPY_MAX = 64 << 10   # storages up to this size are read whole, the copy kept (read_through)


class Transfers:
    """Readback through ``queue`` (a :class:`ruda.backends.wgpu._queue.Queue`)."""

    def __init__(self, queue):
        self.q = queue
        self.staging = [None, None]     # one MAP_READ buffer a slot, grown as needed

    def _staging(self, size, slot):
        b = self.staging[slot]
        if b is None or b.size < size:
            U = self.q.wgpu.BufferUsage
            b = self.staging[slot] = self.q.device.create_buffer(size=size, usage=U.MAP_READ | U.COPY_DST)
        return b

    def release(self):
        """Drop the staging buffers (made again by the next readback)."""
        self.staging = [None, None]

    def nbytes(self):
        return sum(b.size for b in self.staging if b is not None)

    def read_through(self, st, byte_off, nbytes, out):
        """``read``, but a storage of at most HOST_COPY_MAX bytes is read whole and its host copy
        kept until the device next records a write to it (a launch naming it as an output, or a
        write the queue cannot name: ``record``, a copy into a non-staging buffer)."""
        if st.nbytes > HOST_COPY_MAX:
            return self.read(st, byte_off, nbytes, out)
        held = st.host
        if held.__class__ is not tuple or held[0] != self.q.writes:
            whole = np.empty(st.nbytes, np.uint8)
            self.read(st, 0, st.nbytes, whole)
            st.host = held = (self.q.writes, whole)
        out[:] = held[1][byte_off:byte_off + nbytes]

    def _map(self, sb, n4):
        """The first ``n4`` bytes of staging buffer ``sb``, mapped once the device is done; on
        any error (an interrupted wait included) it is left unmapped."""
        nat = self.q.nat
        try:
            if nat is not None:
                nat.wait()
                return nat.map_read(sb, n4)
            sb.map_sync(self.q.wgpu.MapMode.READ, 0, n4)
            return sb.read_mapped(0, n4, copy=False)
        except BaseException:
            self._unmap(sb)
            raise

    def _unmap(self, sb):
        """Unmap ``sb`` if a readback mapped it (natively: its map pending too); else nothing."""
        if self.q.nat is not None:
            self.q.nat.unmap(sb)
        elif sb.map_state == "mapped":
            sb.unmap()

    def read(self, st, byte_off, nbytes, out):
        """Copy ``nbytes`` from ``st`` at ``byte_off`` into the uint8 view ``out``.

        In READ_CHUNK pieces through two staging buffers: while the host copies piece *i* out of
        its mapped staging buffer (threaded when large: ``ruda.backends._hostcopy``), the
        device copies piece *i+1* into the other one and the main thread maps it.  A map waits
        for the device's last submission, so piece *i+1* is submitted only after piece *i* is
        mapped: the wait covers exactly its own copy.  A storage whose last writer's work was
        dropped (its submit failed) raises rather than reading what the buffer held before."""
        q = self.q
        if st.host.__class__ is Batch:
            st.host.check("this array")
        q.note("readbacks")
        if nbytes == 0:
            q.flush()
            return
        chunk = min(READ_CHUNK, -(-nbytes // 4) * 4)
        nchunks = -(-nbytes // chunk)
        size = size_class(chunk)

        def issue(i):
            lo = i * chunk
            n = min(chunk, nbytes - lo)
            n4 = -(-n // 4) * 4
            sb = self._staging(size, i % 2)
            q.copy(st.buffer, byte_off + lo, sb, 0, n4, staging=True)
            q.flush()
            return sb, lo, n, np.frombuffer(self._map(sb, n4), np.uint8, n)

        jobs = ()
        try:
            cur = issue(0)
            for i in range(nchunks):
                sb, lo, n, src = cur
                jobs = _hostcopy.start(out[lo:lo + n], src)
                cur = issue(i + 1) if i + 1 < nchunks else None
                try:
                    _hostcopy.join(jobs)    # no thread may still read the mapping when it goes
                finally:
                    self._unmap(sb)
                for j in jobs:
                    j.result()              # a copy's error, if any
                jobs = ()
        except BaseException:
            try:
                _hostcopy.join(jobs)
            except KeyboardInterrupt:
                pass                        # the error on its way out already ends the readback
            for i, b in enumerate(self.staging):    # whatever this readback left mapped
                if b is not None:
                    self._unmap(b)
                    if q.nat is None and b.map_state != "unmapped":
                        self.staging[i] = None      # a pending map: wgpu-py cannot cancel it
            raise

