"""Decoding recorded by the device (``backend.capture``: CUDA graphs on cuda) and replayed.

A model with ``recordable()``, ``decode_step`` and ``prefill`` (:class:`~ruda.nn.models.Llama`)
decodes through :class:`Recordings` where its device records work (``backend.records``: cuda as
CUDA graphs, wgpu as its launches replayed on the same buffers; ``RUDA_RECORDING=0`` turns it
off): the per-token step (the
model's ``decode_step``, plus the greedy argmax when sampling is greedy) is recorded on its
first call and replayed for every later token, reading the tokens, the position and the key
mask from device buffers written before each replay; a prompt length seen before is prefilled
by a recording too (the first time it runs as it is: recording costs two runs).  The model
keeps the latest :class:`Recordings` (its caches and buffers) for the next generation of the
same batch size, cache length and sampling kind.
"""
import ruda as xp
import ruda.nn as nn
from ruda.runtime import env

PREFILLS = 8            # prompt lengths kept recorded per Recordings


class Recorded:
    """``fn`` recorded on the first call and replayed after; where the device cannot record
    it (a RuntimeWarning says why), run as it is."""

    def __init__(self, backend, fn):
        self.backend, self.fn, self.replay, self.out = backend, fn, None, None

    def __call__(self):
        if self.replay is None:
            r = self.backend.capture(self.fn)
            self.replay, self.out = (self.fn, None) if r is NotImplemented else r
        out = self.replay()
        return self.out if out is None else out

    @property
    def recorded(self):
        return self.replay is not None and self.replay is not self.fn


class Recordings:
    """Caches, device buffers and recordings of one (batch, max_len, greedy) shape."""

    @classmethod
    def get(cls, model, B, max_len, mask, greedy):
        """The model's recordings for this shape with emptied caches and ``mask`` set, or None
        where the model or its device cannot record."""
        rec = getattr(model, "recordable", None)
        if rec is None or not rec() or not model.device.backend.records \
                or not env.flag("RUDA_RECORDING", True):     # a wrong value raises ValueError
            return None
        r = getattr(model, "_recordings", None)
        if r is None or r.key != (B, max_len, greedy):
            r = model._recordings = cls(model, B, max_len, greedy)
        for c in r.caches:
            c.reset()
        r.padded = mask is not None
        r.mask[...] = True if mask is None else mask
        return r

    def __init__(self, model, B, max_len, greedy):
        dev = model.device
        self.model, self.key, self.greedy = model, (B, max_len, greedy), greedy
        self.caches = model.new_cache(B, max_len)
        self.tok = xp.zeros((B, 1), dtype=xp.int32, device=dev)
        self.pos = xp.zeros((1,), dtype=xp.int32, device=dev)
        self.mask = xp.ones((B, 1, 1, max_len), dtype=xp.bool, device=dev)
        self.step_rec = Recorded(dev.backend, self._step)
        self.padded = False
        self.prefills = {}      # (length, padded) -> None (seen once) or (token buffer, Recorded)

    def _step(self):
        logits = self.model.decode_step(self.tok, self.pos, self.caches, self.mask)
        nxt = nn.sample(xp.astype(logits[:, -1, :], xp.float32), 0.0) if self.greedy else None
        return logits, nxt

    def step(self, tokens, start):
        """(logits (B, 1, vocab), greedy next tokens or None) of ``tokens`` (B, 1) at ``start``."""
        self.tok[...] = tokens
        self.pos[...] = xp.asarray([start], dtype=xp.int32, device=self.pos.device)
        out = self.step_rec()
        for c in self.caches:
            c.advance(1)
        return out

    def prefill(self, tokens):
        """Logits (B, 1, vocab) of the prompt ``tokens`` (B, T), into the emptied caches."""
        T = tokens.shape[1]
        key = (T, self.padded)
        mask = self.mask[..., :T] if self.padded else None
        if key not in self.prefills:
            if len(self.prefills) >= PREFILLS:
                self.prefills.clear()
            self.prefills[key] = None
            return self.model.forward(tokens, self.caches, 0, mask, last_only=True)
        if self.prefills[key] is None:
            buf = xp.zeros(tokens.shape, dtype=xp.int32, device=tokens.device)
            self.prefills[key] = (buf, Recorded(tokens.device.backend,
                                                lambda: self.model.prefill(buf, self.caches, mask)))
        buf, rec = self.prefills[key]
        buf[...] = tokens
        logits = rec()
        for c in self.caches:
            c.reset()
            c.advance(T)
        return logits
