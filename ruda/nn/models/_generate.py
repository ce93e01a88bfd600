"""Autoregressive generation for decoders: prefill, then one token at a time against a static
KV cache; greedy or sampled; stop tokens and strings; streaming; batches; chat templates."""
import json
import math
import numbers
import os

import ruda as xp
import ruda.nn as nn
import ruda.random
from ruda.nn._check import number
from ruda.nn._sampling import _check_filters
from ruda.nn.models._recorded import Recordings

_FN_NN = "models.generate"              # the name as ruda.nn._check's helpers spell it
_FN = "ruda.nn." + _FN_NN
_IDS = "a list of token id lists (text: generate(), or encode() first)"


def _err(cls, arg, expected, got):
    return cls(f"{_FN}: {arg}: expected {expected}, got {got}")


def _is_id(t):
    return isinstance(t, numbers.Integral) and not isinstance(t, bool)


def _is_real(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _count(arg, v, lo, what):
    """An int >= lo (not bool): TypeError for another type, ValueError below lo."""
    if not _is_id(v):
        raise _err(TypeError, arg, what, type(v).__name__)
    if v < lo:
        raise _err(ValueError, arg, what, v)
    return int(v)


def _stops(stop):
    """The non-empty stop strings of ``stop`` (None, a str, or a list/tuple of str)."""
    if stop is None:
        return []
    if isinstance(stop, str):
        stop = [stop]
    elif not isinstance(stop, (list, tuple)):
        raise _err(TypeError, "stop", "None, a str or a list of str", type(stop).__name__)
    for s in stop:
        if not isinstance(s, str):
            raise _err(TypeError, "stop", "None, a str or a list of str",
                       f"a {type(stop).__name__} holding {type(s).__name__}")
    return [s for s in stop if s]


def _prompt_ids(prompts):
    """``prompts`` (token id sequences) as lists of ints, checked."""
    if isinstance(prompts, (str, bytes, dict)) or not hasattr(prompts, "__iter__"):
        raise _err(TypeError, "prompts", _IDS, type(prompts).__name__)
    out = []
    for i, p in enumerate(prompts):
        if isinstance(p, (str, bytes, dict)) or not hasattr(p, "__iter__"):
            raise _err(TypeError, "prompts", _IDS, f"{type(p).__name__} at index {i}")
        p = list(p)
        for t in p:
            if not _is_id(t):
                raise _err(TypeError, "prompts", _IDS,
                           f"{type(t).__name__} in the prompt at index {i}")
        if not p:
            raise _err(ValueError, "prompts", "at least one token per prompt",
                       f"an empty prompt at index {i}")
        out.append([int(t) for t in p])
    if not out:
        raise _err(ValueError, "prompts", "at least one prompt", "none")
    return out


def repetition_penalty(logits, seen, penalty):
    """transformers' RepetitionPenaltyLogitsProcessor: the scores of tokens already seen (bool
    ``seen`` (B, V)) divided by ``penalty`` where positive, multiplied where negative."""
    pen = xp.where(logits < 0, logits * penalty, logits / penalty)
    return xp.where(seen, pen, logits)


_penalize = repetition_penalty          # the name is an argument of Generator.steps


def _template_names(named):
    """The names of named chat templates: {name: template} or [{name, template}, ...]."""
    if isinstance(named, dict):
        return sorted(map(str, named))
    return sorted(str(d.get("name")) for d in named if isinstance(d, dict))


def _token_text(tok):
    return tok.get("content") if isinstance(tok, dict) else tok


def render_chat(template, messages, add_generation_prompt=True, **variables):
    """The prompt text of ``messages`` through a Jinja chat template, rendered as transformers
    does (sandboxed, trim_blocks and lstrip_blocks, ``tojson``, ``raise_exception``,
    ``strftime_now``)."""
    import datetime

    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    return env.from_string(template).render(messages=messages,
                                            add_generation_prompt=add_generation_prompt,
                                            **variables)


class _Text:
    """Incremental detokenization of one sequence: text appears once its bytes are complete
    and once it can no longer be the start of a stop string; a stop string ends the text
    (it is not included)."""

    def __init__(self, tokenizer, stop):
        self.tok, self.stop = tokenizer, stop
        self.ids, self.sent, self.done = [], 0, False

    def push(self, ids):
        """Adds tokens; returns the new text that is final."""
        self.ids.extend(ids)
        text = self.tok.decode(self.ids, skip_special_tokens=True)
        for s in self.stop:
            at = text.find(s)
            if at >= 0:
                self.done = True
                text = text[:at]
        if not self.done:
            if text.endswith("\ufffd"):              # a character cut between tokens
                return ""
            hold = 0
            for s in self.stop:                      # a suffix that may begin a stop string
                for n in range(min(len(s) - 1, len(text)), hold, -1):
                    if text.endswith(s[:n]):
                        hold = n
                        break
            text = text[:len(text) - hold]
        new = text[self.sent:] if len(text) > self.sent else ""
        self.sent = max(self.sent, len(text))
        return new

    def flush(self):
        """The held-back text at the end of generation."""
        text = self.tok.decode(self.ids, skip_special_tokens=True)
        if not self.done:
            self.done = True
            new = text[self.sent:]
            self.sent = len(text)
            return new
        return ""


class Generator:
    """Generation on top of a model's ``forward(tokens, caches, start, mask, last_only)``,
    ``new_cache(batch, max_len)``, ``shift_invariant(length)`` and ``cfg`` (``vocab``,
    ``context``)."""

    def __init__(self, tokenizer, tokenizer_config, generation_config, config):
        self.tokenizer = tokenizer
        self.tokenizer_config = tokenizer_config or {}
        gen = generation_config or {}
        eos = gen.get("eos_token_id", config.get("eos_token_id"))
        eos = eos if isinstance(eos, list) else [eos]
        self.eos_ids = {int(e) for e in eos if e is not None}
        name = _token_text(self.tokenizer_config.get("eos_token"))
        if name and tokenizer is not None and tokenizer.token_to_id(name) is not None:
            self.eos_ids.add(tokenizer.token_to_id(name))
        pad = gen.get("pad_token_id", config.get("pad_token_id"))
        self.pad_id = int(pad) if pad is not None else min(self.eos_ids, default=0)

    # -------------------------------------------------------------------------------------
    def encode(self, text):
        """Token ids of ``text`` (with the tokenizer's special tokens, e.g. BOS)."""
        if self.tokenizer is None:
            raise _err(ValueError, "prompt", "token ids (the model has no tokenizer)",
                       repr(text))
        return self.tokenizer.encode(text).ids

    def _ids(self, prompt):
        if isinstance(prompt, str):
            ids = self.encode(prompt)
            if not ids:
                raise _err(ValueError, "prompt", "a text of at least one token",
                           f"an empty prompt ({prompt[:40]!r} gives no tokens)")
            return ids
        if isinstance(prompt, (list, tuple)):
            bad = [t for t in prompt if not _is_id(t)]
            if not bad:
                return list(prompt)
            got = f"a {type(prompt).__name__} holding {type(bad[0]).__name__}"
        else:
            got = type(prompt).__name__
        raise _err(TypeError, "prompt", "a str or a list of int token ids", got)

    def _batch(self, prompts):
        """Token ids of each prompt of a batch (a list or tuple of prompts)."""
        if not isinstance(prompts, (list, tuple)):
            raise _err(TypeError, "prompts", "a list of prompts (str or token id lists)",
                       type(prompts).__name__)
        return [self._ids(p) for p in prompts]

    def steps(self, prompts, max_new_tokens=64, temperature=0.0, top_k=None, top_p=None,
              min_p=None, repetition_penalty=None, seed=None, max_len=None):
        """An iterator of, per step, the list of next token ids (one per prompt). ``prompts``:
        token id lists of any lengths, left-padded to one length with a key mask; every row
        uses positions 0.. of the padded batch. Where the model's rotary table is one for all
        positions, attention scores depend only on the distance between positions and the
        shift by the padding leaves them unchanged; with dynamic NTK scaling past
        max_position_embeddings (the table then changes with the length) prompts of different
        lengths are an error: generate them one at a time.

        The cache holds ``max_len`` positions (default: the longest prompt plus
        ``max_new_tokens``, at most the model's context, ``cfg.context``: its
        max_position_embeddings, or the length its rope scaling stretches to where longer);
        a prompt longer than that is an error; generation ends when the cache is full (so at
        the context's end by default; an explicit ``max_len`` runs past it). Each step's work
        is queued on the device before the previous step's tokens are read back, so the host's
        share of a step overlaps the device's. Arguments are checked at the call, before the
        first step."""
        prompts = _prompt_ids(prompts)
        max_new_tokens = _count("max_new_tokens", max_new_tokens, 0, "an int >= 0")
        temperature = number(_FN_NN, "temperature", temperature, 0.0, math.inf, hi_open=True)
        top_k, top_p, min_p = _check_filters(_FN_NN, top_k, top_p, min_p)
        if repetition_penalty is not None:
            if not _is_real(repetition_penalty):
                raise _err(TypeError, "repetition_penalty", "a real number > 0 or None",
                           type(repetition_penalty).__name__)
            if not 0 < repetition_penalty < math.inf:
                raise _err(ValueError, "repetition_penalty", "a number in (0.0, inf)",
                           repetition_penalty)
            repetition_penalty = float(repetition_penalty)
        if seed is not None:
            seed = _count("seed", seed, 0, "an int in [0, 2**64) or None")
            if seed >= 2**64:
                raise _err(ValueError, "seed", "an int in [0, 2**64) or None", seed)
        if max_len is not None:
            max_len = _count("max_len", max_len, 1, "an int >= 1 or None")
        B, T = len(prompts), max(len(p) for p in prompts)
        if max_len is None:
            # positions past the context give the model inputs it was not made for: stop there
            # (a cache of that size at most, not of an arbitrarily large max_new_tokens)
            ctx = self.cfg.context
            if T > ctx:
                raise _err(ValueError, "prompt", f"at most {ctx} tokens (the model's context; "
                           "an explicit max_len runs past it)", f"{T} tokens")
            max_len = min(T + max_new_tokens, ctx)
        if T > max_len:
            raise _err(ValueError, "prompt", f"at most max_len={max_len} tokens (the KV "
                       "cache length)", f"{T} tokens")
        lengths = sorted({len(p) for p in prompts})
        if len(lengths) > 1 and not self.shift_invariant(min(max_len, T + max_new_tokens - 1)):
            raise _err(ValueError, "prompts", "prompts of one length where the rotary table "
                       "depends on the sequence length (dynamic NTK scaling past "
                       f"max_position_embeddings={self.cfg.max_positions}: the left padding of "
                       "a shorter prompt would change its scores); generate them one at a time",
                       f"lengths {lengths}")
        vocab = self.cfg.vocab
        for p in prompts:
            bad = [t for t in p if not 0 <= t < vocab]
            if bad:
                raise _err(ValueError, "prompt", f"token ids in [0, {vocab})", bad[0])
        return self._decode(prompts, B, T, max_new_tokens, temperature, top_k, top_p, min_p,
                            repetition_penalty, seed, max_len)

    def _decode(self, prompts, B, T, max_new_tokens, temperature, top_k, top_p, min_p,
                repetition_penalty, seed, max_len):
        """The generator behind :meth:`steps`, on checked arguments."""
        vocab = self.cfg.vocab
        dev = self.device
        pads = [T - len(p) for p in prompts]
        rows = [[self.pad_id] * n + list(p) for n, p in zip(pads, prompts)]
        tokens = xp.asarray(rows, dtype=xp.int32, device=dev)
        mask = None
        if any(pads):
            keep = xp.arange(max_len, dtype=xp.int32, device=dev)[None, :] >= \
                xp.asarray(pads, dtype=xp.int32, device=dev)[:, None]
            mask = xp.reshape(keep, (B, 1, 1, max_len))
        seen = None
        if repetition_penalty is not None and repetition_penalty != 1.0:
            flags = [[False] * vocab for _ in prompts]
            for f, p in zip(flags, prompts):
                for t in p:
                    f[t] = True
            seen = xp.asarray(flags, dtype=xp.bool, device=dev)
            ids_v = xp.arange(vocab, dtype=xp.int32, device=dev)[None, :]
        gen = None
        if temperature:
            gen = ruda.random.Generator(int.from_bytes(os.urandom(8), "little")
                                        if seed is None else seed)
        rec = Recordings.get(self, B, max_len, mask, greedy=not temperature and seen is None)
        caches = rec.caches if rec else self.new_cache(B, max_len)
        read_later = dev.backend.to_host_later

        def launch(tokens, start):
            """The next tokens (B,) after ``tokens`` at ``start``, queued on the device."""
            if rec and start:
                logits, nxt = rec.step(tokens, start)
                if nxt is not None:
                    return nxt
            elif rec:
                logits = rec.prefill(tokens)
            else:
                S = start + tokens.shape[1]
                logits = self.forward(tokens, caches, start,
                                      None if mask is None else mask[..., :S], last_only=True)
            s = xp.astype(logits[:, -1, :], xp.float32)
            if seen is not None:
                s = _penalize(s, seen, repetition_penalty)
            return nn.sample(s, temperature, top_k, top_p, min_p, generator=gen)

        n = min(max_new_tokens, max_len - T + 1)
        if n == 0:
            return
        nxt, start = launch(tokens, 0), T
        for i in range(n):
            pending = read_later(nxt.native)
            if i + 1 < n:       # the next step queued before this one's tokens are read
                nxt32 = xp.astype(nxt, xp.int32)
                if seen is not None:
                    seen = xp.logical_or(seen, ids_v == nxt32[:, None])
                nxt, start = launch(xp.reshape(nxt32, (B, 1)), start), start + 1
            yield [int(t) for t in pending().tolist()]

    def generate_ids(self, prompts, stop_tokens=None, **kw):
        """New token ids per prompt, each ending at (and including) its first stop token."""
        stop = self.eos_ids if stop_tokens is None else set(stop_tokens)
        steps = self.steps(self._batch(prompts), **kw)
        outs = [[] for _ in prompts]
        done = [False] * len(prompts)
        for toks in steps:
            for i, t in enumerate(toks):
                if not done[i]:
                    outs[i].append(t)
                    done[i] = t in stop
            if all(done):
                break
        return outs

    def _stream(self, steps, n, stop):
        texts = [_Text(self.tokenizer, stop) for _ in range(n)]
        for toks in steps:
            pieces = []
            for t, tx in zip(toks, texts):
                if tx.done:
                    pieces.append("")
                elif t in self.eos_ids:
                    pieces.append(tx.flush())
                else:
                    pieces.append(tx.push([t]))
            yield pieces
            if all(tx.done for tx in texts):
                return
        yield [tx.flush() for tx in texts]

    def generate(self, prompt, max_new_tokens=64, temperature=0.0, top_k=None, top_p=None,
                 min_p=None, repetition_penalty=None, seed=None, stop=None, stream=False,
                 max_len=None):
        """The generated text for ``prompt`` (a str or token ids), or a list of texts for a
        list of prompts (decoded as one batch).

        ``temperature=0``: greedy; otherwise sampling with ``top_k``, ``top_p``, ``min_p``
        (as :func:`ruda.nn.sample`), reproducible with ``seed``. ``repetition_penalty``: as
        transformers, over the prompt and the generated tokens. Generation ends at an end
        token (the config's ``eos_token_id``), after ``max_new_tokens``, or at a ``stop``
        string (a str or a list), which is cut from the text. ``stream=True`` returns an
        iterator of text pieces (lists of pieces, one per prompt, for a list of prompts)
        whose concatenation is the non-streamed result."""
        kw = dict(max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k,
                  top_p=top_p, min_p=min_p, repetition_penalty=repetition_penalty, seed=seed,
                  max_len=max_len)
        if self.tokenizer is None:
            raise _err(ValueError, "model", "a tokenizer (use steps() or generate_ids() with "
                       "token ids)", "none")
        if not isinstance(prompt, (str, list, tuple)):
            raise _err(TypeError, "prompt", "a str, a list of token ids, or a list of those "
                       "(a batch)", type(prompt).__name__)
        if not prompt and not isinstance(prompt, str):
            raise _err(ValueError, "prompt", "a prompt or a non-empty batch of prompts",
                       f"an empty {type(prompt).__name__}")
        single = isinstance(prompt, str) or _is_id(prompt[0])
        prompts = [prompt] if single else list(prompt)
        stop = _stops(stop)
        # steps() checks its arguments now, so a streamed call fails here, not at next()
        it = self._stream(self.steps(self._batch(prompts), **kw), len(prompts), stop)
        if stream:
            return (p[0] for p in it if p[0]) if single else it
        parts = [[] for _ in prompts]
        for pieces in it:
            for acc, p in zip(parts, pieces):
                acc.append(p)
        texts = ["".join(acc) for acc in parts]
        return texts[0] if single else texts

    @property
    def chat_template(self):
        """The chat template that :meth:`chat` renders (of named templates, the "default"
        one, as transformers), or None."""
        t = self.tokenizer_config.get("chat_template")
        if isinstance(t, list):
            t = {d.get("name"): d.get("template") for d in t if isinstance(d, dict)}
        if isinstance(t, dict):
            t = t.get("default")
        return t if isinstance(t, str) and t else None

    def chat_prompt(self, messages, add_generation_prompt=True):
        """The prompt text of ``messages`` ([{"role", "content"}, ...], or one string: the
        user's message) through :attr:`chat_template`."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        elif not isinstance(messages, list | tuple) or not all(
                isinstance(m, dict) and "role" in m and "content" in m for m in messages):
            raise _err(TypeError, "messages", 'a string or a list of {"role": ..., "content": '
                       '...} dicts', repr(messages)[:80])
        tc = self.tokenizer_config
        template = self.chat_template
        if template is None:
            named = tc.get("chat_template")
            got = "none" if not named else repr(named)[:40]
            if named and isinstance(named, list | dict):
                got = f"named templates {_template_names(named)} without a 'default' one"
            raise _err(ValueError, "model", "a chat template (chat_template.jinja or "
                       "tokenizer_config.json's chat_template)", got)
        specials = {k: _token_text(tc.get(k)) for k in ("bos_token", "eos_token", "pad_token",
                                                         "unk_token")}
        return render_chat(template, messages, add_generation_prompt, **specials)

    def chat(self, messages, **kw):
        """The reply to ``messages`` (rendered by :meth:`chat_prompt`, tokenized without
        adding special tokens, as transformers' apply_chat_template); ``generate``'s options."""
        ids = self.tokenizer.encode(self.chat_prompt(messages), add_special_tokens=False).ids
        return self.generate(ids, **kw)
