"""GGUF files (llama.cpp) to Hugging Face-style config, weights and tokenizer.

``load_gguf(path, device, dtype=None, quantized=True)`` reads the file memory-mapped
(``_gguf_file.GGUFFile``: the header parsed with struct; the gguf package's type tables and
dequantizers): float tensors go to the device straight from the mapped view,
Q8_0/Q4_0/Q4_1 tensors are split into a ``ruda.nn.QuantizedWeight``'s arrays (or dequantized
when ``quantized=False``), every other type is dequantized by the gguf package. Tensor names and
config keys are transformers'; the row permutation llama.cpp's converter applies to Llama's q
and k projections is undone. The tokenizer is rebuilt from the file's vocabulary and merges as
transformers builds it for a GGUF file (byte-level BPE for ``tokenizer.ggml.model == "gpt2"``).
"""
import os
import struct

import numpy as np

import ruda as xp
from ruda.nn import QuantizedWeight

FN = "ruda.nn.models.load_gguf"

# general.architecture -> (transformers model_type, architectures entry, q/k rows permuted)
_ARCHS = {"llama": ("llama", "LlamaForCausalLM", True),
          "mistral": ("mistral", "MistralForCausalLM", True),
          "qwen2": ("qwen2", "Qwen2ForCausalLM", False),
          "qwen3": ("qwen3", "Qwen3ForCausalLM", False)}

_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
_BLOCK_NAMES = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
                "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
                "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
                "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
                "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}

# pre-tokenizer splits for tokenizer.ggml.pre values (transformers' table); others: GPT-2's
_LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_SPLITS = {"llama3": _LLAMA3_SPLIT, "llama-v3": _LLAMA3_SPLIT, "llama-bpe": _LLAMA3_SPLIT,
           "smaug-bpe": _LLAMA3_SPLIT, "dbrx": _LLAMA3_SPLIT, "qwen2": _QWEN2_SPLIT,
           "deepseek-r1-qwen": _QWEN2_SPLIT}


def _err(cls, arg, expected, got):
    return cls(f"{FN}: {arg}: expected {expected}, got {got}")


def _field(reader, key, default=None):
    return reader.fields.get(key, default)


def _hf_name(name):
    """transformers' name of GGUF tensor ``name`` (None for tensors the models do not read)."""
    base, _, kind = name.rpartition(".")
    if kind not in ("weight", "bias"):
        return None
    if base in _NAMES:
        return f"{_NAMES[base]}.{kind}"
    parts = base.split(".")
    if len(parts) == 3 and parts[0] == "blk" and parts[2] in _BLOCK_NAMES:
        return f"model.layers.{parts[1]}.{_BLOCK_NAMES[parts[2]]}.{kind}"
    return None


def read_config(reader):
    """The transformers config.json dict of a GGUF file's metadata."""
    arch = _field(reader, "general.architecture")
    if arch not in _ARCHS:
        raise _err(ValueError, "general.architecture",
                   f"one of {', '.join(sorted(_ARCHS))}", repr(arch))
    model_type, cls, _ = _ARCHS[arch]

    def get(key, default=None):
        return _field(reader, f"{arch}.{key}", default)

    try:
        heads = int(get("attention.head_count"))
        cfg = {"architectures": [cls], "model_type": model_type,
               "hidden_size": int(get("embedding_length")),
               "intermediate_size": int(get("feed_forward_length")),
               "num_hidden_layers": int(get("block_count")),
               "num_attention_heads": heads,
               "num_key_value_heads": int(get("attention.head_count_kv", heads)),
               "max_position_embeddings": int(get("context_length", 4096)),
               "rms_norm_eps": float(get("attention.layer_norm_rms_epsilon", 1e-6)),
               "rope_theta": float(get("rope.freq_base", 10000.0)),
               "hidden_act": "silu"}
    except TypeError:
        raise _err(ValueError, f"{arch}.* metadata", "embedding_length, feed_forward_length, "
                   "block_count and attention.head_count", "a file missing some") from None
    tokens = reader.fields.get("tokenizer.ggml.tokens")
    vocab = get("vocab_size") or (len(tokens) if tokens is not None else None)
    if vocab is None:
        emb = [t for t in reader.tensors if t.name == "token_embd.weight"]
        vocab = int(emb[0].shape[-1]) if emb else None
    cfg["vocab_size"] = int(vocab)
    key_len = get("attention.key_length")
    if key_len is not None and int(key_len) != cfg["hidden_size"] // heads:
        cfg["head_dim"] = int(key_len)
    scaling = get("rope.scaling.type")
    if scaling in ("linear", "yarn"):
        cfg["rope_scaling"] = {"rope_type": scaling, "factor": float(get("rope.scaling.factor"))}
        orig = get("rope.scaling.original_context_length")
        if orig:
            cfg["rope_scaling"]["original_max_position_embeddings"] = int(orig)
    window = get("attention.sliding_window")
    if window:
        cfg["sliding_window"] = int(window)
    names = {t.name for t in reader.tensors}
    cfg["tie_word_embeddings"] = "output.weight" not in names
    cfg["attention_bias"] = "blk.0.attn_q.bias" in names
    for tok in ("bos", "eos", "padding"):
        v = _field(reader, f"tokenizer.ggml.{tok}_token_id")
        if v is not None:
            cfg[f"{'pad' if tok == 'padding' else tok}_token_id"] = int(v)
    return cfg


