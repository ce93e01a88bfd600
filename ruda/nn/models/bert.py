"""BERT-style encoders with sentence-transformers pooling (all-MiniLM-L6-v2 and the like) as
functional calls on ruda.nn, configured by transformers' config.json and the
sentence-transformers files beside it (modules.json, 1_Pooling/config.json,
sentence_bert_config.json)."""
import math
import os

import numpy as np

import ruda as xp
import ruda.nn as nn
from ruda.nn._check import count
from ruda.nn.models import _hf

ARCHITECTURES = ("bert",)                               # config.json model_type
SUPPORTED = ("BertModel",)
POOLING = ("cls", "max", "mean", "mean_sqrt_len")       # sentence-transformers' concat order
_ACTS = {"gelu": "none", "gelu_new": "tanh", "gelu_pytorch_tanh": "tanh",
         "gelu_python": "none", "relu": None}


def _err(cls, fn, arg, expected, got):
    return cls(f"ruda.nn.models.{fn}: {arg}: expected {expected}, got {got}")


class Config:
    """The fields of a BERT config.json that the forward pass reads."""

    def __init__(self, config):
        arch = config.get("model_type")
        if arch not in ARCHITECTURES:
            raise _err(ValueError, "load", "config.json model_type",
                       f"one of the supported architectures {', '.join(SUPPORTED)}", repr(arch))
        try:
            self.hidden = int(config["hidden_size"])
            self.layers = int(config["num_hidden_layers"])
            self.heads = int(config["num_attention_heads"])
            self.intermediate = int(config["intermediate_size"])
            self.vocab = int(config["vocab_size"])
        except KeyError as e:
            raise _err(ValueError, "load", "config.json", f"a {e.args[0]!r} entry",
                       "none") from None
        if self.hidden % self.heads:
            raise _err(ValueError, "load", "config.json num_attention_heads",
                       f"a divisor of hidden_size={self.hidden}", self.heads)
        self.head_dim = self.hidden // self.heads
        self.max_positions = int(config.get("max_position_embeddings", 512))
        self.type_vocab = int(config.get("type_vocab_size", 2))
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        act = config.get("hidden_act", "gelu")
        if act not in _ACTS:
            raise _err(ValueError, "load", "config.json hidden_act", f"one of {sorted(_ACTS)}",
                       repr(act))
        self.act = act
        pet = config.get("position_embedding_type", "absolute")
        if pet != "absolute":
            raise _err(ValueError, "load", "config.json position_embedding_type", "'absolute'",
                       repr(pet))


def expected_shapes(cfg):
    """{tensor name: shape} of every weight the encoder reads (no prefix)."""
    H, F = cfg.hidden, cfg.intermediate
    out = {"embeddings.word_embeddings.weight": (cfg.vocab, H),
           "embeddings.position_embeddings.weight": (cfg.max_positions, H),
           "embeddings.token_type_embeddings.weight": (cfg.type_vocab, H),
           "embeddings.LayerNorm.weight": (H,), "embeddings.LayerNorm.bias": (H,)}
    for i in range(cfg.layers):
        p = f"encoder.layer.{i}."
        for n in ("query", "key", "value"):
            out[p + f"attention.self.{n}.weight"] = (H, H)
            out[p + f"attention.self.{n}.bias"] = (H,)
        out.update({p + "attention.output.dense.weight": (H, H),
                    p + "attention.output.dense.bias": (H,),
                    p + "attention.output.LayerNorm.weight": (H,),
                    p + "attention.output.LayerNorm.bias": (H,),
                    p + "intermediate.dense.weight": (F, H), p + "intermediate.dense.bias": (F,),
                    p + "output.dense.weight": (H, F), p + "output.dense.bias": (H,),
                    p + "output.LayerNorm.weight": (H,), p + "output.LayerNorm.bias": (H,)})
    return out


