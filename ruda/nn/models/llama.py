"""Llama-family decoders (Llama 2/3, Mistral, Qwen2, Qwen3, SmolLM2) as functional calls on
ruda.nn, configured by transformers' config.json keys."""
import ruda as xp
import ruda.nn as nn
from ruda.nn._layers import embedding_rows
from ruda.nn._rope import _scaled
from ruda.nn.models._generate import Generator

ARCHITECTURES = ("llama", "mistral", "qwen2", "qwen3")          # config.json model_type
SUPPORTED = ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM")
MAX_POSITIONS = {"llama": 2048, "mistral": 131072, "qwen2": 32768, "qwen3": 32768}   # defaults


def _err(cls, arg, expected, got):
    return cls(f"ruda.nn.models.load: {arg}: expected {expected}, got {got}")


def _rope(config, max_positions):
    """(theta, scaling dict or None) as transformers reads them (configuration and
    modeling_rope_utils): rope_scaling (older config files) over rope_parameters, with the
    lengths its rope functions use filled in. Dynamic NTK scales from max_position_embeddings
    (an original_max_position_embeddings entry is ignored); llama3, yarn and longrope take
    original_max_position_embeddings from config.json's top level, else the entry, else
    max_position_embeddings; yarn without a factor takes max_position_embeddings / original."""
    params = config.get("rope_scaling") or config.get("rope_parameters") or {}
    theta = params.get("rope_theta", config.get("rope_theta", 10000.0))
    scaling = dict(params)
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "default":
        return float(theta), None
    if kind == "dynamic":
        scaling["original_max_position_embeddings"] = max_positions
    elif kind in ("llama3", "yarn", "longrope"):
        orig = config.get("original_max_position_embeddings") \
            or scaling.get("original_max_position_embeddings") or max_positions
        scaling["original_max_position_embeddings"] = orig
        if kind == "yarn":
            scaling.pop("max_position_embeddings", None)     # read by older transformers only
            if scaling.get("factor") is None:
                scaling["factor"] = max_positions / orig
    return float(theta), scaling