def _unpermute(a, heads):
    """Rows of a q/k projection (or its bias) back from llama.cpp's rotary-pair order."""
    n = a.shape[0]
    idx = np.arange(n).reshape(heads, n // heads // 2, 2).swapaxes(1, 2).reshape(-1)
    return a[idx]


def split_blocks(kind, raw):
    """(q, scales, mins) host arrays of GGML ``kind`` blocks, raw uint8 (rows, blocks * size)."""
    rows = raw.shape[0] if raw.ndim == 2 else 1
    size = {"q8_0": 34, "q4_0": 18, "q4_1": 20}[kind]
    b = np.asarray(raw).reshape(rows, -1, size)
    d = np.ascontiguousarray(b[:, :, 0:2]).view(np.float16)[..., 0].astype(np.float32)
    if kind == "q8_0":
        return np.ascontiguousarray(b[:, :, 2:]).view(np.int8).reshape(rows, -1), d, None
    start = 4 if kind == "q4_1" else 2
    m = np.ascontiguousarray(b[:, :, 2:4]).view(np.float16)[..., 0].astype(np.float32) \
        if kind == "q4_1" else None
    return np.ascontiguousarray(b[:, :, start:]).reshape(rows, -1), d, m


_QUANT = ("Q8_0", "Q4_0", "Q4_1")
_FLOAT = ("F32", "F16", "BF16", "F64")


def _host_array(t):
    """A float host array of tensor t in its row-major shape (a view of the mapping for float
    types; the gguf package's dequantize for everything else)."""
    name = t.tensor_type.name
    shape = tuple(int(s) for s in reversed(t.shape))
    if name in _FLOAT:
        a = np.asarray(t.data)
        if name == "BF16":
            import ml_dtypes
            a = a.view(ml_dtypes.bfloat16)
        return a.reshape(shape)
    from gguf.quants import dequantize
    return dequantize(np.asarray(t.data), t.tensor_type).reshape(shape)


def _to_device(a, device, dtype):
    """Host array a on device, cast to dtype (float32 for a float16 file tensor) on the host,
    where the device may lack a's dtype."""
    if dtype is None and a.dtype == np.float16:
        dtype = xp.float32
    return xp.asarray(a, dtype=dtype, device=device)


def load_weights(reader, config, device, dtype=None, quantized=True):
    """{transformers name: ruda array or QuantizedWeight} of every tensor the models read."""
    permute = _ARCHS[config["model_type"]][2] if config["model_type"] in _ARCHS else False
    heads = {"q_proj": config["num_attention_heads"], "k_proj": config["num_key_value_heads"]}
    out = {}
    for t in reader.tensors:
        name = _hf_name(t.name)
        if name is None:
            continue
        proj = name.split(".")[-2]
        perm = heads.get(proj) if permute else None
        if quantized and t.tensor_type.name in _QUANT and len(t.shape) == 2:
            kind = t.tensor_type.name.lower()
            q, d, m = split_blocks(kind, t.data)
            if perm:
                q, d, m = (None if a is None else _unpermute(a, perm) for a in (q, d, m))
            out[name] = QuantizedWeight(kind, xp.asarray(q, device=device),
                                        xp.asarray(d, device=device),
                                        None if m is None else xp.asarray(m, device=device))
            continue
        a = _host_array(t)
        if perm:
            a = _unpermute(a, perm)
        out[name] = _to_device(a, device, dtype)
    return out


def _byte_level_vocab(tokens):
    """Token -> id, spelling tokens outside GPT-2's byte alphabet in it (as transformers)."""
    spell = _bytes_to_unicode()
    alphabet = set(spell.values())
    vocab = {}
    for i, tok in enumerate(tokens):
        if not set(tok) <= alphabet:
            tok = "".join(spell[b] for b in tok.encode("utf-8"))
        vocab.setdefault(tok, i)
    return vocab


def _bytes_to_unicode():
    """GPT-2's byte -> printable character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def read_tokenizer(reader):
    """(tokenizers.Tokenizer, tokenizer_config dict) from the file's vocabulary and merges."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers
    from tokenizers import processors
    kind = _field(reader, "tokenizer.ggml.model")
    if kind is None:
        return None, {}
    if kind != "gpt2":
        raise _err(ValueError, "tokenizer.ggml.model", "'gpt2' (byte-level BPE)", repr(kind))
    tokens = _field(reader, "tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges", [])]
    types = _field(reader, "tokenizer.ggml.token_type") or [1] * len(tokens)
    tok = Tokenizer(models.BPE(_byte_level_vocab(tokens), merges, fuse_unk=False))
    split = _SPLITS.get(_field(reader, "tokenizer.ggml.pre"))
    if split is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(split), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    alphabet = set(_bytes_to_unicode().values())
    # control tokens (type 3) whole and special; user-defined ones (type 4) whole, not special
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True)
                            for t, ty in zip(tokens, types) if ty == 3 and set(t) <= alphabet])
    tok.add_tokens([AddedToken(t, normalized=False, special=False)
                    for t, ty in zip(tokens, types) if ty == 4])

    def special(key):
        v = _field(reader, f"tokenizer.ggml.{key}")
        return tokens[int(v)] if v is not None and 0 <= int(v) < len(tokens) else None

    tc = {"chat_template": _field(reader, "tokenizer.chat_template"),
          "bos_token": special("bos_token_id"), "eos_token": special("eos_token_id"),
          "unk_token": special("unknown_token_id"), "pad_token": special("padding_token_id"),
          "add_bos_token": bool(_field(reader, "tokenizer.ggml.add_bos_token", False)),
          "add_eos_token": bool(_field(reader, "tokenizer.ggml.add_eos_token", False))}
    single = (["$bos"] if tc["add_bos_token"] and tc["bos_token"] else []) + ["$A"] \
        + (["$eos"] if tc["add_eos_token"] and tc["eos_token"] else [])
    if len(single) > 1:
        ids = {"$bos": tc["bos_token"], "$eos": tc["eos_token"]}
        tok.post_processor = processors.TemplateProcessing(
            single=" ".join(s if s == "$A" else ids[s] for s in single),
            special_tokens=[(ids[s], tok.token_to_id(ids[s])) for s in single if s != "$A"])
    return tok, tc


def load_gguf(path, device=None, dtype=None, quantized=True):
    """(config, weights, tokenizer, tokenizer_config) of the GGUF file ``path``.

    ``weights``: transformers tensor names; Q8_0/Q4_0/Q4_1 matrices as
    ``ruda.nn.QuantizedWeight`` when ``quantized``, else (and every other type) float arrays of
    ``dtype`` (default float32; float tensors of the file keep their dtype)."""
    from ruda.nn.models import _hf
    from ruda.nn.models._gguf_file import GGUFFile
    p = _hf.fspath("load_gguf", path, "a .gguf file")
    dtype = _hf.float_dtype("load_gguf", dtype)
    _hf.boolean("load_gguf", "quantized", quantized)
    if not os.path.isfile(p):
        raise _err(ValueError, "path", "an existing .gguf file", repr(p))
    try:
        reader = GGUFFile(p)
    except (ValueError, OSError, struct.error, UnicodeDecodeError) as e:
        raise _err(ValueError, "path", "a readable GGUF file", f"{p!r} ({e})") from None
    config = read_config(reader)
    weights = load_weights(reader, config, device, dtype, quantized)
    tokenizer, tc = read_tokenizer(reader)
    return config, weights, tokenizer, tc