def _strip_prefix(weights):
    """Names without the ``bert.`` prefix that BertFor* checkpoints carry."""
    if "embeddings.word_embeddings.weight" in weights:
        return dict(weights)
    return {k[5:]: v for k, v in weights.items() if k.startswith("bert.")}


def _pooling_modes(pooling):
    """The pooling modes of a 1_Pooling/config.json dict, in sentence-transformers' order
    (mean when there is none: what sentence-transformers does for a plain BERT)."""
    if pooling is None:
        return ("mean",)
    modes = tuple(m for m in POOLING if pooling.get(f"pooling_mode_{m}_tokens")
                  or (m == "cls" and pooling.get("pooling_mode_cls_token")))
    other = [k for k, v in pooling.items() if k.startswith("pooling_mode_") and v
             and k not in ("pooling_mode_cls_token",)
             and k[len("pooling_mode_"):-len("_tokens")] not in POOLING]
    if other or not modes:
        raise _err(ValueError, "load", "1_Pooling/config.json",
                   f"pooling modes among {', '.join(POOLING)}",
                   ", ".join(other) if other else "none")
    return modes


class Bert:
    """A BERT encoder with pooling: ``forward(ids, mask)`` gives the last hidden states,
    ``encode(sentences)`` pooled (and normalized) sentence embeddings.

    The q/k/v projections are concatenated once at load (one matmul per layer)."""

    def __init__(self, config, weights, tokenizer=None, pooling=None, normalize=False,
                 max_length=None, device=None, dtype=None):
        self.config = config
        self.cfg = cfg = Config(config)
        w = _strip_prefix(weights)
        for name, shape in expected_shapes(cfg).items():
            if name not in w:
                raise _err(ValueError, "load", "weights", f"a tensor {name!r} of shape {shape}",
                           "none")
            _hf.expect_shape(name, w[name], shape)
        first = w["embeddings.word_embeddings.weight"]
        self.device = first.device if device is None else xp.device(device) \
            if isinstance(device, str) else device
        self.dtype = dtype or (first.dtype if isinstance(first, xp.Array) else xp.float32)
        self.pooling = _pooling_modes(pooling)
        self.normalize = bool(normalize)
        self.tokenizer = tokenizer
        self.max_length = min(int(max_length or cfg.max_positions), cfg.max_positions)
        self.word = first
        self.position = w["embeddings.position_embeddings.weight"]
        self.token_type = w["embeddings.token_type_embeddings.weight"]
        self.emb_norm = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers = []
        for i in range(cfg.layers):
            p = f"encoder.layer.{i}."
            qkv = [w[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")]
            qkv_b = [w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")]
            fuse = all(isinstance(t, xp.Array) for t in qkv)
            self.layers.append({
                "qkv": xp.concat(qkv, axis=0) if fuse else qkv,
                "qkv_b": xp.concat(qkv_b, axis=0) if fuse else qkv_b,
                "o": w[p + "attention.output.dense.weight"],
                "o_b": w[p + "attention.output.dense.bias"],
                "ln1": (w[p + "attention.output.LayerNorm.weight"],
                        w[p + "attention.output.LayerNorm.bias"]),
                "up": w[p + "intermediate.dense.weight"], "up_b": w[p + "intermediate.dense.bias"],
                "down": w[p + "output.dense.weight"], "down_b": w[p + "output.dense.bias"],
                "ln2": (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])})

    # -------------------------------------------------------------------------------------
    def _act(self, x):
        a = _ACTS[self.cfg.act]
        return nn.relu(x) if a is None else nn.gelu(x, approximate=a)

    def _attention(self, L, x, mask, B, T):
        cfg = self.cfg
        H, D, nh = cfg.hidden, cfg.head_dim, cfg.heads
        if isinstance(L["qkv"], xp.Array):
            qkv = nn.linear(x, L["qkv"], L["qkv_b"])
            q, k, v = qkv[:, :H], qkv[:, H:2 * H], qkv[:, 2 * H:]
        else:
            q, k, v = (nn.linear(x, wt, b) for wt, b in zip(L["qkv"], L["qkv_b"]))
        q, k, v = (xp.permute_dims(xp.reshape(t, (B, T, nh, D)), (0, 2, 1, 3)) for t in (q, k, v))
        o = nn.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        o = xp.reshape(xp.permute_dims(o, (0, 2, 1, 3)), (B * T, H))
        return nn.linear(o, L["o"], L["o_b"])

    def forward(self, ids, attention_mask=None, token_type_ids=None):
        """Last hidden states (B, T, hidden) for int token ids (B, T); ``attention_mask``
        (B, T), nonzero or True at real tokens (None: all real); ``token_type_ids`` (B, T) or
        None (all 0)."""
        fn = "Bert.forward"
        cfg = self.cfg
        if not isinstance(ids, xp.Array) or ids.ndim != 2:
            raise _err(ValueError, fn, "ids", "a ruda array of shape (B, T)",
                       getattr(ids, "shape", type(ids).__name__))
        if ids.device != self.device:
            raise _err(ValueError, fn, "ids", f"the model's device {self.device}", ids.device)
        B, T = ids.shape
        if T > cfg.max_positions:
            raise _err(ValueError, fn, "ids", f"at most {cfg.max_positions} positions", T)
        dev = self.device
        pos = xp.arange(T, dtype=xp.int32, device=dev)
        types = xp.zeros((B, T), dtype=xp.int32, device=dev) if token_type_ids is None \
            else token_type_ids
        x = nn.embedding(ids, self.word) + nn.embedding(pos, self.position) \
            + nn.embedding(types, self.token_type)
        if x.dtype != self.dtype:
            x = xp.astype(x, self.dtype)
        x = nn.layer_norm(x, (cfg.hidden,), *self.emb_norm, eps=cfg.eps)
        mask = None
        if attention_mask is not None:
            if tuple(attention_mask.shape) != (B, T):
                raise _err(ValueError, fn, "attention_mask", f"shape {(B, T)}",
                           attention_mask.shape)
            keep = attention_mask if attention_mask.dtype == xp.bool else attention_mask != 0
            mask = xp.reshape(keep, (B, 1, 1, T))
        # hidden states as (B*T, hidden) rows: one 2-D matmul per projection (NumPy runs a
        # 3-D @ transposed-2-D product as a slow batched loop)
        x = xp.reshape(x, (B * T, cfg.hidden))
        for L in self.layers:
            x = nn.layer_norm(x + self._attention(L, x, mask, B, T), (cfg.hidden,), *L["ln1"],
                              eps=cfg.eps)
            h = self._act(nn.linear(x, L["up"], L["up_b"]))
            x = nn.layer_norm(x + nn.linear(h, L["down"], L["down_b"]), (cfg.hidden,),
                              *L["ln2"], eps=cfg.eps)
        return xp.reshape(x, (B, T, cfg.hidden))

    def pool(self, hidden, attention_mask):
        """Sentence embeddings (B, hidden * len(modes)) from hidden states (B, T, hidden) and
        the (B, T) mask, by the model's pooling modes (concatenated as sentence-transformers)."""
        m = xp.astype(attention_mask != 0, hidden.dtype)[..., None]          # (B, T, 1)
        out = []
        for mode in self.pooling:
            if mode == "cls":
                out.append(hidden[:, 0, :])
            elif mode == "max":
                out.append(xp.max(xp.where(m > 0, hidden, -1e9), axis=1))
            else:
                n = xp.maximum(xp.sum(m, axis=1), 1e-9)
                s = xp.sum(hidden * m, axis=1)
                out.append(s / n if mode == "mean" else s / xp.sqrt(n))
        return out[0] if len(out) == 1 else xp.concat(out, axis=-1)

    def _tokenize(self, batch):
        enc = self.tokenizer.encode_batch(batch)
        ids = np.asarray([e.ids for e in enc], dtype=np.int32)
        mask = np.asarray([e.attention_mask for e in enc], dtype=np.int32)
        types = np.asarray([e.type_ids for e in enc], dtype=np.int32)
        return tuple(xp.asarray(a, device=self.device) for a in (ids, mask, types))

    def encode(self, sentences, normalize=None, batch_size=32):
        """Embeddings (n, dim) on the model's device for a list of strings (or one string:
        shape (dim,)). ``normalize``: None follows the model (a Normalize module in
        modules.json), True/False force unit length or not. Sentences are batched by length
        (padding and truncation through the tokenizer) and returned in the input order."""
        fn = "Bert.encode"
        if self.tokenizer is None:
            raise _err(ValueError, fn, "model", "a tokenizer (tokenizer.json)", "none")
        single = isinstance(sentences, str)
        want = "a string or a list of strings"
        if not single and (isinstance(sentences, (bytes, bytearray, dict))
                           or not hasattr(sentences, "__iter__")):
            raise _err(TypeError, fn, "sentences", want, type(sentences).__name__)
        items = [sentences] if single else list(sentences)
        for i, s in enumerate(items):
            if not isinstance(s, str):
                raise _err(TypeError, fn, "sentences", want, f"{type(s).__name__} at index {i}")
        batch_size = count("models." + fn, "batch_size", batch_size)
        if not items:
            return xp.zeros((0, self.cfg.hidden * len(self.pooling)), dtype=self.dtype,
                            device=self.device)
        order = sorted(range(len(items)), key=lambda i: -len(items[i]))
        parts = []
        for s in range(0, len(items), batch_size):
            ids, mask, types = self._tokenize([items[i] for i in order[s:s + batch_size]])
            parts.append(self.pool(self.forward(ids, mask, types), mask))
        emb = parts[0] if len(parts) == 1 else xp.concat(parts, axis=0)
        inverse = np.empty(len(order), dtype=np.int32)
        inverse[order] = np.arange(len(order), dtype=np.int32)
        emb = xp.take(emb, xp.asarray(inverse, device=self.device), axis=0)
        if self.normalize if normalize is None else normalize:
            emb = nn.normalize(emb, axis=-1)
        return emb[0] if single else emb


def _modules(path):
    """(pooling directory, normalize) from modules.json (defaults: 1_Pooling, no Normalize)."""
    mods = _hf.read_json(path, "modules.json", expect=list)
    pool_dir, norm = "1_Pooling", False
    for m in mods or ():
        t = str(m.get("type", "")) if isinstance(m, dict) else ""
        if t.endswith(".Pooling"):
            pool_dir = str(m.get("path") or pool_dir)
        elif t.endswith(".Normalize"):
            norm = True
    return pool_dir, norm


def load(path, device=None, dtype=None):
    """The encoder in the Hugging Face / sentence-transformers directory ``path``."""
    p = _hf.fspath("load", path)
    dtype = _hf.float_dtype("load", dtype)
    config = _hf.read_config(p)
    Config(config)                             # an unsupported model before reading weights
    weights = _hf.load_safetensors(p, device, dtype, skip=("position_ids",))
    tok = _hf.load_tokenizer(p) if os.path.isfile(os.path.join(p, "tokenizer.json")) else None
    pool_dir, norm = _modules(p)
    pooling = _hf.read_json(p, os.path.join(pool_dir, "config.json"))
    st = _hf.read_json(p, "sentence_bert_config.json") or {}
    tc = _hf.read_json(p, "tokenizer_config.json") or {}
    max_length = st.get("max_seq_length") or tc.get("model_max_length")
    if max_length is not None and (not isinstance(max_length, (int, float))
                                   or not math.isfinite(max_length) or max_length > 1e9):
        max_length = None
    model = Bert(config, weights, tok, pooling, norm, max_length, device, dtype)
    if tok is not None:
        pad = tok.token_to_id(tc.get("pad_token", "[PAD]"))
        tok.enable_padding(pad_id=0 if pad is None else pad,
                           pad_token=tc.get("pad_token", "[PAD]"))
        tok.enable_truncation(model.max_length)
    return model