class Config:
    """The fields of a decoder's config.json that the forward pass reads."""

    def __init__(self, config):
        arch = config.get("model_type")
        if arch not in ARCHITECTURES:
            names = config.get("architectures") or [arch]
            raise _err(ValueError, "config.json model_type",
                       f"one of the supported architectures {', '.join(SUPPORTED)}",
                       f"{arch!r} ({', '.join(map(str, names))})")
        self.arch = arch
        try:
            self.hidden = int(config["hidden_size"])
            self.layers = int(config["num_hidden_layers"])
            self.heads = int(config["num_attention_heads"])
            self.kv_heads = int(config.get("num_key_value_heads") or self.heads)
            self.intermediate = int(config["intermediate_size"])
            self.vocab = int(config["vocab_size"])
        except KeyError as e:
            raise _err(ValueError, "config.json", f"a {e.args[0]!r} entry", "none") from None
        self.head_dim = int(config.get("head_dim") or self.hidden // self.heads)
        if self.heads % self.kv_heads:
            raise _err(ValueError, "config.json num_key_value_heads",
                       f"a divisor of num_attention_heads={self.heads}", self.kv_heads)
        act = config.get("hidden_act", "silu")
        if act != "silu":
            raise _err(ValueError, "config.json hidden_act", "'silu'", repr(act))
        self.eps = float(config.get("rms_norm_eps", 1e-6))
        self.tied = bool(config.get("tie_word_embeddings", False))
        self.max_positions = int(config.get("max_position_embeddings") or MAX_POSITIONS[arch])
        self.theta, self.scaling = _rope(config, self.max_positions)
        try:                        # an unsupported rope type or a missing entry: now, not later
            _scaled(self.head_dim, self.theta, self.scaling or {}, 1)
        except (TypeError, ValueError) as e:
            raise _err(ValueError, "config.json rope scaling", "a scaling ruda.nn.rope_frequencies "
                       "supports", f"{self.scaling!r} ({e})") from None
        # the positions the model was made for: max_position_embeddings, or where the rope
        # scaling stretches the original length by its factor, that stretched length if longer
        s = self.scaling or {}
        stretched = s.get("factor", 1.0) * s.get("original_max_position_embeddings",
                                                 self.max_positions)
        self.context = max(self.max_positions, int(stretched))
        bias = bool(config.get("attention_bias", False))
        self.qkv_bias = True if arch == "qwen2" else bias
        self.o_bias = bias and arch != "qwen2"
        self.mlp_bias = bool(config.get("mlp_bias", False))
        self.qk_norm = arch == "qwen3"
        # sliding window per layer: Mistral everywhere; Qwen through layer_types
        window = config.get("sliding_window")
        types = config.get("layer_types")
        if arch == "mistral" or (arch in ("llama",) and window):
            self.windows = [window] * self.layers
        elif types:
            self.windows = [window if t == "sliding_attention" else None for t in types]
        elif arch in ("qwen2", "qwen3") and config.get("use_sliding_window") and window:
            lim = int(config.get("max_window_layers", self.layers))
            self.windows = [window if i >= lim else None for i in range(self.layers)]
        else:
            self.windows = [None] * self.layers
        self.windows = [int(w) if w else None for w in self.windows]


def expected_shapes(cfg):
    """{tensor name: shape} of every weight the model reads (lm_head absent when tied)."""
    H, D, q, kv = cfg.hidden, cfg.head_dim, cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    out = {"model.embed_tokens.weight": (cfg.vocab, H), "model.norm.weight": (H,)}
    if not cfg.tied:
        out["lm_head.weight"] = (cfg.vocab, H)
    for i in range(cfg.layers):
        p = f"model.layers.{i}."
        out.update({p + "input_layernorm.weight": (H,), p + "post_attention_layernorm.weight": (H,),
                    p + "self_attn.q_proj.weight": (q, H), p + "self_attn.k_proj.weight": (kv, H),
                    p + "self_attn.v_proj.weight": (kv, H), p + "self_attn.o_proj.weight": (H, q),
                    p + "mlp.gate_proj.weight": (cfg.intermediate, H),
                    p + "mlp.up_proj.weight": (cfg.intermediate, H),
                    p + "mlp.down_proj.weight": (H, cfg.intermediate)})
        if cfg.qkv_bias:
            out.update({p + "self_attn.q_proj.bias": (q,), p + "self_attn.k_proj.bias": (kv,),
                        p + "self_attn.v_proj.bias": (kv,)})
        if cfg.o_bias:
            out[p + "self_attn.o_proj.bias"] = (H,)
        if cfg.mlp_bias:
            for n, s in (("gate", cfg.intermediate), ("up", cfg.intermediate), ("down", H)):
                out[p + f"mlp.{n}_proj.bias"] = (s,)
        if cfg.qk_norm:
            out.update({p + "self_attn.q_norm.weight": (D,), p + "self_attn.k_norm.weight": (D,)})
    return out


def _shape(w):
    return tuple(w.shape)


def _fuse(ws):
    """One weight (or bias) from several stacked along the output axis, when all are plain
    arrays or all QuantizedWeights of one kind and in_features; None otherwise."""
    if all(isinstance(w, nn.QuantizedWeight) for w in ws):
        if len({(w.kind, w.shape[1]) for w in ws}) == 1:
            return nn.QuantizedWeight.concat(ws)
        return None
    if any(w is None or not isinstance(w, xp.Array) for w in ws):
        return None
    return xp.concat(ws, axis=0)


class Llama(Generator):
    """A decoder: ``forward(tokens, caches, start, mask)`` gives logits; ``generate`` and
    ``chat`` (from :class:`ruda.nn.models._generate.Generator`) decode with a static KV cache.

    Fusions made once at load: the q/k/v projections concatenated into one matrix (one matmul
    per layer instead of three) and gate/up into another, when the weights are plain arrays or
    quantized alike."""

    def __init__(self, config, weights, tokenizer=None, tokenizer_config=None,
                 generation_config=None, device=None, dtype=None):
        self.config = config
        self.cfg = cfg = Config(config)
        want = expected_shapes(cfg)
        for name, shape in want.items():
            if name not in weights:
                raise _err(ValueError, "weights", f"a tensor {name!r} of shape {shape}", "none")
            if _shape(weights[name]) != shape:
                raise _err(ValueError, f"weight {name!r}", f"shape {shape}",
                           _shape(weights[name]))
        w = dict(weights)
        first = w["model.embed_tokens.weight"]
        self.device = first.device if device is None else xp.device(device) \
            if isinstance(device, str) else device
        self.dtype = dtype or (first.dtype if isinstance(first, xp.Array) else xp.float32)
        self.layers = []
        for i in range(cfg.layers):
            p = f"model.layers.{i}."
            g = w.get
            L = {"in_norm": w[p + "input_layernorm.weight"],
                 "post_norm": w[p + "post_attention_layernorm.weight"],
                 "o": w[p + "self_attn.o_proj.weight"], "o_b": g(p + "self_attn.o_proj.bias"),
                 "down": w[p + "mlp.down_proj.weight"], "down_b": g(p + "mlp.down_proj.bias"),
                 "q_norm": g(p + "self_attn.q_norm.weight"),
                 "k_norm": g(p + "self_attn.k_norm.weight"), "window": cfg.windows[i]}
            qkv = [w[p + f"self_attn.{n}_proj.weight"] for n in "qkv"]
            L["qkv"] = _fuse(qkv)
            if L["qkv"] is None:
                L["q"], L["k"], L["v"] = qkv
            L["qkv_b"] = _fuse([g(p + f"self_attn.{n}_proj.bias") for n in "qkv"]) \
                if cfg.qkv_bias else None
            if cfg.qkv_bias and L["qkv"] is None:
                L["q_b"], L["k_b"], L["v_b"] = (w[p + f"self_attn.{n}_proj.bias"] for n in "qkv")
            gu = [w[p + "mlp.gate_proj.weight"], w[p + "mlp.up_proj.weight"]]
            L["gate_up"] = _fuse(gu)
            if L["gate_up"] is None:
                L["gate"], L["up"] = gu
            L["gate_up_b"] = _fuse([g(p + "mlp.gate_proj.bias"), g(p + "mlp.up_proj.bias")]) \
                if cfg.mlp_bias else None
            if cfg.mlp_bias and L["gate_up"] is None:
                L["gate_b"], L["up_b"] = w[p + "mlp.gate_proj.bias"], w[p + "mlp.up_proj.bias"]
            self.layers.append(L)
        self.embed = first
        self.norm = w["model.norm.weight"]
        self.lm_head = first if cfg.tied else w["lm_head.weight"]
        self._rope_table = None
        super().__init__(tokenizer, tokenizer_config, generation_config, config)

    # -------------------------------------------------------------------------------------
    def rope(self, start, end):
        """cos, sin for positions [start, end): slices of one table up to the largest length
        asked for so far (dynamic NTK scaling depends on the length: computed each call)."""
        cfg = self.cfg
        if not self.recordable():
            pos = xp.arange(start, end, dtype=xp.int32, device=self.device)
            return nn.rope_frequencies(cfg.head_dim, cfg.theta, pos, cfg.scaling,
                                       dtype=self.dtype)
        if self._rope_table is None or self._rope_table[0].shape[0] < end:
            n = max(end, 256)
            self._rope_table = nn.rope_frequencies(cfg.head_dim, cfg.theta, n, cfg.scaling,
                                                   device=self.device, dtype=self.dtype)
        cos, sin = self._rope_table
        return cos[start:end], sin[start:end]

    def new_cache(self, batch, max_len):
        """One :class:`ruda.nn.KVCache` per layer."""
        cfg = self.cfg
        return [nn.KVCache(batch, cfg.kv_heads, max_len, cfg.head_dim, dtype=self.dtype,
                           device=self.device) for _ in range(cfg.layers)]

    def _attention(self, L, x, i, cos, sin, attend, attend_qkv=None):
        """``x + attention(rms_norm(x))``. ``attend(L, i, q, k, v)`` gets the rotated heads;
        ``attend_qkv(L, i, qkv)``, where given, the fused projection itself (rotation and cache
        write in one call)."""
        cfg = self.cfg
        B, T, _ = x.shape
        D, Hq, Hk = cfg.head_dim, cfg.heads, cfg.kv_heads
        if L["qkv"] is not None:
            qkv = nn.rms_norm_linear(x, L["in_norm"], L["qkv"], L["qkv_b"], cfg.eps)
            if attend_qkv is not None and not cfg.qk_norm:
                o = attend_qkv(L, i, qkv)
                return self._out(L, x, o)
            v = qkv[..., (Hq + Hk) * D:]
            if cfg.qk_norm:
                q, k = qkv[..., :Hq * D], qkv[..., Hq * D:(Hq + Hk) * D]
        else:
            h = nn.rms_norm(x, (cfg.hidden,), L["in_norm"], cfg.eps)
            q, k, v = (nn.linear(h, L[n], L.get(n + "_b")) for n in "qkv")
        v = xp.permute_dims(xp.reshape(v, (B, T, Hk, D)), (0, 2, 1, 3))
        if L["qkv"] is not None and not cfg.qk_norm:
            # q and k side by side in the fused projection: one rotation for both
            qk = xp.reshape(qkv[..., :(Hq + Hk) * D], (B, T, Hq + Hk, D))
            qk = nn.apply_rope(xp.permute_dims(qk, (0, 2, 1, 3)), cos, sin)
            q, k = qk[:, :Hq], qk[:, Hq:]
        else:
            q = xp.reshape(q, (B, T, Hq, D))
            k = xp.reshape(k, (B, T, Hk, D))
            if cfg.qk_norm:
                q = nn.rms_norm(q, (D,), L["q_norm"], cfg.eps)
                k = nn.rms_norm(k, (D,), L["k_norm"], cfg.eps)
            q = nn.apply_rope(xp.permute_dims(q, (0, 2, 1, 3)), cos, sin)
            k = nn.apply_rope(xp.permute_dims(k, (0, 2, 1, 3)), cos, sin)
        return self._out(L, x, attend(L, i, q, k, v))

    def _out(self, L, x, o):
        """x + the output projection of the heads o (B, H, T, D)."""
        B, H, T, D = o.shape
        o = xp.reshape(xp.permute_dims(o, (0, 2, 1, 3)), (B, T, H * D))
        return nn.add_linear(x, o, L["o"], L["o_b"])

    def _mlp(self, L, x):
        """``x + mlp(rms_norm(x))``."""
        eps = self.cfg.eps
        if L["gate_up"] is not None:
            a = nn.rms_norm_linear(x, L["post_norm"], L["gate_up"], L["gate_up_b"], eps,
                                   swiglu=True)
        else:
            h = nn.rms_norm(x, (self.cfg.hidden,), L["post_norm"], eps)
            a = nn.swiglu(nn.linear(h, L["gate"], L.get("gate_b")),
                          nn.linear(h, L["up"], L.get("up_b")))
        return nn.add_linear(x, a, L["down"], L["down_b"])

    def forward(self, tokens, caches=None, start=None, mask=None, last_only=False):
        """Logits (B, T, vocab) for int tokens (B, T) at positions ``start ..``.

        ``caches``: None (attention over ``tokens`` only) or :meth:`new_cache`'s list, whose
        length must be ``start`` (default: that length; 0 without caches). ``mask``: None or
        bool (B, 1, 1, S) over all the keys (cached and new), False at padding. ``last_only``:
        logits of the last position only (B, 1, vocab), which is all decoding needs."""
        if tokens.ndim != 2:
            raise ValueError(f"ruda.nn.models.Llama.forward: tokens: expected shape (B, T), "
                             f"got {tokens.shape}")
        T = tokens.shape[1]
        held = 0 if caches is None else caches[0].length
        if start is None:
            start = held
        elif caches is not None and start != held:
            # the new keys go after the cached ones: another start would rotate them (and the
            # queries) as if they sat elsewhere
            raise ValueError(f"ruda.nn.models.Llama.forward: start: expected the caches' "
                             f"length {held} (the position after the cached tokens), got {start}")
        if caches is not None and caches[0].length + T > caches[0].max_len:
            raise ValueError(f"ruda.nn.models.Llama.forward: tokens: expected at most "
                             f"{caches[0].max_len - caches[0].length} more positions (the "
                             f"cache holds {caches[0].length} of {caches[0].max_len}), got {T}")
        return self._run(nn.embedding(tokens, self.embed), caches, start, mask, last_only)

    def prefill(self, tokens, caches, mask=None):
        """:meth:`forward` of a prompt into ``caches`` emptied first, last position only, for
        tokens known to be in range (nothing read on the host: recordable)."""
        for c in caches:
            c.reset()
        return self._run(embedding_rows(tokens, self.embed), caches, 0, mask, True)

    def _run(self, x, caches, start, mask, last_only):
        T = x.shape[1]
        cos, sin = self.rope(start, start + T)
        gqa = self.cfg.heads != self.cfg.kv_heads

        def attend(L, i, q, k, v):
            if caches is not None:
                k, v = caches[i].update(k, v)
            return nn.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True,
                                                   enable_gqa=gqa, sliding_window=L["window"])

        def attend_qkv(L, i, qkv):          # one new position: rotation and cache write fused
            q, k, v = caches[i].append_rotated(qkv, self.cfg.heads, cos, sin)
            return nn.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa,
                                                   sliding_window=L["window"])
        one = caches is not None and T == 1
        return self._layers(x, cos, sin, attend, last_only, attend_qkv if one else None)

    def _layers(self, x, cos, sin, attend, last_only, attend_qkv=None):
        if x.dtype != self.dtype:
            x = xp.astype(x, self.dtype)
        # each norm is fused with the projection that reads it, each residual add with the
        # projection before it (nn.rms_norm_linear, nn.add_linear)
        for i, L in enumerate(self.layers):
            x = self._mlp(L, self._attention(L, x, i, cos, sin, attend, attend_qkv))
        if last_only:
            x = x[:, -1:, :]
        return nn.rms_norm_linear(x, self.norm, self.lm_head, eps=self.cfg.eps)

    def decode_step(self, tokens, pos, caches, mask=None):
        """Logits (B, 1, vocab) of one new token per row at position ``pos``, read from device
        memory only: ``tokens`` int32 (B, 1) in range, ``pos`` int32 (1,) below the caches'
        ``max_len``, ``mask`` None or bool (B, 1, 1, max_len) as in :meth:`forward`. Attention
        runs over the whole cache buffers with the keys after ``pos`` masked out, so every
        shape is static and the step can be recorded once and replayed (``Generator.steps``
        does so where the device records work). The caches' ``length`` is left to the caller.
        Needs a rope table (no dynamic NTK scaling) built up to ``max_len``."""
        cfg = self.cfg
        T = caches[0].max_len
        self.rope(0, T)
        cos, sin = self._rope_table
        cos, sin = xp.take(cos, pos, axis=0), xp.take(sin, pos, axis=0)
        j = xp.arange(T, dtype=xp.int32, device=self.device)
        seen = xp.reshape(j <= pos, (1, 1, 1, T))
        masks = {}
        for w in {L["window"] for L in self.layers}:
            m = seen if w is None else xp.logical_and(seen, xp.reshape(j > pos - w, (1, 1, 1, T)))
            masks[w] = m if mask is None else xp.logical_and(m, mask)
        gqa = cfg.heads != cfg.kv_heads

        def attend(L, i, q, k, v):
            k, v = caches[i].put(pos, k, v)
            return nn.scaled_dot_product_attention(q, k, v, attn_mask=masks[L["window"]],
                                                   enable_gqa=gqa)

        def attend_qkv(L, i, qkv):
            q, k, v = caches[i].put_rotated(pos, qkv, cfg.heads, cos, sin)
            return nn.scaled_dot_product_attention(q, k, v, attn_mask=masks[L["window"]],
                                                   enable_gqa=gqa)
        return self._layers(embedding_rows(tokens, self.embed), cos, sin, attend, True,
                            attend_qkv)

    def shift_invariant(self, length):
        """Whether sequences of up to ``length`` positions, moved to later positions (the rows
        of a left-padded batch), keep their attention scores: rotary scores depend only on the
        distance between positions while one table serves every position; dynamic NTK scaling
        changes the table with the sequence length past max_position_embeddings, so keys
        cached under one table meet queries rotated by another."""
        return self.recordable() or length <= self.cfg.max_positions

    def recordable(self):
        """Whether :meth:`decode_step` applies (a fixed rope table: no dynamic NTK scaling)."""
        s = self.cfg.scaling
        return not (s and s.get("rope_type", s.get("type")) == "dynamic")
